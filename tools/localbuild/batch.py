"""The batch: select configs, build them one after another, resume, summarise.

A config is done when its ``build_artifacts/conda-forge-build-done-<config>``
marker exists: the .scripts delete it before building and touch it as their
very last step, so a failed or interrupted build never leaves one, and the
next run retries exactly what is missing.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from tools.errors import EXIT_INTERRUPTED, CommandError, ProblemsFound, UserError
from tools.localbuild import artifacts as art
from tools.localbuild import ccache, cfep3, lock
from tools.localbuild.configs import (
    Config,
    UnreadableConfig,
    choose_interactively,
    discover,
    labels,
    read_variant,
    select,
)
from tools.localbuild.engine import ContainerEngine
from tools.localbuild.eta import Estimate, estimate
from tools.localbuild.facts import read_facts
from tools.localbuild.logtee import LogSink
from tools.localbuild.merge import merge
from tools.localbuild.options import Options
from tools.localbuild.plan import BuildPlan, HostFacts, describe, plan_build
from tools.localbuild.progress import Progress, format_duration
from tools.localbuild.runner import run, run_attached
from tools.localbuild.shard import choose_shard, measured_seconds
from tools.proc import call, format_command, redact
from tools.selection import describe as describe_configs

DONE, FAILED, INTERRUPTED, SKIPPED, PENDING = "done", "failed", "interrupted", "skipped", "pending"
UNBUILDABLE = "cannot build on this machine"


@dataclass(frozen=True)
class ConfigResult:
    config: str
    status: str
    seconds: float | None = None
    returncode: int | None = None
    started: str | None = None
    packages: tuple[art.Package, ...] = ()
    ccache: ccache.CcacheStats | None = None
    note: str = ""
    log: str | None = None
    machine: str = ""  # the host that built it: --report's timeline groups by it

    def to_json(self) -> dict[str, object]:
        return {
            "status": self.status,
            "machine": self.machine or None,
            "started": self.started,
            "duration_seconds": None if self.seconds is None else round(self.seconds, 1),
            "returncode": self.returncode,
            "log": self.log,
            "packages": [p.to_json() for p in self.packages],
            "ccache": None
            if self.ccache is None
            else {
                "hits": self.ccache.hits,
                "misses": self.ccache.misses,
                "hit_rate": self.ccache.hit_rate,
            },
            "note": self.note,
        }


@dataclass
class Console:
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    ask: Callable[[str], str] = input

    def say(self, text: str = "") -> None:
        # the reader (`| tee`, `| head`) may be gone; files still get written
        with contextlib.suppress(BrokenPipeError):
            print(text, file=self.out, flush=True)


def _utc(seconds: float | None = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def choose(
    options: Options,
    console: Console,
    engine: ContainerEngine,
    host: HostFacts,
    label_of: Mapping[str, str] | None = None,
) -> tuple[str, ...]:
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
        result = _not_buildable(options, config, engine, host)
        if result is None:
            continue
        if result.status == FAILED:
            marks[name] = "damaged: cannot be read, rerender"
        else:  # the reason's first clause; the full one comes if the config is chosen anyway
            marks[name] = result.note.split("; ")[0]
    return marks


def _check_engine(engine: ContainerEngine, env) -> None:
    engine.resolve(env)
    try:
        result = call(
            *engine.info_argv(), env=env, capture=True, check=False, quiet=True, timeout=60
        )
    except CommandError as exc:
        raise engine.not_running(str(exc)) from None
    if result.returncode != 0:
        detail = (result.stderr.strip().splitlines() or [""])[-1]
        raise engine.not_running(detail[:200])


def _check_native(env) -> None:
    if shutil.which("conda-build", path=env.get("PATH")) is None:
        raise UserError(
            "--native needs conda-build on PATH: `conda env create -f environment.yml` "
            "then `conda activate pytorch-feedstock-build`"
        )


def _header(
    plan: BuildPlan, engine: ContainerEngine, secrets: Sequence[str]
) -> list[tuple[str, str]]:
    fields = [
        ("config", plan.config),
        ("command", format_command(plan.argv)),
        ("where", plan.dispatch),
    ]
    if plan.image:
        fields += [("engine", engine.executable), ("image", plan.image)]
    fields += [(f"env {k}", redact(v, secrets)) for k, v in sorted(plan.changes.items())]
    if plan.withheld:
        fields.append(("withheld", " ".join(plan.withheld)))
    return fields


def classify(returncode: int | None, interrupted: bool, marker: bool) -> tuple[str, str]:
    """A config's status and why; only a clean exit *and* the done marker count as done."""
    if interrupted:
        return INTERRUPTED, "stopped by the user; rerun to resume"
    if returncode == 0 and marker:
        return DONE, ""
    if returncode == 0:
        return FAILED, "the build ended without its done marker"
    return FAILED, f"exit status {returncode}"


def build_one(
    plan: BuildPlan,
    options: Options,
    engine: ContainerEngine,
    progress: Progress,
    *,
    label: str = "",
    expected: tuple[float, float, str] | None = None,
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
        sink.header(_header(plan, engine, options.secrets))
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
        started=_utc(started),
        packages=packages,
        ccache=stats,
        note=note,
        log=plan.log.relative_to(options.root).as_posix(),
        machine=options.env.get("BUILD_MACHINE") or socket.gethostname(),
    )


def _skipped(plan: BuildPlan, previous: dict[str, object], root: Path) -> ConfigResult:
    """A config built by an earlier run: keep what that run's summary knew about it."""
    entries = previous.get("packages")
    packages = tuple(
        art.Package(str(p["path"]), str(p["sha256"]), int(p["size"]))
        for p in (entries if isinstance(entries, list) else [])
        if isinstance(p, dict) and {"path", "sha256", "size"} <= p.keys()
    )
    seconds = previous.get("duration_seconds")
    machine = previous.get("machine")
    return ConfigResult(
        config=plan.config,
        status=SKIPPED,
        packages=packages,
        seconds=float(seconds) if isinstance(seconds, (int, float)) else None,
        note="done marker exists; --force rebuilds",
        log=plan.log.relative_to(root).as_posix() if plan.log.exists() else None,
        machine=machine if isinstance(machine, str) else "",
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


def summary_table(
    results: Sequence[ConfigResult],
    label_of: Mapping[str, str] | None = None,
    wall_seconds: float | None = None,
) -> str:
    """One row per config (label, then the long name last, where it may run off the screen),
    then a total row: the build time of this run's configs and, given, the wall-clock time."""
    label_of = label_of or {}
    rows = [("status", "time", "pkgs", "ccache", "label", "config")]
    built = 0.0
    for r in results:
        ran = r.seconds is not None and r.status != SKIPPED
        built += r.seconds if ran and r.seconds is not None else 0.0
        rows.append(
            (
                r.status.upper() if r.status in (FAILED, INTERRUPTED) else r.status,
                format_duration(r.seconds) if ran and r.seconds is not None else "-",
                str(len(r.packages)) if r.status in (DONE, SKIPPED) else "-",
                r.ccache.describe() if r.ccache else "-",
                label_of.get(r.config, "-"),
                r.config,
            )
        )
    packages = sum(len(r.packages) for r in results if r.status in (DONE, SKIPPED))
    wall = f" (wall clock {format_duration(wall_seconds)})" if wall_seconds is not None else ""
    rows.append(
        ("total", format_duration(built), str(packages), "-", f"{len(results)} configs{wall}", "")
    )
    widths = [max(len(row[i]) for row in rows[:-1]) for i in range(5)]
    return "\n".join(
        (
            "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:5])) + "  " + row[5]
        ).rstrip()
        for row in rows
    )


def _finish(
    options: Options,
    results: Sequence[ConfigResult],
    started: float,
    console: Console,
    label_of: Mapping[str, str] | None = None,
) -> None:
    artifacts = options.artifacts
    records = art.read_summary(artifacts)
    for result in results:
        untouched = result.status == PENDING or result.note.startswith(UNBUILDABLE)
        if untouched and result.config in records:
            continue  # keep what an earlier run learnt about a config this run never reached
        records[result.config] = result.to_json()
    document = art.summary_document(
        feedstock=options.root.name,
        started=_utc(started),
        finished=_utc(),
        this_run=[r.config for r in results],
        configs=records,
    )
    files = art.write_batch_files(artifacts, document)
    console.say()
    console.say(summary_table(results, label_of, wall_seconds=time.time() - started))
    console.say()

    def rel(path: Path) -> str:
        return path.relative_to(options.root).as_posix()

    console.say(
        f"summary: {rel(files.summary)}; checksums: {rel(files.sha256sums)}; "
        f"logs: {rel(files.log_zip)}"
    )


def _cfep3_request(options: Options, console: Console) -> None:
    channel = options.cfep3_channel or ""
    cfep3.check_channel(channel)
    sums = cfep3.read_sums(options.artifacts / "SHA256SUMS")
    label = cfep3.target_label(options.root, sums)
    console.out.write(cfep3.request_yaml(channel, sums, label=label))


def _note(console: Console, text: str) -> None:
    """Progress that must not mix with a document on stdout (--list, --cfep3-request)."""
    print(text, file=console.err, flush=True)


def _this_shard(options: Options, names: tuple[str, ...], console: Console) -> tuple[str, ...]:
    if options.shard is None:
        return names
    facts = [read_facts(options.root / ".ci_support" / f"{n}.yaml") for n in names]
    choice = choose_shard(
        facts, options.shard, recipe_dir=options.root / "recipe", durations=options.durations
    )
    _note(console, choice.describe(options.shard))
    if not choice.names:
        # Every machine runs the same command, so a machine with no share has done its part
        # (exit 0: its job must not fail); --merge later names any config no machine built.
        first, count = choice.selected + 1, options.shard.count
        idle = f"machine {count}" if first == count else f"machines {first}-{count}"
        _note(
            console,
            f"shard {options.shard}: nothing to build on this machine: {choice.selected} "
            f"config(s) split over {options.shard.count} machines leave {idle} without one; "
            f"--shard K/{choice.selected} uses every machine",
        )
    return choice.names


def _merge(options: Options, console: Console) -> int:
    if options.cfep3_channel is not None:
        cfep3.check_channel(options.cfep3_channel)
    with lock.exclusive(options.artifacts):  # a batch building there would mix with it
        result = merge(options.root, options.merge_dirs, say=lambda text: _note(console, text))
    statuses = [str(r.get("status")) for r in result.configs.values()]
    counts = ", ".join(f"{statuses.count(s)} {s}" for s in dict.fromkeys(statuses))
    _note(
        console,
        f"merged {result.sources} folder(s) into build_artifacts/: {len(statuses)} configs "
        f"({counts or 'none'}), {result.copied_packages} package(s) copied",
    )
    _note(
        console, f"summary, SHA256SUMS and log_files.zip written in {result.files.summary.parent}"
    )
    if options.cfep3_channel is not None:
        _cfep3_request(options, console)
    if result.failed:
        raise ProblemsFound(
            f"{len(result.failed)} config(s) not built on any machine: {', '.join(result.failed)}"
        )
    return 0


def _why(options: Options, console: Console) -> int:
    """--why CONFIG: the first real error of the config's log (why.py)."""
    from tools import selection
    from tools.localbuild import why

    previous = art.read_summary(options.artifacts)
    available = sorted({*discover(options.root), *previous})
    label_of = labels(options.root, available)
    config = selection.select_one(available, options.why or "", labels=label_of)
    log = art.log_path(options.artifacts, config)
    record = previous.get(config, {})
    if not log.is_file() and record.get("note"):  # failed before it started (a damaged file)
        title = f"{label_of.get(config, config)} ({record.get('status', 'unknown')})"
        console.say(f"{title}: {record['note']}")
        return 0
    if not log.is_file():
        raise UserError(
            f"{config}: no log at {log.relative_to(options.root).as_posix()}; "
            "it was not built in this build_artifacts/ (--merge brings other machines' logs)"
        )
    status = str(record.get("status", "unknown"))
    title = f"{label_of.get(config, config)} ({status})"
    if status in (DONE, SKIPPED):
        console.say(f"{title}: built; nothing failed. log: {log}")
        return 0
    console.say(why.describe(why.read_first_error(log), title=title, log=log))
    return 0


def run_batch(options: Options, console: Console, host: HostFacts | None = None) -> int:
    host = host or HostFacts.detect()
    if options.why is not None:
        return _why(options, console)
    if options.report_dirs is not None:
        from tools.localbuild.report import write_report

        return write_report(options, console.say, lambda text: _note(console, text))
    if options.merge_dirs:
        return _merge(options, console)
    if options.cfep3_channel is not None:
        _cfep3_request(options, console)
        return 0
    available = discover(options.root)
    label_of = labels(options.root, available)
    if options.list_only:
        # Names and globs narrow the list as they narrow a build; one that matches
        # nothing is the same error (with the closest names) as for a build.
        pool = select(
            available,
            options.requested,
            all_configs=options.all_configs or not options.requested,
            filter_glob=options.filter_glob,
            label_of=label_of,
        )
        for line in describe_configs(_this_shard(options, pool, console), label_of):
            console.say(line)
        return 0
    engine = ContainerEngine.from_env(options.env)
    names = _this_shard(options, choose(options, console, engine, host, label_of), console)
    if not names:
        return 0  # an empty shard; _this_shard said so
    configs = [Config(n, options.root / ".ci_support" / f"{n}.yaml") for n in names]
    plans, unbuildable, unreadable = _plan_all(options, configs, engine, host)
    # Everything the run decides or refuses happens here, for --dry-run too: only the
    # containers and builds below are left out of a dry run.
    _preflight(options, plans, unbuildable, unreadable, engine)
    if options.dry_run:
        return _dry_run(options, plans, unbuildable, unreadable, engine, console)
    with lock.exclusive(options.artifacts):
        if options.ccache is not None:
            options.ccache.mkdir(parents=True, exist_ok=True)
        license_copy = options.root / "recipe" / "recipe-scripts-license.txt"
        ours = not license_copy.exists()
        try:
            if options.debug:
                returncode = run_attached(plans[0])
                # conda-smithy's build_steps.sh reaches its final touch after the debug shell
                # too; a config that was only debugged must not count as built.
                plans[0].marker.unlink(missing_ok=True)
                return returncode
            return _loop(options, plans, engine, console, unbuildable, unreadable, label_of)
        finally:
            # build_steps.sh copies LICENSE.txt there for conda-build; remove it only if we
            # made it.
            if ours:
                license_copy.unlink(missing_ok=True)


def _plan_all(
    options: Options, configs: Sequence[Config], engine: ContainerEngine, host: HostFacts
) -> tuple[list[BuildPlan], list[ConfigResult], list[ConfigResult]]:
    """Plans for the configs this machine can build; the others, when a glob or --all chose
    them, become results with the reason (a config named exactly is an error): "skipped" for
    one that needs another machine, "failed" for a file that cannot be read (rerender it)."""
    buildable: list[Config] = []
    unbuildable: list[ConfigResult] = []
    unreadable: list[ConfigResult] = []
    for config in configs:
        result = _not_buildable(options, config, engine, host)
        if result is None:
            buildable.append(config)
        else:
            (unreadable if result.status == FAILED else unbuildable).append(result)
    plans = [
        plan_build(options, c, engine, host, index=i, total=len(buildable))
        for i, c in enumerate(buildable, start=1)
    ]
    return plans, unbuildable, unreadable


def _not_buildable(
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
        reason = str(exc).removeprefix(f"{config.name}: ")
        return ConfigResult(config.name, SKIPPED, note=f"{UNBUILDABLE}: {reason}")
    return None


def _preflight(
    options: Options,
    plans: Sequence[BuildPlan],
    unbuildable: Sequence[ConfigResult],
    unreadable: Sequence[ConfigResult],
    engine: ContainerEngine,
) -> None:
    """What the run refuses before it starts a container, in the order it finds out."""
    if not plans and not unreadable:
        raise UserError(
            f"none of the {len(unbuildable)} selected config(s) builds on this machine: "
            f"{unbuildable[0].config}: {unbuildable[0].note}"
        )
    # conda-build renders the recipe first thing in the container; a recipe that does not
    # render is refused here, before hours of image pulls and environment solves.
    if _renders_here(options):
        from tools.render import render_config

        for plan in plans:
            render_config(options.root / ".ci_support" / f"{plan.config}.yaml", root=options.root)
    if any(p.dispatch == "docker" for p in plans):
        _check_engine(engine, options.env)
    if any(p.dispatch == "native" for p in plans):
        _check_native(options.env)


def _renders_here(options: Options) -> bool:
    """Whether the toolkit's renderer (meta.yaml) can check the recipe: a feedstock switched
    to rattler-build (docs/rattler-build.md) has only recipe/recipe.yaml, which rattler-build
    renders."""
    recipe = options.root / "recipe"
    return (recipe / "meta.yaml").is_file() or not (recipe / "recipe.yaml").is_file()


def _dry_run(
    options: Options,
    plans: Sequence[BuildPlan],
    unbuildable: Sequence[ConfigResult],
    unreadable: Sequence[ConfigResult],
    engine: ContainerEngine,
    console: Console,
) -> int:
    lock.check_free(options.artifacts)  # the run would be refused here, so the dry run is
    console.say(f"dry run: {len(plans)} config(s); nothing is started, written or deleted")
    if not _renders_here(options):
        console.say("recipe/recipe.yaml: not rendered here; rattler-build renders it in the build")
    for plan in plans:
        status = (
            "would skip: done marker exists (--force rebuilds)"
            if plan.marker.exists() and not options.force
            else "would build"
        )
        console.say(describe(plan, status=status, engine=engine, secrets=options.secrets))
    for result in unbuildable:
        console.say(f"[-] {result.config}: would skip: {result.note}")
    for result in unreadable:
        console.say(f"[!] {result.config}: would fail: {result.note}")
    if unreadable:
        raise ProblemsFound(
            f"{len(unreadable)} selected config(s) cannot be read and would fail: "
            f"{', '.join(r.config for r in unreadable)}"
        )
    return 0


def _loop(
    options: Options,
    plans: Sequence[BuildPlan],
    engine: ContainerEngine,
    console: Console,
    unbuildable: Sequence[ConfigResult] = (),
    unreadable: Sequence[ConfigResult] = (),
    label_of: Mapping[str, str] | None = None,
) -> int:
    started = time.time()
    label_of = label_of or {}
    previous = art.read_summary(options.artifacts)
    progress = Progress(console.err, is_tty=console.err.isatty())
    expected = _estimate(options, plans, measured_seconds(options.durations), progress)
    for result in unbuildable:
        progress.message(f"[-] {result.config}: skipped, {result.note}")
    for result in unreadable:
        progress.message(f"[!] {result.config}: FAILED, {result.note}")
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
                progress.message(f"[{plan.index}/{plan.total}] {plan.config}: done before, skipped")
                results.append(_skipped(plan, previous.get(plan.config, {}), options.root))
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
    _finish(options, results, started, console, label_of)
    if interrupted:
        console.say("interrupted: rerun the same command to resume where it stopped")
        return EXIT_INTERRUPTED
    failed = [label_of.get(r.config, r.config) for r in results if r.status == FAILED]
    if failed:
        raise ProblemsFound(
            f"{len(failed)} of {len(results)} config(s) failed: {', '.join(failed)} "
            f"(`build-locally.py --why '{failed[0]}'` shows the first error; "
            "all: build_artifacts/summary.json and <config>-log.txt)"
        )
    return 0


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
