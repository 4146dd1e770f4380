"""The osx engine: .scripts/run_osx_build.sh on a mac, with no container.  Elsewhere an osx
config goes to the docker engine, which cross-compiles it as conda-smithy does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tools.localbuild.engines.base import BuildPlan, Dispatch, HostFacts, Steps, on_this_machine
from tools.localbuild.engines.engine import ContainerEngine
from tools.localbuild.options import Options
from tools.localbuild.records.configs import Config

# conda-smithy cross-compiles osx configs in the Linux container on non-mac hosts.
INSTEAD: Dispatch = "docker"


def probe(config: Config, host: HostFacts) -> str | None:
    if host.os == "osx":
        return None
    return "run_osx_build.sh runs on a mac, and this machine is not one"


def plan(options: Options, config: Config, engine: ContainerEngine, host: HostFacts) -> Steps:
    return Steps(argv=("bash", str(options.root / ".scripts" / "run_osx_build.sh")))


def describe(plan: BuildPlan, engine: ContainerEngine, rel: Callable[[Path], str]) -> list[str]:
    return on_this_machine(plan)
