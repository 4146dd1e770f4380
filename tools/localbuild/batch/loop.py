"""The run stage: build the planned configs one after another (resume, fail-fast, prune)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from tools.foundation.errors import CommandError, UserError
from tools.foundation.proc import call, format_command, redact
from tools.localbuild.batch import lock
from tools.localbuild.batch.preflight import BatchPlan
from tools.localbuild.batch.record import (
    DONE,
    FAILED,
    INTERRUPTED,
    PENDING,
    ConfigResult,
    built_earlier,
    classify,
    utc,
)
from tools.localbuild.console import Console
from tools.localbuild.engines import ccache
from tools.localbuild.engines.engine import ContainerEngine
from tools.localbuild.engines.logtee import LogSink
from tools.localbuild.engines.plan import BuildPlan
from tools.localbuild.engines.progress import Progress, format_duration
from tools.localbuild.engines.runner import run, run_attached
from tools.localbuild.options import Options
from tools.localbuild.records import artifacts as art
from tools.localbuild.records.provenance import DIRTY_WARNING, Provenance, machine
from tools.localbuild.schedule.eta import Estimate, estimate
from tools.localbuild.schedule.shard import measured_seconds


@dataclass(frozen=True)
class RunOutcome:
    results: list[ConfigResult]  # every selected config, in the order reported
    interrupted: bool


@contextlib.contextmanager
def workspace(options: Options) -> Iterator[None]:
    """build_artifacts/ held for this run alone, and the recipe as the run found it."""
    with lock.exclusive(options.artifacts):
        if options.ccache is not None:
            options.ccache.mkdir(parents=True, exist_ok=True)
        license_copy = options.root / "recipe" / "recipe-scripts-license.txt"
        ours = not license_copy.exists()
        try:
            yield
        finally:
            # build_steps.sh copies LICENSE.txt there for conda-build; remove it only if we
            # made it.
            if ours:
                license_copy.unlink(missing_ok=True)


def debug(plan: BuildPlan) -> int:
    returncode = run_attached(plan)
    # conda-smithy's build_steps.sh reaches its final touch after the debug shell too; a
    # config that was only debugged must not count as built.
    plan.marker.unlink(missing_ok=True)
    return returncode


def _header(
    plan: BuildPlan,
    engine: ContainerEngine,
    secrets: Sequence[str],
    provenance: Provenance | None = None,
) -> list[tuple[str, str]]:
    fields = [("config", plan.config)]
    if provenance is not None:
        fields += provenance_fields(provenance)
    fields += [
        ("command", format_command(plan.argv)),
        ("where", plan.dispatch),
    ]
    if plan.image:
        fields += [("engine", engine.executable), ("image", plan.image)]
    fields += [(f"env {k}", redact(v, secrets)) for k, v in sorted(plan.changes.items())]
    if plan.withheld:
        fields.append(("withheld", " ".join(plan.withheld)))
    return fields


def provenance_fields(p: Provenance) -> list[tuple[str, str]]:
    """The log's head names where the build came from, as summary.json records it."""
    tree = f"DIRTY: uncommitted changes, diff sha256 {p.diff_sha256}" if p.dirty else "clean"
    fields = [
        ("commit", p.commit or "none (not a git checkout)"),
        ("tree", tree),
        (
            "recipe",
            f"version {p.recipe_version or '?'}, build number {p.build_number} "
            f"(recipe build {p.recipe_build_number if p.recipe_build_number is not None else '?'})",
        ),
        ("ci_support sha256", p.ci_support_sha256 or "?"),
        ("toolkit", p.toolkit),
        ("engine version", p.engine or "?"),
        ("recipe file", p.recipe_file or "?"),
        ("machine", p.machine),
        ("channels", " ".join(p.channels) if p.channels else "?"),
        ("tests", p.tests or "?"),
    ]
    if p.ci_engine is False:
        fields.insert(0, ("warning", "not conda-forge's CI engine: packages for local use"))
    if p.dirty:
        fields.insert(0, ("warning", DIRTY_WARNING))
    return fields


def build_one(
    plan: BuildPlan,
    options: Options,
    engine: ContainerEngine,
    progress: Progress,
    *,
    label: str = "",
    expected: tuple[float, float, str] | None = None,
    provenance: Provenance | None = None,
) -> ConfigResult:
    artifacts = options.artifacts
    plan.marker.unlink(missing_ok=True)  # --force, or a stale marker the script would drop anyway
    ccache.stats_file(artifacts, plan.config).unlink(missing_ok=True)
    art.set_aside_old_log(artifacts, plan.config)
    before = art.snapshot(artifacts)
    started = time.time()
    sink = LogSink(plan.log, options.secrets)
    progress.start(plan.index, plan.total, plan.config, label=label, expected=expected)
    try:
        sink.header(_header(plan, engine, options.secrets, provenance))
        outcome = run(plan, sink, progress, engine if plan.dispatch == "docker" else None)
        if outcome.returncode == 0 and not outcome.interrupted and not plan.script_writes_marker:
            # run_osx_build.sh / run_win_build.bat leave none (as conda-smithy's)
            plan.marker.touch()
        status, note = classify(outcome.returncode, outcome.interrupted, plan.marker.exists())
        packages = art.describe_packages(artifacts, art.produced(before, art.snapshot(artifacts)))
        stats = ccache.read_stats(artifacts, plan.config) if options.ccache else None
        # The log alone tells a reviewer what happened and what came out of it.
        sink.note(
            f"{status} after {format_duration(outcome.seconds)}" + (f" ({note})" if note else "")
        )
        for package in packages:
            sink.note(f"package {package.path} sha256 {package.sha256} ({package.size} bytes)")
        if stats is not None:
            sink.note(f"ccache: {stats.hits} hits, {stats.misses} misses ({stats.describe()})")
        # The last line, always: review verify reads a log that does not end so as cut short.
        sink.note(end_line(status, plan.marker.exists()))
    finally:
        sink.close()
    detail = f"{len(packages)} package(s)" if status == DONE else f"{note}; log: {plan.log.name}"
    if stats is not None:
        detail += f", ccache hits {stats.describe()}"
    progress.end(status.upper() if status != DONE else status, outcome.seconds, detail)
    return ConfigResult(
        config=plan.config,
        status=status,
        seconds=outcome.seconds,
        returncode=outcome.returncode,
        started=utc(started),
        packages=packages,
        ccache=stats,
        note=note,
        log=plan.log.relative_to(options.root).as_posix(),
        machine=machine(options.env),
        provenance=provenance,
    )


def _prune(
    options: Options,
    engine: ContainerEngine,
    plan: BuildPlan,
    result: ConfigResult,
    work_before: set[str],
    window: tuple[float, float],
    progress: Progress,
) -> None:
    if plan.dispatch == "docker":
        try:
            call(
                *engine.prune_argv(),
                env=plan.env,
                capture=True,
                check=False,
                quiet=True,
                timeout=300,
            )
        except CommandError as exc:
            progress.message(f"prune: {exc}")
    if result.status == DONE:  # a failed build's work folder is what you debug with
        appeared = art.work_dirs(options.artifacts) - work_before
        # Only the folders this config's conda-build started; another recipe's conda-build
        # sharing build_artifacts/ keeps its own (another batch cannot run: see lock.py).
        package = art.recipe_package_name(options.root / "recipe")
        if package is None:
            progress.message("prune: recipe/meta.yaml names no literal package; work folders kept")
            return
        ours = art.own_work_dirs(appeared, package, window[0] - 1, window[1])
        removed = art.remove_work_dirs(options.artifacts, ours)
        if removed:
            progress.message(f"prune: removed work folder(s) {', '.join(removed)}")


def run_all(
    options: Options,
    batch: BatchPlan,
    engine: ContainerEngine,
    console: Console,
    label_of: Mapping[str, str] | None = None,
    provenance: Mapping[str, Provenance] | None = None,
) -> RunOutcome:
    label_of = label_of or {}
    provenance = provenance or {}

    def name(config: str) -> str:
        return label_of.get(config, config)

    plans, unbuildable, unreadable = batch.plans, batch.unbuildable, batch.unreadable
    previous = art.read_summary(options.artifacts)
    progress = Progress(console.err, is_tty=console.err.isatty())
    expected = _estimate(options, plans, measured_seconds(options.durations), progress)
    for result in unbuildable:
        progress.message(f"[-] {name(result.config)}: skipped, {result.note}")
    for result in unreadable:
        progress.message(f"[!] {name(result.config)}: FAILED, {result.note}")
    results: list[ConfigResult] = []
    stop_reason = ""
    if unreadable and options.fail_fast:
        stop_reason = f"not started: --fail-fast after {unreadable[0].config} failed"
    interrupted = False
    for plan in plans:
        if stop_reason:
            results.append(ConfigResult(plan.config, PENDING, note=stop_reason))
            continue
        try:
            if plan.marker.exists() and not options.force:
                kept = built_earlier(plan, previous.get(plan.config, {}), options.root)
                progress.message(
                    f"[{plan.index}/{plan.total}] {name(plan.config)}: "
                    + resume_line(kept, provenance.get(plan.config))
                )
                results.append(kept)
                continue
            work_before = art.work_dirs(options.artifacts)
            window = (time.time(), 0.0)
            result = build_one(
                plan,
                options,
                engine,
                progress,
                label=label_of.get(plan.config, ""),
                expected=_expected_for(plan, plans, expected, options),
                provenance=provenance.get(plan.config),
            )
            window = (window[0], time.time())
            results.append(result)
            if result.status == INTERRUPTED:
                interrupted = True
                stop_reason = "not started: the run was interrupted"
            elif result.status == FAILED and options.fail_fast:
                stop_reason = f"not started: --fail-fast after {plan.config} failed"
            if options.prune and result.status != INTERRUPTED:
                _prune(options, engine, plan, result, work_before, window, progress)
        except KeyboardInterrupt:  # between builds: nothing to stop, but still summarise
            interrupted = True
            stop_reason = "not started: the run was interrupted"
            if not results or results[-1].config != plan.config:
                results.append(ConfigResult(plan.config, PENDING, note=stop_reason))
    results.extend(unreadable)
    results.extend(unbuildable)
    return RunOutcome(results, interrupted)


def end_line(status: str, marker: bool) -> str:
    return f"end: {status}; done marker {'present' if marker else 'absent'}"


def resume_line(kept: ConfigResult, now: Provenance | None) -> str:
    """What the resume keeps of an earlier build, and whether it came from another commit."""
    if kept.provenance is None:
        where = "no record of it" if not kept.machine else f"on {kept.machine}"
    else:
        when = (kept.started or "").replace("T", " ").removesuffix("Z")
        where = f"on {kept.machine}" + (f" at {when} UTC" if when else "")
    line = f"done by an earlier run ({where}), kept; --force rebuilds"
    before = kept.provenance.commit if kept.provenance else None
    if now is not None and before and now.commit and before != now.commit:
        line += f"; WARNING: built from commit {before[:12]}, the tree is at {now.commit[:12]}"
    return line


def _estimate(
    options: Options,
    plans: Sequence[BuildPlan],
    measured: Mapping[str, float],
    progress: Progress,
) -> Estimate | None:
    """Expected build times for the ETA; a config file the cost model cannot read only costs
    the ETA, never the build (a bad --durations file is an error before anything starts)."""
    try:
        return estimate(options.root, [p.config for p in plans], measured)
    except UserError as exc:
        progress.message(f"no ETA: {exc}")
        return None


def _expected_for(
    plan: BuildPlan, plans: Sequence[BuildPlan], found: Estimate | None, options: Options
) -> tuple[float, float, str] | None:
    """This config's expected seconds, those of the configs after it that will build (a done
    marker skips one unless --force), and the estimate's source."""
    if found is None:
        return None
    later = plans[plans.index(plan) + 1 :]
    after = sum(found.seconds[p.config] for p in later if options.force or not p.marker.exists())
    return found.seconds[plan.config], after, found.source
