"""The select stage: which configs this run is about (names, globs, --all, the menu, --shard)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from tools.foundation.errors import UserError
from tools.foundation.selection import describe as describe_configs
from tools.localbuild.batch.preflight import not_buildable
from tools.localbuild.batch.record import FAILED
from tools.localbuild.console import Console
from tools.localbuild.engines.engine import ContainerEngine
from tools.localbuild.engines.ladder import Chosen
from tools.localbuild.engines.plan import HostFacts
from tools.localbuild.options import Options
from tools.localbuild.records.configs import Config, choose_interactively, discover, select
from tools.localbuild.schedule.facts import read_facts
from tools.localbuild.schedule.shard import choose_shard


def choose(
    options: Options,
    console: Console,
    engine: ContainerEngine,
    host: HostFacts,
    label_of: Mapping[str, str] | None = None,
    engine_of_run: Callable[[], Chosen] | None = None,
) -> tuple[str, ...]:
    """The configs named, globbed or --all; else, on a terminal, the one picked from the
    menu, whose marks are the decisions of the engine the run takes (``engine_of_run``, asked
    only when the menu is shown)."""
    available = discover(options.root)
    selected = select(
        available,
        options.requested,
        all_configs=options.all_configs,
        filter_glob=options.filter_glob,
        label_of=label_of,
    )
    if selected:
        return selected
    pool = select(
        available, (), all_configs=True, filter_glob=options.filter_glob, label_of=label_of
    )
    if options.filter_glob:
        console.say(f"filtering for '{options.filter_glob}.yaml' configs")
    if len(pool) == 1:
        return pool
    if not options.interactive:
        raise UserError(
            f"{len(pool)} configs match; name one or more (globs work), or use --all "
            "(`--list` shows them)"
        )
    if engine_of_run is not None:
        host = replace(host, builder=engine_of_run().builder)
    marks = _menu_marks(options, pool, engine, host)
    return (choose_interactively(pool, console.ask, console.say, marks=marks, label_of=label_of),)


def _menu_marks(
    options: Options, pool: Sequence[str], engine: ContainerEngine, host: HostFacts
) -> dict[str, str]:
    """Why this machine cannot build a config of the menu, for the ones it cannot: the same
    decision the run makes (planning reads each small variant file, no process starts)."""
    marks = {}
    for name in pool:
        config = Config(name, options.root / ".ci_support" / f"{name}.yaml")
        result = not_buildable(options, config, engine, host)
        if result is None:
            continue
        if result.status == FAILED:
            marks[name] = "damaged: cannot be read, rerender"
        else:  # the reason's first clause; the full one comes if the config is chosen anyway
            marks[name] = result.note.split("; ")[0]
    return marks


def this_shard(options: Options, names: tuple[str, ...], console: Console) -> tuple[str, ...]:
    if options.shard is None:
        return names
    facts = [read_facts(options.root / ".ci_support" / f"{n}.yaml") for n in names]
    choice = choose_shard(
        facts, options.shard, recipe_dir=options.root / "recipe", durations=options.durations
    )
    console.note(choice.describe(options.shard))
    if not choice.names:
        # Every machine runs the same command, so a machine with no share has done its part
        # (exit 0: its job must not fail); `review merge` later names any config no machine built.
        first, count = choice.selected + 1, options.shard.count
        idle = f"machine {count}" if first == count else f"machines {first}-{count}"
        console.note(
            f"shard {options.shard}: nothing to build on this machine: {choice.selected} "
            f"config(s) split over {options.shard.count} machines leave {idle} without one; "
            f"--shard K/{choice.selected} uses every machine",
        )
    return choice.names


def list_configs(
    options: Options, available: Sequence[str], label_of: Mapping[str, str], console: Console
) -> int:
    """--list: names and globs narrow the list as they narrow a build; one that matches
    nothing is the same error (with the closest names) as for a build."""
    pool = select(
        available,
        options.requested,
        all_configs=options.all_configs or not options.requested,
        filter_glob=options.filter_glob,
        label_of=label_of,
    )
    for line in describe_configs(this_shard(options, pool, console), label_of):
        console.say(line)
    return 0
