"""What every engine module shares: the machine's facts, the steps an engine plans for one
config, and the whole plan those steps become (plan.py adds what every engine sets)."""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from tools.foundation.errors import UserError

#: The engines of the registry (registry.py), by the name plans and summaries carry.
Dispatch = Literal["docker", "osx", "win", "native", "embedded"]
#: The engines --engine may force, in the ladder's order (options.BUILDERS, ladder.py).
Builder = Literal["docker", "conda-build", "rattler-build"]

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


@dataclass(frozen=True)
class HostFacts:
    """What we ask the machine once; injected so plans are pure."""

    os: Literal["linux", "osx", "win"]
    selinux_enforcing: bool
    pid: int
    subdir: str = ""  # conda's name for this machine's platform: linux-64, osx-arm64, ...
    glibc: str | None = None  # the C library's version, on Linux
    builder: Builder = "docker"  # the engine the ladder chose (engines/ladder.py)

    @classmethod
    def detect(cls) -> HostFacts:
        host = "osx" if sys.platform == "darwin" else "win" if sys.platform == "win32" else "linux"
        try:
            enforcing = Path("/sys/fs/selinux/enforce").read_text().strip() == "1"
        except OSError:
            enforcing = False
        return cls(
            os=host,
            selinux_enforcing=enforcing,
            pid=os.getpid(),
            subdir=host_subdir(),
            glibc=host_glibc(),
        )


@dataclass(frozen=True)
class Mount:
    host: Path
    container: str
    options: str | None  # None: run_docker_build.sh mounts it and picks the options


@dataclass(frozen=True)
class Steps:
    """What one engine runs for one config, before plan.py adds what every engine sets."""

    argv: tuple[str, ...]
    changes: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    image: str | None = None
    mounts: tuple[Mount, ...] = ()
    container: str | None = None
    script_writes_marker: bool = False  # run_docker_build.sh / build_steps.sh touch it


@dataclass(frozen=True)
class BuildPlan:
    config: str
    index: int
    total: int
    dispatch: Dispatch
    argv: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str]  # the complete environment of the build process
    changes: Mapping[str, str]  # what build-locally set on top of the caller's environment
    withheld: tuple[str, ...]  # secret variables present in the caller's environment
    image: str | None
    mounts: tuple[Mount, ...]
    container: str | None
    log: Path
    marker: Path
    script_writes_marker: bool  # run_docker_build.sh / build_steps.sh touch it themselves


def on_this_machine(plan: BuildPlan) -> list[str]:
    """The --dry-run lines of an engine that runs a .scripts file here, with no container."""
    return [f"  where:   on this machine ({plan.dispatch}), no container"]


def v1_recipe(root: Path) -> Path:
    """The v1 recipe the embedded engine builds (as build_steps.sh picks it)."""
    for name in ("recipe.yaml", "recipe-v1.yaml"):
        if (root / "recipe" / name).is_file():
            return root / "recipe" / name
    raise UserError(
        f"{root / 'recipe'}: the embedded engine builds the v1 recipe, and there is neither "
        "recipe.yaml nor recipe-v1.yaml; build with conda-build (--engine docker or "
        "--engine conda-build)"
    )
