"""The record stage: what the batch learnt about each config, kept in summary.json.

A config is done when its ``build_artifacts/conda-forge-build-done-<config>``
marker exists: the .scripts delete it before building and touch it as their
very last step, so a failed or interrupted build never leaves one, and the
next run retries exactly what is missing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tools.localbuild.engines import ccache
from tools.localbuild.engines.plan import BuildPlan
from tools.localbuild.records import artifacts as art
from tools.localbuild.records.provenance import Provenance

DONE, FAILED, INTERRUPTED, SKIPPED, PENDING = "done", "failed", "interrupted", "skipped", "pending"
UNBUILDABLE = "cannot build on this machine"
# Why a config was not built: the reason column of summary.json, the table and report.md.
FILTERED_OUT = "filtered out"
FAILED_EARLIER = "failed earlier, not retried"
OS_NAMES = {"linux": "Linux", "osx": "macOS", "win": "Windows"}


def cannot_build_here(os_name: str) -> str:
    return f"cannot build here ({OS_NAMES.get(os_name, os_name)})"


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
    machine: str = ""  # the host that built it: the review report's timeline groups by it
    reason: str = ""  # why a skipped config was not built (FILTERED_OUT, cannot_build_here)
    earlier: bool = False  # done by an earlier run of this build_artifacts/ (a resume)
    provenance: Provenance | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "status": self.status,
            "reason": self.reason or None,
            "earlier_run": self.earlier,
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
            "provenance": None if self.provenance is None else self.provenance.to_json(),
        }


def utc(seconds: float | None = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def classify(returncode: int | None, interrupted: bool, marker: bool) -> tuple[str, str]:
    """A config's status and why; only a clean exit *and* the done marker count as done."""
    if interrupted:
        return INTERRUPTED, "stopped by the user; rerun to resume"
    if returncode == 0 and marker:
        return DONE, ""
    if returncode == 0:
        return FAILED, "the build ended without its done marker"
    return FAILED, f"exit status {returncode}"


def package_entries(record: Mapping[str, object]) -> list[Mapping[str, object]]:
    """A config record's ``packages`` entries that are objects: a summary edited by hand or
    cut short may hold anything there, and a reader skips what is not one."""
    entries = record.get("packages")
    return [p for p in entries if isinstance(p, dict)] if isinstance(entries, list) else []


def built_earlier(plan: BuildPlan, previous: Mapping[str, object], root: Path) -> ConfigResult:
    """A config an earlier run built (its done marker is there): still done, with what that
    run recorded (packages, duration, machine, date, provenance), marked as earlier."""
    log = plan.log.relative_to(root).as_posix() if plan.log.exists() else None
    if previous.get("status") != DONE:  # summary.json was lost or rewritten since
        return ConfigResult(
            plan.config,
            DONE,
            returncode=0,
            note="built by an earlier run whose record is lost; --force rebuilds",
            log=log,
            earlier=True,
        )
    packages = tuple(
        art.Package(str(p["path"]), str(p["sha256"]), int(p["size"]))
        for p in package_entries(previous)
        if {"path", "sha256", "size"} <= p.keys()
    )
    seconds = previous.get("duration_seconds")
    machine = previous.get("machine")
    started = previous.get("started")
    return ConfigResult(
        config=plan.config,
        status=DONE,
        seconds=float(seconds) if isinstance(seconds, (int, float)) else None,
        returncode=0,
        started=started if isinstance(started, str) else None,
        packages=packages,
        ccache=ccache.from_json(previous.get("ccache")),
        note="built by an earlier run; --force rebuilds",
        log=log,
        machine=machine if isinstance(machine, str) else "",
        earlier=True,
        provenance=Provenance.from_json(previous.get("provenance")),
    )


def carried_over(record: Mapping[str, object]) -> dict[str, object]:
    """An earlier run's record of a config this run did not select: kept, except that an
    attempt that failed is now a config not built, for that reason."""
    kept = dict(record)
    if kept.get("status") == DONE:
        kept["earlier_run"] = True
    elif kept.get("status") in (FAILED, INTERRUPTED):
        kept.update(status=SKIPPED, reason=FAILED_EARLIER, earlier_status=kept.get("status"))
    return kept


def write_records(
    root: Path,
    artifacts: Path,
    results: Sequence[ConfigResult],
    started: float,
    matrix: Sequence[str] = (),
) -> art.BatchFiles:
    """summary.json (this run's results over the earlier run's records), SHA256SUMS, logs zip.

    Every config of ``matrix`` gets a record, so that a reviewer sees each one built or
    explained: one nobody selected yet is skipped as filtered out."""
    records = {name: carried_over(r) for name, r in art.read_summary(artifacts).items()}
    for result in results:
        untouched = result.status == PENDING or result.note.startswith(UNBUILDABLE)
        if untouched and result.config in records:
            continue  # keep what an earlier run learnt about a config this run never reached
        records[result.config] = result.to_json()
    for name in matrix:
        if name not in records:
            records[name] = ConfigResult(name, SKIPPED, reason=FILTERED_OUT).to_json()
    document = art.summary_document(
        feedstock=root.name,
        started=utc(started),
        finished=utc(),
        this_run=[r.config for r in results],
        configs=records,
    )
    return art.write_batch_files(artifacts, document)
