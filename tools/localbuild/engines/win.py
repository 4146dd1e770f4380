"""The win engine: .scripts/run_win_build.bat through cmd, on Windows only, with no
container."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tools.localbuild.engines.base import BuildPlan, HostFacts, Steps, on_this_machine
from tools.localbuild.engines.engine import ContainerEngine
from tools.localbuild.options import Options
from tools.localbuild.records.configs import Config

INSTEAD = None  # a config it cannot build is refused


def probe(config: Config, host: HostFacts) -> str | None:
    if host.os == "win":
        return None
    return (
        "Windows configs build only on Windows "
        "(.scripts/run_win_build.bat); leave them out with --filter"
    )


def plan(options: Options, config: Config, engine: ContainerEngine, host: HostFacts) -> Steps:
    return Steps(argv=("cmd", "/D", "/Q", "/C", "CALL .scripts\\run_win_build.bat"))


def describe(plan: BuildPlan, engine: ContainerEngine, rel: Callable[[Path], str]) -> list[str]:
    return on_this_machine(plan)
