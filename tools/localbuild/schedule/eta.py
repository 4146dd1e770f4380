"""How long the batch will take: expected seconds per config and the finish times they give.

A config's expected build time comes from ``--durations`` (earlier ``summary.json``
files) where they measured it, else from the shard cost model (``shard.py``), scaled
to the measured configs' clock when some were measured.  The source is always said,
because the cost model's minutes are a 16-core machine's and yours may differ.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tools.localbuild.schedule.facts import read_facts
from tools.localbuild.schedule.shard import cuda_arch_counts, expected_seconds

__all__ = ["Estimate", "clock_time", "estimate", "finish_text"]


@dataclass(frozen=True)
class Estimate:
    seconds: Mapping[str, float]  # config name -> expected build time
    measured: int  # how many of them --durations measured

    @property
    def source(self) -> str:
        if not self.measured:
            return "cost model"
        if self.measured == len(self.seconds):
            return "--durations"
        return (
            f"--durations for {self.measured}, cost model for {len(self.seconds) - self.measured}"
        )


def estimate(root: Path, names: Sequence[str], measured: Mapping[str, float]) -> Estimate:
    """``measured``: :func:`measured_seconds` of the --durations files."""
    facts = [read_facts(root / ".ci_support" / f"{name}.yaml") for name in names]
    seconds = expected_seconds(facts, cuda_arch_counts(root / "recipe"), measured)
    return Estimate(seconds, sum(1 for name in names if name in measured))


def clock_time(epoch: float, now: float) -> str:
    """``17:42Z`` today, ``Wed 03:10Z`` on another day (UTC, as the logs)."""
    same_day = time.gmtime(epoch)[:3] == time.gmtime(now)[:3]
    return time.strftime("%H:%MZ" if same_day else "%a %H:%MZ", time.gmtime(epoch))


def finish_text(*, now: float, elapsed: float, expected: float, after: float, source: str) -> str:
    """``ETA 17:42Z, batch Wed 03:10Z (cost model)``: the current config's expected finish,
    then the batch's (the configs after it add ``after`` seconds)."""
    left = max(expected - elapsed, 0.0)
    text = f"ETA {clock_time(now + left, now)}, batch {clock_time(now + left + after, now)}"
    if elapsed > expected:
        text += " (over the estimate)"
    return f"{text} ({source})"
