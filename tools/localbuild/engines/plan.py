"""What exactly runs for one config, as data: the same record drives --dry-run and the build.

The environment contract is conda-smithy's (CONFIG, UPLOAD_PACKAGES=False,
IS_PR_BUILD=True, BUILD_WITH_CONDA_DEBUG, BUILD_OUTPUT_ID, MINIFORGE_HOME), so a
plan works with this repository's .scripts and with freshly rerendered ones.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from types import MappingProxyType

from tools.foundation.errors import UserError
from tools.foundation.proc import redact
from tools.localbuild.engines.base import BuildPlan, HostFacts
from tools.localbuild.engines.engine import ContainerEngine
from tools.localbuild.engines.registry import ENGINES, select
from tools.localbuild.options import Options
from tools.localbuild.records.artifacts import log_path, marker_path
from tools.localbuild.records.configs import Config

__all__ = ["BuildPlan", "HostFacts", "describe", "plan_build"]


def plan_build(
    options: Options,
    config: Config,
    engine: ContainerEngine,
    host: HostFacts,
    *,
    index: int = 1,
    total: int = 1,
) -> BuildPlan:
    dispatch = select(options, config, host)
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

    steps = ENGINES[dispatch].plan(options, config, engine, host)
    changes.update(steps.changes)

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
        argv=steps.argv,
        cwd=root,
        env=MappingProxyType(env),
        changes=MappingProxyType(changes),
        withheld=options.withheld,
        image=steps.image,
        mounts=steps.mounts,
        container=steps.container,
        log=log_path(artifacts, config.name),
        marker=marker_path(artifacts, config.name),
        script_writes_marker=steps.script_writes_marker,
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
    lines += ENGINES[plan.dispatch].describe(plan, engine, rel)
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
