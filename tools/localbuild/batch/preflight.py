"""The plan stage: a plan per config this machine builds, a result for each one it cannot,
and everything the run refuses before it starts a container (the same for --dry-run)."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tools.foundation.errors import ProblemsFound, UserError
from tools.localbuild.batch import lock
from tools.localbuild.batch.record import (
    FAILED,
    SKIPPED,
    UNBUILDABLE,
    ConfigResult,
    cannot_build_here,
)
from tools.localbuild.console import Console
from tools.localbuild.engines import airgap
from tools.localbuild.engines.engine import ContainerEngine
from tools.localbuild.engines.ladder import Chosen
from tools.localbuild.engines.plan import BuildPlan, HostFacts, describe, plan_build
from tools.localbuild.options import Options
from tools.localbuild.records.configs import Config, UnreadableConfig, read_variant


@dataclass(frozen=True)
class BatchPlan:
    plans: list[BuildPlan]  # what this machine builds, in order
    unbuildable: list[ConfigResult]  # "skipped": needs another machine
    unreadable: list[ConfigResult]  # "failed": a file that cannot be read (rerender it)


def plan_all(
    options: Options, configs: Sequence[Config], engine: ContainerEngine, host: HostFacts
) -> BatchPlan:
    """Plans for the configs this machine can build; the others, when a glob or --all chose
    them, become results with the reason (a config named exactly is an error): "skipped" for
    one that needs another machine, "failed" for a file that cannot be read (rerender it)."""
    buildable: list[Config] = []
    unbuildable: list[ConfigResult] = []
    unreadable: list[ConfigResult] = []
    for config in configs:
        result = not_buildable(options, config, engine, host)
        if result is None:
            buildable.append(config)
        else:
            (unreadable if result.status == FAILED else unbuildable).append(result)
    plans = [
        plan_build(options, c, engine, host, index=i, total=len(buildable))
        for i, c in enumerate(buildable, start=1)
    ]
    return BatchPlan(plans, unbuildable, unreadable)


def not_buildable(
    options: Options, config: Config, engine: ContainerEngine, host: HostFacts
) -> ConfigResult | None:
    """``None`` when this machine can build ``config``; else why not, as the result the run
    records: "failed" for a file that cannot be read, "skipped" for one that needs another
    machine.  A config the user named exactly raises instead (the run refuses it)."""
    try:
        read_variant(config.path)
    except UnreadableConfig as exc:
        if config.name in options.requested:
            raise
        return ConfigResult(config.name, FAILED, note=str(exc))
    try:
        plan_build(options, config, engine, host)
    except UserError as exc:
        if config.name in options.requested:
            raise
        why = str(exc).removeprefix(f"{config.name}: ")
        return ConfigResult(
            config.name,
            SKIPPED,
            note=f"{UNBUILDABLE}: {why}",
            reason=cannot_build_here(config.os),
        )
    return None


@dataclass(frozen=True)
class Checked:
    """What the checks before the run learnt, for the records (provenance.py)."""

    engine_version: str | None  # the container engine's, when a config runs in one
    recipes: Mapping[str, tuple[str, int]]  # per config: the rendered version, build number


def preflight(options: Options, batch: BatchPlan, chosen: Chosen) -> Checked:
    """What the run refuses before it starts a container, in the order it finds out (the
    engine itself answered the ladder already)."""
    if not batch.plans and not batch.unreadable:
        first = batch.unbuildable[0]
        raise UserError(
            f"none of the {len(batch.unbuildable)} selected config(s) builds on this machine: "
            f"{first.config}: {first.note}"
        )
    # The engine renders the recipe first thing in the container; a recipe that does not
    # render is refused here, before hours of image pulls and environment solves.  The
    # toolkit renders it as the run will: meta.yaml as conda-build, recipe.yaml (a feedstock
    # switched to rattler-build, by conda-forge.yml) with rattler-build's own renderer.
    from tools.render.config import render_config

    recipes = {}
    for plan in batch.plans:
        outputs = render_config(
            options.root / ".ci_support" / f"{plan.config}.yaml", root=options.root
        )
        built = [o for o in outputs if not o.skip] or outputs
        if built:
            recipes[plan.config] = (built[0].version, built[0].build_number)
    _check_airgap(options, batch)
    return Checked(chosen.version if chosen.builder == "docker" else None, recipes)


def _check_airgap(options: Options, batch: BatchPlan) -> None:
    """The embedded engine's inputs: channels that hold packages, the source archive the
    recipe names; options only it takes are refused for the others."""
    embedded = any(p.dispatch == "embedded" for p in batch.plans)
    if not embedded:
        used = [f for f, v in (("--channel", options.channels),
                               ("--source-cache", options.source_cache)) if v]  # fmt: skip
        if used and batch.plans:
            # The flag that chose the other engine is named: adding --engine rattler-build
            # to --native is refused.
            switch = (
                f"replace {options.engine_flag} with --engine rattler-build"
                if options.engine_flag
                else "add --engine rattler-build"
            )
            verb, them = ("feeds", "it") if len(used) == 1 else ("feed", "them")
            raise UserError(
                f"{' and '.join(used)} {verb} the embedded engine; this run builds with "
                f"{batch.plans[0].dispatch}: {switch}, or drop {them}"
            )
        return
    if options.ccache is not None and shutil.which("ccache", path=options.env.get("PATH")) is None:
        raise UserError(
            "--ccache: the embedded engine compiles through the ccache on PATH, and there is "
            "none; install ccache (apt install ccache, or conda install ccache) or drop --ccache"
        )
    for channel in options.channels:
        airgap.check_channel(channel, index=not options.dry_run, artifacts=options.artifacts)
    if options.source_cache is not None:
        airgap.check_source(options.root, options.source_cache)


def dry_run(
    options: Options,
    batch: BatchPlan,
    engine: ContainerEngine,
    console: Console,
    label_of: Mapping[str, str],
    engine_line: str = "",
) -> int:
    lock.check_free(options.artifacts)  # the run would be refused here, so the dry run is
    if engine_line:
        console.say(engine_line)
    console.say(f"dry run: {len(batch.plans)} config(s); nothing is started, written or deleted")
    for plan in batch.plans:
        status = (
            "would skip: done marker exists (--force rebuilds)"
            if plan.marker.exists() and not options.force
            else "would build"
        )
        label = label_of.get(plan.config, "")
        console.say(
            describe(plan, status=status, engine=engine, secrets=options.secrets, label=label)
        )
    if batch.plans:
        from tools.localbuild.engines import fetches

        for line in fetches.describe(options, batch.plans):
            console.say(line)
    for result in batch.unbuildable:
        console.say(f"[-] {label_of.get(result.config, result.config)}: would skip: {result.note}")
    for result in batch.unreadable:
        console.say(f"[!] {label_of.get(result.config, result.config)}: would fail: {result.note}")
    if batch.unreadable:
        raise ProblemsFound(
            f"{len(batch.unreadable)} selected config(s) cannot be read and would fail: "
            f"{', '.join(r.config for r in batch.unreadable)}"
        )
    return 0
