"""Split the selected configs over N machines: ``build-locally.py --shard K/N``.

Every machine runs the same command with its own K, so the partition must come
out the same everywhere: it depends only on the selected config names, the
recipe and the ``--durations`` files, never on what a machine has already built
(resume skips done configs *inside* a shard, it never moves them to another).

Machines are balanced by expected build time, with the classic longest-first
rule (sort by cost, give each config to the least loaded machine).  Graham's
bound keeps its makespan within 4/3 of the best possible split; the tests check
that against brute force.

The cost model is deliberately rough: a release's 15 configs differ mostly in
whether they compile CUDA kernels, for how many GPU architectures, and how many
Pythons the megabuild retargets.  Measured durations (``summary.json`` of
earlier runs, ``--durations FILE``) replace it where known; the remaining
configs are scaled so model and measurement share one clock.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tools.foundation.errors import UserError
from tools.localbuild.records import artifacts as art
from tools.localbuild.schedule.facts import ConfigFacts

# Minutes on a 16-core machine, from the feedstock's own CFEP-03 logs (rounded): the C++
# libraries, one Python's rebuild and tests, and per GPU architecture the CUDA kernels.
LIBTORCH_MINUTES = 90.0
PER_PYTHON_MINUTES = 15.0
CUDA_MINUTES = 60.0
PER_CUDA_ARCH_MINUTES = 40.0
# When the recipe names no list for a CUDA version (a new migration), assume a typical one.
DEFAULT_CUDA_ARCHS = 8

_SHARD = re.compile(r"^(\d+)/(\d+)$")


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based, as typed
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    match = _SHARD.match(text.strip())
    if not match:
        raise UserError(
            f"--shard {text!r}: expected K/N, e.g. 2/3 for the second of three machines"
        )
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise UserError(f"--shard {text}: K must be between 1 and N (N at least 1)")
    return Shard(index, count)


def cuda_arch_counts(recipe_dir: Path) -> dict[tuple[str, str], int]:
    """(CUDA version, target platform) -> number of GPU architectures the build scripts
    compile: the rows of recipe/cuda_arch_lists.txt, which build.sh and bld.bat both export."""
    from tools.render.cuda_archs import ARCH_LISTS, parse_arch_list, read_rows

    if not (recipe_dir / ARCH_LISTS).is_file():
        return {}
    return {
        key: len(parse_arch_list(text).sass)
        for key, text in read_rows(recipe_dir / ARCH_LISTS).items()
    }


def model_minutes(facts: ConfigFacts, arch_counts: Mapping[tuple[str, str], int]) -> float:
    minutes = LIBTORCH_MINUTES + PER_PYTHON_MINUTES * facts.pythons
    if facts.cuda is not None:
        archs = arch_counts.get((facts.cuda, facts.target_platform), DEFAULT_CUDA_ARCHS)
        minutes += CUDA_MINUTES + PER_CUDA_ARCH_MINUTES * archs
    return minutes


def measured_seconds(paths: Iterable[Path]) -> dict[str, float]:
    """Durations of configs that built, from earlier summary.json files (later files win)."""
    found: dict[str, float] = {}
    for path in paths:
        document = art.load_summary(
            path, named=f"--durations {path}", hint="give a build_artifacts/summary.json"
        )
        configs = document["configs"]
        for name, record in configs.items():
            if not isinstance(record, dict) or record.get("status") not in ("done", "skipped"):
                continue  # a failed or interrupted build's time says nothing about a full one
            seconds = record.get("duration_seconds")
            if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds > 0:
                found[name] = float(seconds)
    return found


def expected_seconds(
    facts: Sequence[ConfigFacts],
    arch_counts: Mapping[tuple[str, str], int],
    measured: Mapping[str, float],
) -> dict[str, float]:
    """Measured where known, else the model scaled to the measured configs' clock."""
    model = {f.name: model_minutes(f, arch_counts) * 60.0 for f in facts}
    known = [name for name in model if name in measured]
    scale = 1.0
    if known:
        scale = sum(measured[n] for n in known) / sum(model[n] for n in known)
    return {name: measured.get(name, cost * scale) for name, cost in model.items()}


def partition(costs: Mapping[str, float], count: int) -> tuple[tuple[str, ...], ...]:
    """Longest first onto the least loaded machine; ties go by name, then machine number.

    Each part lists its configs in the order of ``costs`` (the user's selection order).
    """
    if count < 1:
        raise ValueError("at least one part")
    order = sorted(costs, key=lambda name: (-costs[name], name))
    heap = [(0.0, part) for part in range(count)]
    owner: dict[str, int] = {}
    for name in order:
        load, part = heapq.heappop(heap)
        owner[name] = part
        heapq.heappush(heap, (load + costs[name], part))
    return tuple(tuple(name for name in costs if owner[name] == part) for part in range(count))


def makespan(parts: Sequence[Sequence[str]], costs: Mapping[str, float]) -> float:
    return max((sum(costs[name] for name in part) for part in parts), default=0.0)


@dataclass(frozen=True)
class ShardChoice:
    names: tuple[str, ...]
    seconds: float  # expected build time of this shard
    longest_seconds: float  # expected time of the busiest shard (when the release is done)
    selected: int  # configs in the whole selection
    measured: int  # how many of this shard's estimates come from --durations

    def describe(self, shard: Shard) -> str:
        hours = self.seconds / 3600
        source = (
            f"{self.measured} measured, the rest from the cost model"
            if self.measured
            else "cost model"
        )
        return (
            f"shard {shard}: {len(self.names)} of {self.selected} configs, "
            f"expected {hours:.1f} h ({source}); the slowest shard needs "
            f"{self.longest_seconds / 3600:.1f} h"
        )


def choose_shard(
    facts: Sequence[ConfigFacts],
    shard: Shard,
    *,
    recipe_dir: Path,
    durations: Sequence[Path] = (),
) -> ShardChoice:
    measured = measured_seconds(durations)
    costs = expected_seconds(facts, cuda_arch_counts(recipe_dir), measured)
    parts = partition(costs, shard.count)
    mine = parts[shard.index - 1]
    return ShardChoice(
        names=mine,
        seconds=sum(costs[n] for n in mine),
        longest_seconds=makespan(parts, costs),
        selected=len(facts),
        measured=sum(1 for n in mine if n in measured),
    )
