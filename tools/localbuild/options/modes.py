"""What one run of build-locally.py does, as data: one frozen record per mode.

The command line names exactly one mode (``command_line.mode_of``); ``cli.run`` matches on
its type.  A mode holds only what it reads: which configs (:class:`Selection`), how each
one builds (:class:`Options`, what the engines' plans read) and its own switches.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tools.localbuild.schedule.shard import Shard


@dataclass(frozen=True)
class Selection:
    """Which configs: the names and globs given, --all, --filter, the menu, --shard."""

    requested: tuple[str, ...] = ()
    all_configs: bool = False
    filter_glob: str | None = None
    interactive: bool = False  # no config named: a terminal shows the menu
    shard: Shard | None = None  # --shard K/N: this machine's part of the selection
    durations: tuple[Path, ...] = ()  # summary.json files whose durations balance the shards


@dataclass(frozen=True)
class Options:
    """How each config is built: the engine, its inputs, and the environment it sees."""

    root: Path
    env: Mapping[str, str]  # what the build sees: the caller's environment minus secrets
    secrets: tuple[str, ...] = ()  # values to redact wherever output is written
    withheld: tuple[str, ...] = ()  # names of the secret variables the caller had set
    engine: str | None = None  # --engine: docker, conda-build or rattler-build; None: the ladder
    # the flag that forced the engine, as the person typed it (`--native`, `--engine docker`),
    # for the messages about that engine; None: the ladder chose
    engine_flag: str | None = None
    native: bool = False
    ccache: Path | None = None
    channels: tuple[str, ...] = ()  # --channel: replace the config's channel_sources
    source_cache: Path | None = None  # --source-cache: holds the recipe's source archive
    debug: bool = False  # a shell in the set-up build instead of the build (Debug mode)
    output_id: str | None = None  # with debug: the output to debug

    @property
    def artifacts(self) -> Path:
        return self.root / "build_artifacts"


@dataclass(frozen=True)
class FetchSources:
    """--fetch-sources DIR: download the recipe's source archive there, build nothing."""

    root: Path
    into: Path


@dataclass(frozen=True)
class ListConfigs:
    """--list: the selected configs (this shard's with --shard), one `LABEL  NAME` line each."""

    root: Path
    selection: Selection


@dataclass(frozen=True)
class Debug:
    """--debug: set one config's build up and open a shell in it (``build.debug`` is set)."""

    build: Options
    selection: Selection


@dataclass(frozen=True)
class DryRun:
    """--dry-run: every check the build makes, then what would run; nothing started."""

    build: Options
    selection: Selection
    force: bool = False  # a config already done is shown as to be rebuilt


@dataclass(frozen=True)
class Build:
    """The batch: build the selected configs one after another, resumable."""

    build: Options
    selection: Selection
    force: bool = False  # rebuild configs whose done marker exists
    prune: bool = False  # between configs, remove our containers and work folders
    fail_fast: bool = False  # stop at the first failed config


Mode = FetchSources | ListConfigs | Debug | DryRun | Build
#: The modes that plan configs with an engine (select -> plan -> preflight).
Planned = Debug | DryRun | Build
