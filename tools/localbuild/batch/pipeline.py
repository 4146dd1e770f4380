"""The batch, as a pipeline: select -> plan -> run -> record -> report.

Each stage is its own module (choose, preflight, loop, record, summary); this one only
sequences them.  The commands that read earlier batches (``python -m tools
review``) are the reviewer's side, ``tools.localbuild.review``.
"""

from __future__ import annotations

import time
from dataclasses import replace
from functools import cache
from pathlib import Path

from tools.localbuild.batch import choose, loop, preflight, record, summary
from tools.localbuild.console import Console
from tools.localbuild.engines import airgap, ladder
from tools.localbuild.engines.engine import ContainerEngine
from tools.localbuild.engines.plan import HostFacts
from tools.localbuild.options import Options
from tools.localbuild.records import ci_engine, provenance
from tools.localbuild.records.configs import Config, discover, labels


def run_batch(options: Options, console: Console, host: HostFacts | None = None) -> int:
    host = host or HostFacts.detect()
    available = discover(options.root)
    label_of = labels(options.root, available)
    if options.list_only:
        return choose.list_configs(options, available, label_of, console)

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
    names = choose.this_shard(
        options, choose.choose(options, console, engine, host, label_of, engine_of_run), console
    )
    if not names:
        return 0  # an empty shard; this_shard said so
    chosen = engine_of_run()
    # the first line says when this engine is not the one conda-forge's CI builds with
    ci = ci_engine.of_feedstock(options.root)
    chosen = replace(chosen, line=chosen.line + ci_engine.first_line_note(chosen.builder, ci))
    host = replace(host, builder=chosen.builder)
    # plan: everything the run decides or refuses happens here, for --dry-run too; only
    # the containers and builds below are left out of a dry run.
    configs = [Config(n, options.root / ".ci_support" / f"{n}.yaml") for n in names]
    batch = preflight.plan_all(options, configs, engine, host)
    checked = preflight.preflight(options, batch, chosen)
    if options.dry_run:
        return preflight.dry_run(options, batch, engine, console, label_of, chosen.line)
    with loop.workspace(options):
        console.note(chosen.line)  # the run's first line, once nothing refused it
        if options.debug:
            return loop.debug(batch.plans[0])
        started = time.time()
        sources = _provenance(options, batch, chosen, checked)
        if any(p.dirty for p in sources.values()):
            console.note(f"{provenance.DIRTY_WARNING}: commit and package it first for CFEP-03")
        outcome = loop.run_all(options, batch, engine, console, label_of, sources)  # run
        files = record.write_records(  # record
            options.root, options.artifacts, outcome.results, started, matrix=available
        )
        return summary.report_run(  # report
            options.root, outcome, files, started, console, label_of
        )


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
