"""Upstream's real Linux wheel through the recipe, all the way to an import (issue 37).

Everything after the compile is the recipe's own: recipe/build.sh's libtorch and pytorch
stages, run by the real engine (py-rattler-build through build-locally.py, as
tests/e2e/test_e2e_real_engine.py runs it) on recipe-v1.yaml against the stand-in channel. Only
the compile is replayed: the source is tests/fixtures/wheel_replay (its README says what
each part stands for), whose install rules lay upstream's 2.13.0 CPU wheel out as PyTorch's
own install rules lay out the build.

Where each check runs:

- the engine's test phase (`rattler-build test` on each package): the test sections of
  recipe-v1.yaml for libtorch and pytorch, as packaged; among them check_torch.py (version,
  BLAS, OpenMP, MKL-DNN, distributed), cmake_test (find_package(Torch) and (ATen) from
  $PREFIX, with and without libtorch_python, built and run) and check_cpp_extension.py.
  They run there only: the same commands on the same packages in a prefix would prove
  nothing more.
- a prefix that py-rattler installs from the packages, as a user's environment: `import
  torch` gives the recipe's version, and the public headers compile against
  $PREFIX/include alone (a check the recipe's tests do not make).
- the feedstock's build_artifacts: `tools check`.

One build (CPU, MKL, as the wheel was built; the wheel's Python), a few minutes: libtorch
alone is 500 MB, copied and packaged as a real one is.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.cache import cached_dir
from helpers.conda_packages import bytecode_outside_site_packages, install, solve
from helpers.e2e_feedstock import REPO, E2EFeedstock
from helpers.recipe_release import current, recorded_commit
from helpers.wheel_replay.support import config_file, replay_feedstock, replay_key

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="builds linux-64 packages"),
]

VERSION = current().version
#: The wheel's Python (this interpreter's), the one the replayed pytorch output is built for.
PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"


@pytest.fixture(scope="module")
def channel(tmp_path_factory) -> Path:
    from helpers.standin_channel.channel import ChannelError, standin_channel

    try:
        return standin_channel([config_file(tmp_path_factory.mktemp("config"))])
    except ChannelError as error:
        pytest.skip(f"no stand-in channel on this machine: {error}")


#: What a build leaves in build_artifacts that is not kept with the packages and logs: the
#: engine's work folders and download caches (gigabytes that nothing after the build reads),
#: its scratch folder and build-locally.py's lock (the pid of a process long gone).
NOT_KEPT = frozenset({"bld", "build_cache", "pkg_cache", "src_cache"}) | {
    ".tmp",
    ".build-locally.lock",
}


def _built(found: Path) -> bool:
    """Whether ``found`` holds both packages, indexed, as a finished build publishes them."""
    names = {p.name.rsplit("-", 2)[0] for p in found.glob("linux-64/*.conda")}
    return names >= {"libtorch", "pytorch"} and (found / "linux-64" / "repodata.json").is_file()


@pytest.fixture(scope="module")
def replay(
    tmp_path_factory, tests_cache_dir: Path, torch_wheel: Path, torch_site: Path, channel: Path
) -> E2EFeedstock:
    """The feedstock, its build_artifacts the packages the replay builds: built once per
    replay_key (a change to the recipe, the toolkit, build-locally.py, the replay's fixtures,
    the stand-in channel, the wheel or the engine is a new key, so a new build) and kept in
    the tests cache; each run copies them in, so everything after the build runs every time."""

    def build(folder: Path) -> None:
        fs = replay_feedstock(tmp_path_factory.mktemp("build"), torch_site, channel)
        result = fs.build()
        logs = sorted(fs.artifacts.glob("*-log.txt"))
        tail = "\n".join(logs[0].read_text().splitlines()[-80:]) if logs else result.stderr
        assert result.returncode == 0, f"build-locally.py {fs.config} failed:\n{tail}"
        for path in fs.artifacts.iterdir():
            if path.name in NOT_KEPT:
                continue
            if path.is_dir():
                shutil.copytree(path, folder / path.name)
            else:
                shutil.copy2(path, folder / path.name)

    key = replay_key(REPO, channel, torch_wheel)
    packages = cached_dir(tests_cache_dir / "wheel-replay" / key, build, _built)
    fs = replay_feedstock(tmp_path_factory.mktemp("replay"), torch_site, channel)
    shutil.copytree(packages, fs.artifacts)
    return fs


@pytest.fixture(scope="module")
def prefix(tmp_path_factory, replay: E2EFeedstock, channel: Path) -> Path:
    """pytorch for the wheel's Python, with the compiler the header check uses."""
    tmp = tmp_path_factory.mktemp("env")
    specs = ["pytorch", f"python {PYTHON}.*", "gcc_linux-64", "gxx_linux-64"]
    return install(solve([replay.artifacts, channel], specs), tmp / "prefix", tmp / "cache")


def run_in(prefix: Path, script: str, cwd: Path, timeout: int = 900):
    """``script`` in bash with the environment activated, as a user's shell has it."""
    activate = f"""
        set -euo pipefail
        export PREFIX='{prefix}' PATH='{prefix}/bin':/usr/bin:/bin
        for script in "$PREFIX"/etc/conda/activate.d/*.sh; do source "$script"; done
    """
    return subprocess.run(
        ["bash", "-c", activate + script],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"HOME": str(cwd)},
        timeout=timeout,
        check=False,
    )


def test_import_torch_in_the_prefix_gives_the_recipes_version(prefix, tmp_path) -> None:
    result = run_in(prefix, 'python -c "import torch; print(torch.__version__)"', tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == VERSION


#: The public headers a C++ or extension user includes first.
TRANSLATION_UNIT = """\
#include <torch/torch.h>
#include <torch/extension.h>
#include <ATen/ATen.h>
int main() { return at::ones({2}).sum().item<int>() == 2 ? 0 : 1; }
"""


def test_public_headers_compile_against_the_prefix_include_alone(prefix, tmp_path) -> None:
    # $PREFIX/include only: libtorch's headers, pybind11's and Python's (the packages'), no
    # site-packages/torch/include. Every header they include must be shipped or provided by
    # a run requirement (issue 37, item 5).
    (tmp_path / "tu.cpp").write_text(TRANSLATION_UNIT)
    include = f"{prefix}/include"
    flags = f"-std=c++17 -I'{include}' -I'{include}/torch/csrc/api/include'"
    flags += f" -I'{include}/python{PYTHON}'"
    result = run_in(prefix, f'"$CXX" {flags} -c tu.cpp -o tu.o', tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
    assert (tmp_path / "tu.o").stat().st_size > 0


#: Findings that come from upstream's build or the stand-ins, not from the recipe's
#: packaging: (check, pattern over path + detail, reason).
NOT_OURS = (
    (
        "elf.needed",
        r"lib(stdc\+\+\.so\.6|gcc_s\.so\.1|gomp\.so\.1) is not in the packages",
        "the compiler stand-ins run the machine's gcc and carry no run_exports on libstdcxx, "
        "libgcc and _openmp_mutex, which conda-forge's compiler packages add",
    ),
    (
        "elf.glibc",
        r"requires GLIBC_2\.28, above GLIBC_2\.17 allowed by c_stdlib_version 2\.17",
        "upstream built the wheel for manylinux_2_28; a conda build compiles against "
        "sysroot_linux-64 2.17",
    ),
    (
        "abi.static-libstdcxx",
        r"defines \d+ libstdc\+\+ symbols \(statically linked\)",
        "upstream's manylinux toolchain (devtoolset) links the parts of libstdc++ newer than "
        "the system's statically; conda-forge's gcc links libstdc++ as a library",
    ),
)


def test_tools_check_passes_on_the_build_artifacts(replay) -> None:
    command = ["check", "build_artifacts", "--config", replay.config, "--json"]
    result = subprocess.run(
        [sys.executable, "-m", "tools", *command],
        cwd=replay.root,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert result.returncode in (0, 1), result.stderr
    findings = json.loads(result.stdout)
    assert {f["check"] for f in findings if f["status"] == "pass"} >= {
        "layout.expected-files", "layout.torch-lib-links", "layout.overlap", "abi.cxx11",
    }  # fmt: skip
    left = [
        f
        for f in findings
        if f["status"] != "pass"
        and not any(
            c == f["check"] and re.search(p, f"{f['path']} {f['detail']}") for c, p, _ in NOT_OURS
        )
    ]
    assert not left, "\n".join(f"{f['check']} {f['path']}: {f['detail']}" for f in left[:20])


#: The checks of the recipe's test sections that a user's prefix would only repeat, as the
#: packaged tests spell them: they run in the engine's test phase, and only there.
RECIPE_CHECKS = {
    "libtorch": ("cmake -S cmake_test", "cmake_test/build/torch_consumer"),
    "pytorch": (
        f"python check_torch.py --version {VERSION} --git-version {recorded_commit()} ",
        "--blas mkl --cuda None",
        "--expect openmp --expect distributed --expect mkldnn",
        "python check_cpp_extension.py",
        "-DWITH_TORCH_PYTHON=ON",
        "torch_python_consumer.make_tensor().tolist() == [0, 1, 2, 3]",
    ),
}


def test_no_package_carries_bytecode_outside_site_packages(replay) -> None:
    # The recipe's helpers' bytecode (info/recipe/__pycache__) and the source's tools/
    # (the tests' source_files) hold the engine's work paths: tests/e2e/test_e2e_real_engine.py.
    found = {
        path.name: stray
        for path in sorted(replay.artifacts.glob("*/*.conda"))
        if (stray := bytecode_outside_site_packages(path))
    }
    assert found == {}


def _package(fs: E2EFeedstock, name: str) -> Path:
    [path] = [p for p in fs.artifacts.glob("linux-64/*.conda") if p.name.rsplit("-", 2)[0] == name]
    return path


@pytest.mark.parametrize("name", sorted(RECIPE_CHECKS))
def test_the_recipes_own_tests_pass_in_the_engines_test_phase(replay, channel, name) -> None:
    # `rattler-build test` on the package: the test sections of recipe-v1.yaml as packaged,
    # in environments the engine solves from the build's channel and the stand-ins; among
    # them RECIPE_CHECKS, which no prefix check repeats. The upstream pytest slice alone is
    # skipped (helpers/wheel_replay/support.py says why).
    import rattler_build

    channels = [replay.artifacts.as_uri(), channel.as_uri()]
    package = rattler_build.Package.from_file(_package(replay, name))
    commands = [
        line
        for test in package.tests
        if isinstance(test, rattler_build.CommandsTest)
        for line in test.to_dict()["script"]["content"]
    ]
    missing = [c for c in RECIPE_CHECKS[name] if not any(c in line for line in commands)]
    assert not missing, f"{name}'s tests no longer run {missing}:\n" + "\n".join(commands)
    for index in range(package.test_count):
        result = package.run_test(index, channel=channels)
        tail = "\n".join("\n".join(map(str, result.output)).splitlines()[-40:])
        assert result.success, f"test {index} of {name}:\n{tail}"
