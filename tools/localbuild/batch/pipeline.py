"""The batch, as a pipeline: select -> plan -> run -> record -> report.

Each stage is its own module (choose, preflight, loop, record, summary); this one only
sequences them, one entry per mode (``list_configs``, ``dry_run``, ``debug``, ``build``;
tools/localbuild/cli.py picks it).  The commands that read earlier batches (``python -m tools
review``) are the reviewer's side, ``tools.review``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from tools.foundation.log import Console
from tools.localbuild.batch import choose, loop, preflight, record, summary
from tools.localbuild.engines import ladder
from tools.localbuild.engines.engine import ContainerEngine
from tools.localbuild.engines.offline import airgap
from tools.localbuild.engines.plan import HostFacts
from tools.localbuild.options import Build, Debug, DryRun, ListConfigs, Options, Planned
from tools.localbuild.records import ci_engine, provenance
from tools.localbuild.records.configs import Config, discover, labels


@dataclass(frozen=True)
class _Planned:
    """What select and plan decided, before anything runs."""

    batch: preflight.BatchPlan
    chosen: ladder.Chosen
    checked: preflight.Checked
    engine: ContainerEngine
    label_of: Mapping[str, str]
    available: tuple[str, ...]


def list_configs(mode: ListConfigs, console: Console) -> int:
    """--list: the selected configs, one ``LABEL  NAME`` line each."""
    available = discover(mode.root)
    return choose.list_configs(mode, available, labels(mode.root, available), console)


def dry_run(mode: DryRun, console: Console, host: HostFacts | None = None) -> int:
    """Every check the build makes, then what would run; nothing started."""
    planned = _select_and_plan(mode, console, host)
    if planned is None:
        return 0  # an empty shard; this_shard said so
    return preflight.dry_run(
        mode, planned.batch, planned.engine, console, planned.label_of, planned.chosen.line
    )


def debug(mode: Debug, console: Console, host: HostFacts | None = None) -> int:
    """One config set up, and a shell in it instead of its build."""
    planned = _select_and_plan(mode, console, host)
    if planned is None:
        return 0
    with loop.workspace(mode.build):
        console.note(planned.chosen.line)  # the run's first line, once nothing refused it
        return loop.debug(planned.batch.plans[0])


def build(mode: Build, console: Console, host: HostFacts | None = None) -> int:
    """The batch: run -> record -> report over what select and plan decided."""
    planned = _select_and_plan(mode, console, host)
    if planned is None:
        return 0
    options = mode.build
    with loop.workspace(options):
        console.note(planned.chosen.line)  # the run's first line, once nothing refused it
        started = time.time()
        sources = _provenance(options, planned.batch, planned.chosen, planned.checked)
        if any(p.dirty for p in sources.values()):
            console.note(f"{provenance.DIRTY_WARNING}: commit and package it first for CFEP-03")
        outcome = loop.run_all(  # run
            mode, planned.batch, planned.engine, console, planned.label_of, sources
        )
        files = record.write_records(  # record
            options.root, options.artifacts, outcome.results, started, matrix=planned.available
        )
        return summary.report_run(  # report
            options.root, outcome, files, started, console, planned.label_of
        )


def _select_and_plan(mode: Planned, console: Console, host: HostFacts | None) -> _Planned | None:
    """select -> plan -> preflight, the same for a build, a dry run and a debug shell;
    None when this machine's shard is empty."""
    options = mode.build
    host = host or HostFacts.detect()
    available = discover(options.root)
    label_of = labels(options.root, available)
    engine = ContainerEngine.from_env(options.env)

    # the engine: the ladder's first rung that answers, or the one --engine forces; asked
    # once, after the selection (a mistyped name starts no probe), or before the menu,
    # which marks what this engine cannot build here
    @cache
    def engine_of_run() -> ladder.Chosen:
        return ladder.choose(
            options.engine,  # type: ignore[arg-type]
            engine,
            options.env,
            debug=options.debug,
            flag=options.engine_flag,
        )

    # select
    chosen_names = choose.choose(mode, console, engine, host, label_of, engine_of_run)
    names = choose.this_shard(options.root, mode.selection, chosen_names, console)
    if not names:
        return None
    chosen = engine_of_run()
    # the first line says when this engine is not the one conda-forge's CI builds with
    ci = ci_engine.of_feedstock(options.root)
    chosen = replace(chosen, line=chosen.line + ci_engine.first_line_note(chosen.builder, ci))
    host = replace(host, builder=chosen.builder)
    # plan: everything the run decides or refuses happens here, for --dry-run too; only
    # the containers and builds after it are left out of a dry run.
    configs = [Config(n, options.root / ".ci_support" / f"{n}.yaml") for n in names]
    batch = preflight.plan_all(options, configs, engine, host, mode.selection.requested)
    checked = preflight.preflight(options, batch, chosen, dry_run=isinstance(mode, DryRun))
    return _Planned(batch, chosen, checked, engine, label_of, tuple(available))


def _provenance(
    options: Options,
    batch: preflight.BatchPlan,
    chosen: ladder.Chosen,
    checked: preflight.Checked,
) -> dict[str, provenance.Provenance]:
    """Per config, where its packages come from: the checkout's facts, asked once, with the
    config's own (variant file, image, recipe render)."""
    tree = provenance.checkout(options.root)
    base = provenance.Provenance(
        commit=tree.commit,
        dirty=tree.dirty,
        diff_sha256=tree.diff_sha256,
        recipe_version=None,
        recipe_build_number=provenance.recipe_build_number(options.root),
        build_number=None,
        ci_support_sha256=None,
        toolkit=provenance.toolkit_version(),
        engine=None,
        image=None,
        machine=provenance.machine(options.env),
    )
    ci = ci_engine.of_feedstock(options.root)
    tests = provenance.tests_of(options.env)
    found = {}
    for plan in batch.plans:
        used = (
            chosen.provenance
            if plan.dispatch in ("docker", "embedded", "native")
            else f"{plan.dispatch} (no container)"
        )
        found[plan.config] = provenance.for_config(
            replace(base, engine=used, channels=_channels(options, plan), tests=tests),
            ci_support=options.root / ".ci_support" / f"{plan.config}.yaml",
            image=plan.image,
            recipe=checked.recipes.get(plan.config),
            # conda-forge's scripts build the recipe its conda_build_tool names, on PATH or not;
            # the embedded engine builds the v1 recipe whatever the tool.
            recipe_file=_recipe_file(options, plan) or ci.recipe,
            ci_engine=plan.dispatch in ci_engine.CI_DISPATCHES,
        )
    return found


def _channels(options: Options, plan) -> tuple[str, ...] | None:
    """The channels the build solves from: --channel for the embedded engine (as it hands
    them to rattler-build), else the config's channel_sources."""
    if plan.dispatch == "embedded" and options.channels:
        return tuple(airgap.channel_url(c, options.artifacts) for c in options.channels)
    return provenance.channel_sources(options.root / ".ci_support" / f"{plan.config}.yaml")


def _recipe_file(options: Options, plan) -> str | None:
    """The v1 recipe the embedded engine was handed (its ``--recipe``), relative to the root."""
    if plan.dispatch != "embedded" or "--recipe" not in plan.argv:
        return None
    path = Path(plan.argv[plan.argv.index("--recipe") + 1])
    try:
        return path.resolve().relative_to(options.root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()
