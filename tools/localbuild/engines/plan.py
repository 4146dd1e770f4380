"""What exactly runs for one config, as data: the same record drives --dry-run and the build.

The environment contract is conda-smithy's (CONFIG, UPLOAD_PACKAGES=False,
IS_PR_BUILD=True, BUILD_WITH_CONDA_DEBUG, BUILD_OUTPUT_ID, MINIFORGE_HOME), so a
plan works with this repository's .scripts and with freshly rerendered ones.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from tools.foundation.errors import UserError
from tools.foundation.proc import redact
from tools.localbuild.engines import airgap, ccache, embedded
from tools.localbuild.engines.engine import ContainerEngine
from tools.localbuild.engines.ladder import Builder
from tools.localbuild.options import Options
from tools.localbuild.records.artifacts import log_path, marker_path
from tools.localbuild.records.configs import Config, docker_image
from tools.smithy.forge import FALLBACK_DOCKER_IMAGE

Dispatch = Literal["docker", "osx", "win", "native", "embedded"]

FEEDSTOCK_MOUNT = "/home/conda/feedstock_root"
RECIPE_MOUNT = "/home/conda/recipe_root"


@dataclass(frozen=True)
class Mount:
    host: Path
    container: str
    options: str | None  # None: run_docker_build.sh mounts it and picks the options


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
            subdir=embedded.host_subdir(),
            glibc=embedded.host_glibc(),
        )


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


def _dispatch(options: Options, config: Config, host: HostFacts) -> Dispatch:
    if host.builder == "rattler-build":
        embedded.check_buildable(config, host.subdir, host.glibc)
        return "embedded"
    if options.native or host.builder == "conda-build":
        if config.os == "win" or host.os == "win":
            raise UserError(
                f"{config.name}: --native runs .scripts/build_steps.sh, which is for "
                "Linux and macOS; on Windows run the config without --native"
            )
        return "native"
    if config.os == "linux":
        return "docker"
    if config.os == "osx":
        # conda-smithy cross-compiles osx configs in the Linux container on non-mac hosts.
        return "osx" if host.os == "osx" else "docker"
    if config.os == "win":
        if host.os != "win":
            raise UserError(
                f"{config.name}: Windows configs build only on Windows "
                "(.scripts/run_win_build.bat); leave them out with --filter"
            )
        return "win"
    raise UserError(
        f"{config.name}: cannot tell the platform from the name (linux_*, osx_*, win_*)"
    )


def container_name(config: str, pid: int) -> str:
    digest = hashlib.sha256(config.encode()).hexdigest()[:10]
    return f"build-locally-{digest}-{pid}"


def volume_options(engine: ContainerEngine, host: HostFacts) -> str:
    # `,z` relabels for SELinux; rootless podman refuses to relabel where SELinux is
    # off, so podman only gets it when enforcing (as conda-smithy's script decides).
    if engine.name == "podman" and not host.selinux_enforcing:
        return "rw"
    return "rw,z"


def plan_build(
    options: Options,
    config: Config,
    engine: ContainerEngine,
    host: HostFacts,
    *,
    index: int = 1,
    total: int = 1,
) -> BuildPlan:
    dispatch = _dispatch(options, config, host)
    # Whether the SDK is downloaded on a mac or inside the Linux container, setting
    # OSX_SDK_DIR is how the user accepts Apple's licence (conda-smithy's script refuses
    # osx configs without it).
    if config.os == "osx" and dispatch != "embedded" and not options.env.get("OSX_SDK_DIR"):
        raise UserError(
            f"{config.name}: osx builds need the macOS SDK: run `export OSX_SDK_DIR=$PWD/SDKs` "
            "first; doing so means you accept Apple's SDK licence terms"
        )
    root = options.root
    changes: dict[str, str] = {
        "CONFIG": config.name,
        "UPLOAD_PACKAGES": "False",
        "IS_PR_BUILD": "True",
    }
    if options.debug:
        changes["BUILD_WITH_CONDA_DEBUG"] = "1"
    if options.output_id:
        changes["BUILD_OUTPUT_ID"] = options.output_id
    if not options.env.get("MINIFORGE_HOME"):
        changes["MINIFORGE_HOME"] = str(root / "miniforge3")

    mounts: list[Mount] = []
    image = None
    container = None
    if dispatch == "docker":
        vol = volume_options(engine, host)
        mounts = [Mount(root, FEEDSTOCK_MOUNT, None), Mount(root / "recipe", RECIPE_MOUNT, None)]
        image = (
            options.env.get("DOCKER_IMAGE") or docker_image(config.path) or FALLBACK_DOCKER_IMAGE
        )
        container = container_name(config.name, host.pid)
        extra = engine.run_args(container, remove=not options.debug)
        if options.ccache is not None:
            extra += ccache.docker_args(options.ccache, vol)
            mounts.append(Mount(options.ccache, ccache.CONTAINER_DIR, vol))
        user_args = options.env.get("CONDA_FORGE_DOCKER_RUN_ARGS", "").strip()
        changes["CONDA_FORGE_DOCKER_RUN_ARGS"] = " ".join(filter(None, [user_args, *extra]))
        argv: tuple[str, ...] = ("bash", str(root / ".scripts" / "run_docker_build.sh"))
    elif dispatch == "embedded":
        # rattler-build's package cache beside the packages, as build_steps.sh keeps it.
        changes["RATTLER_CACHE_DIR"] = str(options.artifacts / "pkg_cache")
        cuda = embedded.cuda_override(config)
        if cuda is not None:
            changes["CONDA_OVERRIDE_CUDA"] = cuda
        argv = embedded.argv(
            root,
            config,
            host.subdir,
            options.env,
            artifacts=options.artifacts,
            channels=tuple(airgap.channel_url(c, options.artifacts) for c in options.channels),
            source_archive=airgap.cached_archive(root, options.source_cache),
            ccache=None
            if options.ccache is None
            else (options.ccache, ccache.stats_file(options.artifacts, config.name)),
        )
    elif dispatch == "native":
        changes.update(
            FEEDSTOCK_ROOT=str(root), RECIPE_ROOT=str(root / "recipe"), CF_BUILD_NATIVE="1"
        )
        if options.ccache is not None:
            changes["CCACHE_DIR"] = str(options.ccache)
        argv = ("bash", str(root / ".scripts" / "build_steps.sh"))
    elif dispatch == "osx":
        argv = ("bash", str(root / ".scripts" / "run_osx_build.sh"))
    else:
        argv = ("cmd", "/D", "/Q", "/C", "CALL .scripts\\run_win_build.bat")

    env = dict(options.env)
    if not options.debug:
        # A stale export in the user's shell must not turn a batch build into a debug shell.
        env.pop("BUILD_WITH_CONDA_DEBUG", None)
        env.pop("BUILD_OUTPUT_ID", None)
    env.update(changes)
    artifacts = options.artifacts
    return BuildPlan(
        config=config.name,
        index=index,
        total=total,
        dispatch=dispatch,
        argv=argv,
        cwd=root,
        env=MappingProxyType(env),
        changes=MappingProxyType(changes),
        withheld=options.withheld,
        image=image,
        mounts=tuple(mounts),
        container=container,
        log=log_path(artifacts, config.name),
        marker=marker_path(artifacts, config.name),
        script_writes_marker=dispatch in ("docker", "native"),
    )


def describe(
    plan: BuildPlan,
    *,
    status: str,
    engine: ContainerEngine,
    secrets: tuple[str, ...],
    label: str = "",
) -> str:
    """The --dry-run text for one config: everything that would run, nothing hidden; headed by
    the config's label, with its long name (the key in every file) on the next line."""

    def rel(path: Path) -> str:
        try:
            return str(path.relative_to(plan.cwd))
        except ValueError:
            return str(path)

    lines = [f"[{plan.index}/{plan.total}] {label or plan.config}: {status}"]
    if label and label != plan.config:
        lines.append(f"  config:  {plan.config}")
    lines += [
        f"  run:     {shlex.join(plan.argv)}",
        f"  cwd:     {plan.cwd}",
    ]
    if plan.dispatch == "docker":
        lines.append(f"  engine:  {engine.name} (DOCKER_EXECUTABLE={engine.executable})")
        lines.append(f"  image:   {plan.image}")
        lines.append(f"  name:    {plan.container}")
        for i, mount in enumerate(plan.mounts):
            head = "  mounts:  " if i == 0 else "           "
            how = mount.options or "by run_docker_build.sh"
            lines.append(f"{head}{mount.host} -> {mount.container} ({how})")
    elif plan.dispatch == "embedded":
        lines.append("  engine:  rattler-build, embedded (py-rattler-build), no container")
        lines.append(f"  recipe:  {rel(Path(plan.argv[plan.argv.index('--recipe') + 1]))}")
    else:
        lines.append(f"  where:   on this machine ({plan.dispatch}), no container")
    for i, (key, value) in enumerate(sorted(plan.changes.items())):
        head = "  env:     " if i == 0 else "           "
        lines.append(f"{head}{key}={redact(value, secrets)}")
    if plan.withheld:
        lines.append(
            f"  withheld: {' '.join(plan.withheld)} (tokens are never forwarded to local builds)"
        )
    lines.append(f"  log:     {rel(plan.log)}")
    lines.append(f"  marker:  {rel(plan.marker)}")
    return "\n".join(lines)
