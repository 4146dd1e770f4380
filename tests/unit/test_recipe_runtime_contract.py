"""The system libraries build.sh and bld.bat build against reach the user at run time.

Upstream's wheels carry copies of the third-party headers torch's own headers include
(torch/include/pybind11, sleef.h, fmt/). Each `USE_SYSTEM_*` switch the build scripts turn on
replaces such a copy with a conda package, which then only reaches a user's environment if
the output shipping those headers (or the Python code using them) lists it under run.

The switches are read from the build scripts themselves; SYSTEM_LIBRARIES below says, for
each one, which conda package provides it and which output needs it at run time. A switch
the table does not know fails the suite, so a new one cannot slip in unexamined, and the
table's claims about headers are checked against the real 2.13.0 wheel's headers.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import bld_bat
from helpers.build_scripts import build_sh_files

from tools.render.config import RenderedOutput, list_configs, render_config

RECIPE = Path(__file__).resolve().parents[2] / "recipe"
CONFIGS = list_configs()


@dataclass(frozen=True)
class SystemLibrary:
    """What one USE_SYSTEM_* switch takes from conda, and who needs it after the build."""

    packages: tuple[str, ...]
    # The output whose installed files need the package at run time, or None when only the
    # build does (the package is then a host requirement and nothing more).
    needed_by: str | None
    # How torch's installed headers name it (an #include prefix), checked against the wheel.
    include: str
    why: str


SYSTEM_LIBRARIES: dict[str, SystemLibrary] = {
    "USE_SYSTEM_PYBIND11": SystemLibrary(
        packages=("pybind11",),
        needed_by="pytorch",
        include="pybind11/",
        why="torch/extension.h reaches torch/csrc/Exceptions.h, which includes pybind11; "
        "every torch.utils.cpp_extension build compiles it",
    ),
    "USE_SYSTEM_SLEEF": SystemLibrary(
        packages=("sleef",),
        needed_by="libtorch",
        include="sleef.h",
        why="the ATen/cpu/vec headers include sleef.h",
    ),
    "USE_SYSTEM_FMT": SystemLibrary(
        packages=("fmt",),
        needed_by="libtorch",
        include="fmt/",
        why="c10/util/strong_type.h includes fmt",
    ),
    "USE_SYSTEM_NCCL": SystemLibrary(
        packages=("nccl",),
        needed_by="libtorch",
        include="nccl.h",
        why="the c10d headers (NCCLUtils.hpp) include nccl.h",
    ),
    "USE_SYSTEM_EIGEN_INSTALL": SystemLibrary(
        packages=("eigen",),
        needed_by=None,
        include="Eigen/",
        why="only compiled sources use Eigen; no installed header includes it",
    ),
    "USE_SYSTEM_NVTX": SystemLibrary(
        packages=("nvtx-c",),
        needed_by=None,
        include="nvtx3/",
        why="header-only, used by compiled sources; no installed header includes it",
    ),
}

# The build.sh functions that set switches, and the configurations they run for. build.sh
# calls configure_pytorch for every configuration and configure_cuda from it for CUDA ones
# (both in recipe/build_configure.sh). recipe/build_env.txt holds what every configuration
# of both scripts sets.
BUILD_SH_SCOPES = {"configure_pytorch": "all", "configure_cuda": "cuda"}


@dataclass(frozen=True)
class Switch:
    name: str
    script: str  # build.sh or bld.bat
    scope: str  # "all" or "cuda"
    where: str  # the file and line that set it


def _enabled(value: str) -> bool:
    return value.strip().strip('"').upper() in ("1", "ON", "TRUE", "YES")


def build_sh_switches(path: Path) -> Iterator[Switch]:
    """`export USE_SYSTEM_X=1` lines of one of build.sh's files, scoped by the function
    they sit in."""
    function = None
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if match := re.match(r"^(\w+)\(\)\s*\{", line):
            function = match.group(1)
        elif line.startswith("}"):
            function = None
        match = re.match(r"^(\s*)export\s+(USE_SYSTEM_\w+)=(\S+)", line)
        if not match or not _enabled(match.group(3)):
            continue
        indent, name = match.group(1), match.group(2)
        scope = BUILD_SH_SCOPES.get(function or "")
        if scope is None or len(indent) != 4:
            raise AssertionError(
                f"recipe/{path.name}:{number}: {name} is set inside {function or 'no function'}"
                f"{' in a nested block' if scope else ''}; teach BUILD_SH_SCOPES in "
                f"{Path(__file__).name} which configurations that covers"
            )
        yield Switch(name, "build.sh", scope, f"recipe/{path.name}:{number}")


def bld_bat_switches(name: str) -> Iterator[Switch]:
    """`set USE_SYSTEM_X=1` lines of one of bld.bat's files, scoped by the `if (...)` block
    around them."""
    blocks: list[str] = []
    for number, line in enumerate(bld_bat.text(name).splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith(")"):
            blocks.pop()
        if stripped.endswith("("):
            blocks.append(stripped)
        match = re.match(r'^set\s+"?(USE_SYSTEM_\w+)=([^"]*)"?\s*$', stripped, re.IGNORECASE)
        if not match or not _enabled(match.group(2)):
            continue
        switch = match.group(1).upper()
        if not blocks:
            scope = "all"
        elif re.match(r'if not "%cuda_compiler_version%"=="None" \($', blocks[-1]):
            scope = "cuda"
        else:
            raise AssertionError(
                f"recipe/{name}:{number}: {switch} is set inside `{blocks[-1]}`; teach "
                f"bld_bat_switches in {Path(__file__).name} which configurations that covers"
            )
        yield Switch(switch, "bld.bat", scope, f"recipe/{name}:{number}")


def table_switches() -> Iterator[Switch]:
    """USE_SYSTEM_X=1 lines of the table both scripts export for every configuration."""
    for number, line in enumerate(bld_bat.BUILD_ENV.read_text().splitlines(), 1):
        match = re.match(r"(USE_SYSTEM_\w+)=(.*)$", line)
        if match and _enabled(match.group(2)):
            for script in ("build.sh", "bld.bat"):
                yield Switch(
                    match.group(1), script, "all", f"recipe/{bld_bat.BUILD_ENV.name}:{number}"
                )


def all_switches() -> list[Switch]:
    return [
        *(switch for path in build_sh_files() for switch in build_sh_switches(path)),
        *(switch for name in bld_bat.build_files() for switch in bld_bat_switches(name)),
        *table_switches(),
    ]


def package_names(specs: tuple[str, ...]) -> set[str]:
    return {spec.split()[0] for spec in specs}


def is_cuda(outputs: list[RenderedOutput]) -> bool:
    return any(o.variant.get("cuda_compiler_version", "None") != "None" for o in outputs)


def test_the_build_scripts_turn_on_system_pybind11_sleef_and_fmt_everywhere():
    # The parsers must see the switches, or every check below would pass on nothing.
    found = {(s.script, s.name) for s in all_switches() if s.scope == "all"}
    for script in ("build.sh", "bld.bat"):
        for name in ("USE_SYSTEM_PYBIND11", "USE_SYSTEM_SLEEF", "USE_SYSTEM_FMT"):
            assert (script, name) in found


def test_every_system_library_switch_of_the_build_scripts_is_in_the_table():
    unknown = sorted({s.name for s in all_switches()} - set(SYSTEM_LIBRARIES))
    assert not unknown, (
        f"build scripts turn on {unknown}: add each to SYSTEM_LIBRARIES in "
        f"{Path(__file__).name} (its conda package and the output that needs it at run time)"
    )


@pytest.mark.parametrize("config", CONFIGS)
def test_system_libraries_needed_at_run_time_are_run_requirements(config):
    outputs = [o for o in render_config(config) if not o.skip]
    script = "bld.bat" if config.startswith("win") else "build.sh"
    switches = [s for s in all_switches() if s.script == script]
    if not is_cuda(outputs):
        switches = [s for s in switches if s.scope == "all"]
    missing = []
    for switch in switches:
        library = SYSTEM_LIBRARIES[switch.name]
        if library.needed_by is None:
            continue
        needing = [o for o in outputs if o.name == library.needed_by]
        assert needing, f"{config}: no {library.needed_by} output to check {switch.name} on"
        for output in needing:
            absent = set(library.packages) - package_names(output.requirements.get("run", ()))
            missing += [
                f"{output.dist}: {package} ({switch.name} in {switch.where}; {library.why})"
                for package in sorted(absent)
            ]
    assert not missing, "not a run requirement:\n" + "\n".join(missing)


@pytest.mark.parametrize("config", CONFIGS)
def test_system_libraries_the_build_uses_are_host_requirements(config):
    # The other half of USE_SYSTEM_*: the build finds the library in $PREFIX.
    outputs = [o for o in render_config(config) if not o.skip]
    script = "bld.bat" if config.startswith("win") else "build.sh"
    cuda = is_cuda(outputs)
    compiled = [o for o in outputs if o.name in ("libtorch", "pytorch")]
    missing = [
        f"{output.dist}: {package} ({switch.name})"
        for switch in all_switches()
        if switch.script == script and (cuda or switch.scope == "all")
        for package in SYSTEM_LIBRARIES[switch.name].packages
        for output in compiled
        if package not in package_names(output.requirements.get("host", ()))
    ]
    assert not missing, "not a host requirement:\n" + "\n".join(missing)


@pytest.mark.slow
def test_the_table_says_which_libraries_torch_headers_include(torch_wheel):
    """Against upstream's 2.13.0 headers, which still carry the vendored copies."""
    includes: dict[str, set[str]] = {name: set() for name in SYSTEM_LIBRARIES}
    pattern = re.compile(rb'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)
    with zipfile.ZipFile(torch_wheel) as wheel:
        for member in wheel.namelist():
            if not member.startswith("torch/include/") or member.endswith("/"):
                continue
            relative = member[len("torch/include/") :]
            if any(relative.startswith(lib.include) for lib in SYSTEM_LIBRARIES.values()):
                continue  # a vendored copy (pybind11/eigen.h is pybind11's, not torch's)
            targets = [t.decode() for t in pattern.findall(wheel.read(member))]
            for name, library in SYSTEM_LIBRARIES.items():
                if any(target.startswith(library.include) for target in targets):
                    includes[name].add(relative)
    for name, library in SYSTEM_LIBRARIES.items():
        if library.needed_by is None:
            assert not includes[name], f"{name}: {sorted(includes[name])[:3]} include it"
        else:
            assert includes[name], f"{name}: no torch header includes {library.include}"
