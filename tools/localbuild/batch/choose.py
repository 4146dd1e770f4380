"""The select stage: which configs this run is about (names, globs, --all, the menu, --shard)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from tools.foundation.errors import UserError
from tools.foundation.log import Console
from tools.foundation.selection import describe as describe_configs
from tools.localbuild.batch.preflight import not_buildable
from tools.localbuild.batch.record import FAILED
from tools.localbuild.engines.engine import ContainerEngine
from tools.localbuild.engines.ladder import Chosen
from tools.localbuild.engines.plan import HostFacts
from tools.localbuild.options import ListConfigs, Planned, Selection
from tools.localbuild.records.configs import Config, choose_interactively, discover, select
from tools.localbuild.schedule.facts import read_facts
from tools.localbuild.schedule.shard import choose_shard


def choose(
    mode: Planned,
    console: Console,
    engine: ContainerEngine,
    host: HostFacts,
    label_of: Mapping[str, str] | None = None,
    engine_of_run: Callable[[], Chosen] | None = None,
) -> tuple[str, ...]:
    """The configs named, globbed or --all; else, on a terminal, the one picked from the
    menu, whose marks are the decisions of the engine the run takes (``engine_of_run``, asked
    only when the menu is shown)."""
    selection = mode.selection
    available = discover(mode.build.root)
    selected = select(
        available,
        selection.requested,
        all_configs=selection.all_configs,
        filter_glob=selection.filter_glob,
        label_of=label_of,
    )
    if selected:
        return selected
    pool = select(
        available, (), all_configs=True, filter_glob=selection.filter_glob, label_of=label_of
    )
    if selection.filter_glob:
        console.say(f"filtering for '{selection.filter_glob}.yaml' configs")
    if len(pool) == 1:
        return pool
    if not selection.interactive:
        raise UserError(
            f"{len(pool)} configs match; name one or more (globs work), or use --all "
            "(`--list` shows them)"
        )
    if engine_of_run is not None:
        host = replace(host, builder=engine_of_run().builder)
    marks = _menu_marks(mode, pool, engine, host)
    return (choose_interactively(pool, console.ask, console.say, marks=marks, label_of=label_of),)


def _menu_marks(
    mode: Planned, pool: Sequence[str], engine: ContainerEngine, host: HostFacts
) -> dict[str, str]:
    """Why this machine cannot build a config of the menu, for the ones it cannot: the same
    decision the run makes (planning reads each small variant file, no process starts)."""
    marks = {}
    for name in pool:
        config = Config(name, mode.build.root / ".ci_support" / f"{name}.yaml")
        result = not_buildable(mode.build, config, engine, host, mode.selection.requested)
        if result is None:
            continue
        if result.status == FAILED:
            marks[name] = "damaged: cannot be read, rerender"
        else:  # the reason's first clause; the full one comes if the config is chosen anyway
            marks[name] = result.note.split("; ")[0]
    return marks


def this_shard(
    root: Path, selection: Selection, names: tuple[str, ...], console: Console
) -> tuple[str, ...]:
    shard = selection.shard
    if shard is None:
        return names
    facts = [read_facts(root / ".ci_support" / f"{n}.yaml") for n in names]
    choice = choose_shard(facts, shard, recipe_dir=root / "recipe", durations=selection.durations)
    console.note(choice.describe(shard))
    if not choice.names:
        # Every machine runs the same command, so a machine with no share has done its part
        # (exit 0: its job must not fail); `review merge` later names any config no machine built.
        first, count = choice.selected + 1, shard.count
        idle = f"machine {count}" if first == count else f"machines {first}-{count}"
        console.note(
            f"shard {shard}: nothing to build on this machine: {choice.selected} "
            f"config(s) split over {shard.count} machines leave {idle} without one; "
            f"--shard K/{choice.selected} uses every machine",
        )
    return choice.names


def list_configs(
    mode: ListConfigs, available: Sequence[str], label_of: Mapping[str, str], console: Console
) -> int:
    """--list: names and globs narrow the list as they narrow a build; one that matches
    nothing is the same error (with the closest names) as for a build."""
    selection = mode.selection
    pool = select(
        available,
        selection.requested,
        all_configs=selection.all_configs or not selection.requested,
        filter_glob=selection.filter_glob,
        label_of=label_of,
    )
    for line in describe_configs(this_shard(mode.root, selection, pool, console), label_of):
        console.say(line)
    return 0
