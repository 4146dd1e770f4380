"""The embedded engine's side of a plan: which configs it can build on this machine, and the
command that builds one (``python -m tools.localbuild.engines.rattler build ...``).

It builds the v1 recipe (recipe/recipe.yaml once the feedstock is switched, else
recipe/recipe-v1.yaml beside meta.yaml) natively: only configs of this machine's platform,
and a CUDA config only where its CUDA packages can be installed.  The decisions are
.scripts/build_steps.sh's for rattler-build (test mode, package format, package cache), so
the two paths build the same packages.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Mapping
from pathlib import Path

from tools.foundation.errors import UserError
from tools.localbuild.records.configs import Config, read_variant
from tools.localbuild.records.provenance import package_time
from tools.smithy.forge import pkg_format_of, zstd_level_of
from tools.smithy.forge_yml import load_forge_yml

ENGINE_MODULE = "tools.localbuild.engines.rattler"
#: The EXTRA_CB_OPTIONS words the embedded engine understands (build_steps.sh's mapping).
EXTRA_OPTIONS = ("--no-test", "--keep-build", "--no-build-id")

_ARCHES = {"x86_64": "64", "amd64": "64", "aarch64": "aarch64", "arm64": "arm64",
           "ppc64le": "ppc64le"}  # fmt: skip


def host_subdir(system: str | None = None, machine: str | None = None) -> str:
    """This machine's conda platform (linux-64, linux-aarch64, osx-arm64, win-64)."""
    system = system or sys.platform
    machine = (machine or platform.machine()).lower()
    os_name = "osx" if system == "darwin" else "win" if system == "win32" else "linux"
    arch = _ARCHES.get(machine, machine)
    if os_name == "linux" and arch == "arm64":
        arch = "aarch64"
    if os_name == "osx" and arch == "aarch64":
        arch = "arm64"
    return f"{os_name}-{arch}"


def host_glibc() -> str | None:
    """The C library's version on Linux (what the solver calls ``__glibc``), else None."""
    try:
        found = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (AttributeError, ValueError, OSError):
        return None
    name, _, version = found.partition(" ")
    return version if name == "glibc" else None


def _first(variant: Mapping[str, object], key: str) -> str | None:
    value = variant.get(key)
    if isinstance(value, list):
        value = value[0] if value else None
    return None if value is None else str(value)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".") if p.isdigit())


def check_buildable(config: Config, subdir: str, glibc: str | None) -> None:
    """Refuse, with the reason, a config the embedded engine cannot build on this machine."""
    variant = read_variant(config.path)
    target = _first(variant, "target_platform") or config.name.split("_")[0]
    if target != subdir:
        # The first clause says what and why: the menu shows it beside the config.
        raise UserError(
            f"{config.name}: {_a(target)} {target} config, and the embedded engine builds only "
            f"for this machine ({subdir}); {_where_instead(target)}"
        )
    cuda = _first(variant, "cuda_compiler_version")
    needed = _first(variant, "c_stdlib_version")
    cuda_here = cuda not in (None, "None") and subdir.startswith("linux-") and needed
    if cuda_here and (glibc is None or _version(glibc) < _version(needed)):
        raise UserError(
            f"{config.name}: its CUDA {cuda} packages need glibc >= {needed} "
            f"(c_stdlib_version), this machine has {glibc or 'no glibc'}, so they cannot "
            "be installed here; build it in a container (--engine docker)"
        )


def cuda_override(config: Config) -> str | None:
    """CONDA_OVERRIDE_CUDA for a CUDA config, as build_steps.sh exports it: pytorch and
    pytorch-gpu run-depend on ``__cuda``, so the test phase's environment solves only with the
    virtual package present, and a build machine has no GPU to show it."""
    cuda = _first(read_variant(config.path), "cuda_compiler_version")
    return None if cuda in (None, "None") else cuda


def _a(word: str) -> str:
    """The article before a platform name: "an osx-64", "a linux-64"."""
    return "an" if word[:1] in "aeiou" else "a"


def _where_instead(target: str) -> str:
    """Where a config of another platform builds: Windows ones only on Windows
    (.scripts/run_win_build.bat); the others in conda-forge's container too, osx ones
    cross-compiled there with the macOS SDK."""
    if target.startswith("win-"):
        return f"build it on {_a(target)} {target} machine (Windows configs build only on Windows)"
    container = "in a container (--engine docker"
    container += ", with OSX_SDK_DIR)" if target.startswith("osx-") else ")"
    return f"build it on {_a(target)} {target} machine or {container}"


def v1_recipe(root: Path) -> Path:
    """The v1 recipe the engine builds (as build_steps.sh picks it)."""
    for name in ("recipe.yaml", "recipe-v1.yaml"):
        if (root / "recipe" / name).is_file():
            return root / "recipe" / name
    raise UserError(
        f"{root / 'recipe'}: the embedded engine builds the v1 recipe, and there is neither "
        "recipe.yaml nor recipe-v1.yaml; build with conda-build (--engine docker or "
        "--engine conda-build)"
    )


def extra_options(env: Mapping[str, str]) -> tuple[str, list[str]]:
    """EXTRA_CB_OPTIONS in rattler-build's words, as build_steps.sh maps them: the test mode,
    and the options passed on."""
    test, passed = "native", []
    for word in env.get("EXTRA_CB_OPTIONS", "").split():
        if word == "--no-test":
            test = "skip"
        elif word in EXTRA_OPTIONS:
            passed.append(word)
        else:
            raise UserError(
                f"EXTRA_CB_OPTIONS={env['EXTRA_CB_OPTIONS']!r}: {word} is not an option the "
                f"embedded engine takes ({', '.join(EXTRA_OPTIONS)})"
            )
    return test, passed


def package_format(root: Path) -> str:
    """rattler-build's ``--package-format``: conda-forge.yml's ``conda_build`` format and zstd
    level, read as build_steps.sh reads them (the environment does not change them there)."""
    forge = load_forge_yml(root)
    if pkg_format_of(forge) == "1":
        return "tar-bz2"
    return f"conda:{zstd_level_of(forge)}"


def argv(
    root: Path,
    config: Config,
    subdir: str,
    env: Mapping[str, str],
    *,
    artifacts: Path,
    channels: tuple[str, ...],
    source_archive: Path | None,
    ccache: tuple[Path, Path] | None,
) -> tuple[str, ...]:
    """The command that builds ``config`` with the embedded engine, run from ``root``."""
    test, passed = extra_options(env)
    command = [sys.executable, "-m", ENGINE_MODULE, "build"]
    command += ["--recipe", str(v1_recipe(root)), "-m", str(config.path)]
    command += ["--output-dir", str(artifacts)]
    command += ["--build-platform", subdir, "--target-platform", subdir]
    command += ["--test", test, "--package-format", package_format(root), *passed]
    for channel in channels:
        command += ["-c", channel]
    if source_archive is not None:
        command += ["--source-archive", str(source_archive)]
    if ccache is not None:
        # A fixed work folder keeps compile commands, and so cache keys, stable (as in
        # build_steps.sh).
        command += ["--ccache", str(ccache[0]), "--ccache-stats", str(ccache[1])]
        if "--no-build-id" not in command:
            command.append("--no-build-id")
    command += ["--feedstock-license", str(root / "LICENSE.txt")]
    # Every time in the packages is the commit's, so two builds of it agree (repack.py).
    command += ["--timestamp", str(package_time(root, env))]
    return tuple(command)
