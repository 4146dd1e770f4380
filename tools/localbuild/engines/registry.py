"""Every engine, by the name plans carry, and which one builds a config.

Each engine is a module with the same four names: ``probe(config, host)`` (None when it
builds the config on this machine, else why not), ``plan(options, config, engine, host)``
(the steps it runs), ``describe(plan, engine, rel)`` (its --dry-run lines) and ``INSTEAD``
(the engine a config it cannot build goes to, or None: refused).  A new engine is a module
and a line here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Protocol

from tools.foundation.errors import UserError
from tools.localbuild.engines import docker, embedded, native, osx, win
from tools.localbuild.engines.base import Builder, BuildPlan, Dispatch, HostFacts, Steps
from tools.localbuild.engines.engine import ContainerEngine
from tools.localbuild.options import Options
from tools.localbuild.records.configs import Config


class Engine(Protocol):
    INSTEAD: Dispatch | None

    def probe(self, config: Config, host: HostFacts) -> str | None: ...

    def plan(
        self, options: Options, config: Config, engine: ContainerEngine, host: HostFacts
    ) -> Steps: ...

    def describe(
        self, plan: BuildPlan, engine: ContainerEngine, rel: Callable[[Path], str]
    ) -> list[str]: ...


ENGINES: Mapping[Dispatch, Engine] = MappingProxyType(
    {"docker": docker, "osx": osx, "win": win, "native": native, "embedded": embedded}
)
#: The engine the ladder's choice (or --native) builds every config with; None: the one
#: of the config's platform (BY_PLATFORM).
BY_BUILDER: Mapping[Builder, Dispatch | None] = MappingProxyType(
    {"rattler-build": "embedded", "conda-build": "native", "docker": None}
)
#: conda-forge's way for each platform: the container for Linux, the mac's and Windows'
#: own scripts for theirs.
BY_PLATFORM: Mapping[str, Dispatch] = MappingProxyType(
    {"linux": "docker", "osx": "osx", "win": "win"}
)


def select(options: Options, config: Config, host: HostFacts) -> Dispatch:
    """The engine that builds ``config`` here, or a UserError saying why none does."""
    name = BY_BUILDER[host.builder]
    if options.native and name is None:
        name = "native"
    if name is None:
        if config.os not in BY_PLATFORM:
            raise UserError(
                f"{config.name}: cannot tell the platform from the name (linux_*, osx_*, win_*)"
            )
        name = BY_PLATFORM[config.os]
    engine = ENGINES[name]
    why_not = engine.probe(config, host)
    if why_not is None:
        return name
    if engine.INSTEAD is not None:
        return engine.INSTEAD
    raise UserError(f"{config.name}: {why_not}")
