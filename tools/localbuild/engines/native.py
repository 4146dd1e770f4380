"""The native engine (``--native``, ``--engine conda-build``): the conda-build on PATH runs
.scripts/build_steps.sh on this machine, with no container; for Linux and macOS."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

from tools.foundation.errors import UserError
from tools.localbuild.engines.base import BuildPlan, HostFacts, Steps, on_this_machine
from tools.localbuild.engines.engine import ContainerEngine
from tools.localbuild.options import Options
from tools.localbuild.records.configs import Config

INSTEAD = None  # a config it cannot build is refused


def probe_conda_build(env: Mapping[str, str], flag: str = "--engine conda-build") -> None:
    """``flag``: how the person asked for conda-build (``--native`` or ``--engine
    conda-build``), named in the refusal."""
    if shutil.which("conda-build", path=env.get("PATH")) is None:
        raise UserError(
            f"{flag} needs conda-build on PATH: `conda env create -f "
            "environment.yml` then `conda activate pytorch-feedstock-build`"
        )


def probe(config: Config, host: HostFacts) -> str | None:
    if config.os == "win" or host.os == "win":
        return (
            "--native runs .scripts/build_steps.sh, which is for "
            "Linux and macOS; on Windows run the config without --native"
        )
    return None


def plan(options: Options, config: Config, engine: ContainerEngine, host: HostFacts) -> Steps:
    root = options.root
    changes = {
        "FEEDSTOCK_ROOT": str(root),
        "RECIPE_ROOT": str(root / "recipe"),
        "CF_BUILD_NATIVE": "1",
    }
    if options.ccache is not None:
        changes["CCACHE_DIR"] = str(options.ccache)
    return Steps(
        argv=("bash", str(root / ".scripts" / "build_steps.sh")),
        changes=changes,
        script_writes_marker=True,
    )


def describe(plan: BuildPlan, engine: ContainerEngine, rel: Callable[[Path], str]) -> list[str]:
    return on_this_machine(plan)
