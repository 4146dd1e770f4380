"""The report stage of a run: the table on the terminal, where the files are, the exit code."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from tools.foundation.errors import EXIT_INTERRUPTED, ProblemsFound
from tools.localbuild.batch.loop import RunOutcome
from tools.localbuild.batch.record import DONE, FAILED, INTERRUPTED, SKIPPED, ConfigResult
from tools.localbuild.console import Console
from tools.localbuild.engines.progress import format_duration
from tools.localbuild.records.artifacts import BatchFiles, read_summary
from tools.localbuild.records.provenance import dirty_warning


def _status_cell(r: ConfigResult) -> str:
    if r.status in (FAILED, INTERRUPTED):
        return r.status.upper()
    if r.status == DONE and r.earlier:
        return "done (earlier run)"
    if r.status == SKIPPED and r.reason:
        return f"skipped: {r.reason}"
    return r.status


def summary_table(
    results: Sequence[ConfigResult],
    label_of: Mapping[str, str] | None = None,
    wall_seconds: float | None = None,
    warning: str | None = None,
) -> str:
    """One row per config (label, then the long name last, where it may run off the screen),
    then a total row: the build time of this run's configs and, given, the wall-clock time.
    A config an earlier run built shows that run's time, which the total leaves out."""
    label_of = label_of or {}
    rows = [("status", "time", "pkgs", "ccache", "label", "config")]
    built = 0.0
    for r in results:
        ran = r.seconds is not None and r.status != SKIPPED
        if ran and not r.earlier and r.seconds is not None:
            built += r.seconds
        rows.append(
            (
                _status_cell(r),
                format_duration(r.seconds) if ran and r.seconds is not None else "-",
                str(len(r.packages)) if r.status in (DONE, SKIPPED) else "-",
                r.ccache.describe() if r.ccache else "-",
                label_of.get(r.config, "-"),
                r.config,
            )
        )
    packages = sum(len(r.packages) for r in results if r.status in (DONE, SKIPPED))
    earlier = sum(1 for r in results if r.earlier)
    what = f"{len(results)} configs" + (f", {earlier} built by an earlier run" if earlier else "")
    wall = f" (wall clock {format_duration(wall_seconds)})" if wall_seconds is not None else ""
    rows.append(
        ("total", format_duration(built), str(packages), "-", f"{what}{wall}", warning or "")
    )
    widths = [max(len(row[i]) for row in rows[:-1]) for i in range(5)]
    return "\n".join(
        (
            "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:5])) + "  " + row[5]
        ).rstrip()
        for row in rows
    )


def report_run(
    root: Path,
    outcome: RunOutcome,
    files: BatchFiles,
    started: float,
    console: Console,
    label_of: Mapping[str, str] | None = None,
) -> int:
    """The table, where the files are, and the outcome; each of these lines carries the
    dirty-tree warning when a record of the batch names one."""
    label_of = label_of or {}
    results = outcome.results
    warning = dirty_warning(read_summary(files.summary.parent))
    tail = f"; {warning}" if warning else ""
    console.say()
    table = summary_table(results, label_of, wall_seconds=time.time() - started, warning=warning)
    console.say(table)
    console.say()

    def rel(path: Path) -> str:
        return path.relative_to(root).as_posix()

    console.say(
        f"summary: {rel(files.summary)}; checksums: {rel(files.sha256sums)}; "
        f"logs: {rel(files.log_zip)}{tail}"
    )
    if outcome.interrupted:
        console.say(f"interrupted: rerun the same command to resume where it stopped{tail}")
        return EXIT_INTERRUPTED
    failed = [label_of.get(r.config, r.config) for r in results if r.status == FAILED]
    if failed:
        raise ProblemsFound(
            f"{len(failed)} of {len(results)} config(s) failed: {', '.join(failed)} "
            f"(`python -m tools review why '{failed[0]}'` shows the first error; "
            f"all: build_artifacts/summary.json and <config>-log.txt){tail}"
        )
    return 0
