"""The docker engine: conda-forge's container, started by .scripts/run_docker_build.sh with
docker or podman (engine.py); linux configs, and osx configs cross-compiled where the machine
is not a mac (osx.py hands them here)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path

from tools.foundation.errors import CommandError
from tools.foundation.proc import call
from tools.localbuild.engines import ccache
from tools.localbuild.engines.base import BuildPlan, HostFacts, Mount, Steps
from tools.localbuild.engines.engine import ContainerEngine
from tools.localbuild.options import Options
from tools.localbuild.records.configs import Config, docker_image
from tools.localbuild.records.provenance import engine_version
from tools.smithy.forge import FALLBACK_DOCKER_IMAGE

FEEDSTOCK_MOUNT = "/home/conda/feedstock_root"
RECIPE_MOUNT = "/home/conda/recipe_root"
INSTEAD = None  # a config it cannot build is refused


def probe_container(engine: ContainerEngine, env: Mapping[str, str]) -> str | None:
    """Refuse an engine that does not answer; else its version, as `info` prints it."""
    engine.resolve(env)
    try:
        result = call(
            *engine.info_argv(), env=env, capture=True, check=False, quiet=True, timeout=60
        )
    except CommandError as exc:
        raise engine.not_running(str(exc)) from None
    if result.returncode != 0:
        detail = (result.stderr.strip().splitlines() or [""])[-1]
        raise engine.not_running(detail[:200])
    return engine_version(result.stdout)


def probe(config: Config, host: HostFacts) -> str | None:
    """The container is Linux: it builds linux configs, and cross-compiles osx ones."""
    if config.os in ("linux", "osx"):
        return None
    return f"conda-forge's container builds linux and osx configs, not {config.os} ones"


def container_name(config: str, pid: int) -> str:
    digest = hashlib.sha256(config.encode()).hexdigest()[:10]
    return f"build-locally-{digest}-{pid}"


def volume_options(engine: ContainerEngine, host: HostFacts) -> str:
    # `,z` relabels for SELinux; rootless podman refuses to relabel where SELinux is
    # off, so podman only gets it when enforcing (as conda-smithy's script decides).
    if engine.name == "podman" and not host.selinux_enforcing:
        return "rw"
    return "rw,z"


def plan(options: Options, config: Config, engine: ContainerEngine, host: HostFacts) -> Steps:
    root = options.root
    vol = volume_options(engine, host)
    mounts = [Mount(root, FEEDSTOCK_MOUNT, None), Mount(root / "recipe", RECIPE_MOUNT, None)]
    image = options.env.get("DOCKER_IMAGE") or docker_image(config.path) or FALLBACK_DOCKER_IMAGE
    container = container_name(config.name, host.pid)
    extra = engine.run_args(container, remove=not options.debug)
    if options.ccache is not None:
        extra += ccache.docker_args(options.ccache, vol)
        mounts.append(Mount(options.ccache, ccache.CONTAINER_DIR, vol))
    user_args = options.env.get("CONDA_FORGE_DOCKER_RUN_ARGS", "").strip()
    return Steps(
        argv=("bash", str(root / ".scripts" / "run_docker_build.sh")),
        changes={"CONDA_FORGE_DOCKER_RUN_ARGS": " ".join(filter(None, [user_args, *extra]))},
        image=image,
        mounts=tuple(mounts),
        container=container,
        script_writes_marker=True,
    )


def describe(plan: BuildPlan, engine: ContainerEngine, rel: Callable[[Path], str]) -> list[str]:
    lines = [
        f"  engine:  {engine.name} (DOCKER_EXECUTABLE={engine.executable})",
        f"  image:   {plan.image}",
        f"  name:    {plan.container}",
    ]
    for i, mount in enumerate(plan.mounts):
        head = "  mounts:  " if i == 0 else "           "
        how = mount.options or "by run_docker_build.sh"
        lines.append(f"{head}{mount.host} -> {mount.container} ({how})")
    return lines
