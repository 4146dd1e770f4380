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

from tools.localbuild import artifacts as art
from tools.localbuild import ccache
from tools.localbuild.plan import BuildPlan

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


def built_earlier(plan: BuildPlan, previous: Mapping[str, object], root: Path) -> ConfigResult:
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


def write_records(
    root: Path, artifacts: Path, results: Sequence[ConfigResult], started: float
) -> art.BatchFiles:
    """summary.json (this run's results over the earlier run's records), SHA256SUMS, logs zip."""
    records = art.read_summary(artifacts)
    for result in results:
        untouched = result.status == PENDING or result.note.startswith(UNBUILDABLE)
        if untouched and result.config in records:
            continue  # keep what an earlier run learnt about a config this run never reached
        records[result.config] = result.to_json()
    document = art.summary_document(
        feedstock=root.name,
        started=utc(started),
        finished=utc(),
        this_run=[r.config for r in results],
        configs=records,
    )
    return art.write_batch_files(artifacts, document)
