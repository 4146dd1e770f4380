"""A persistent compiler cache for local builds (``--ccache DIR``).

How it reaches the compiler, step by step:

1. build-locally mounts DIR at ``/home/conda/ccache`` and sets ``CCACHE_DIR`` in the
   container (through ``CONDA_FORGE_DOCKER_RUN_ARGS``, which both our and
   conda-smithy's run_docker_build.sh append to ``docker run``).
2. Our ``.scripts/build_steps.sh`` sees ``CCACHE_DIR``, installs ``ccache`` next to
   conda-build (so it is on the PATH that conda-build hands to build scripts) and
   writes ``~/.config/ccache/ccache.conf``: conda-build passes HOME to build scripts
   but not CCACHE_DIR, so the config file is what carries the cache location.  It
   also builds with ``--no-build-id`` so the work folder has the same path every
   time and the cached compile commands match.
3. PyTorch's CMake looks for ``ccache`` on PATH (its ``USE_CCACHE`` option is on by
   default) and uses it as the compiler launcher.
4. Around conda-build, build_steps.sh zeroes the statistics and afterwards writes
   ``ccache --print-stats`` to ``build_artifacts/ccache-stats-<config>.txt``, which
   build-locally reads into the summary.

conda-smithy's generated build_steps.sh does none of step 2, so with those
scripts the cache directory is mounted but stays empty (the summary says "n/a").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CONTAINER_DIR = "/home/conda/ccache"


@dataclass(frozen=True)
class CcacheStats:
    hits: int
    misses: int

    @property
    def hit_rate(self) -> float | None:
        total = self.hits + self.misses
        return self.hits / total if total else None

    def describe(self) -> str:
        rate = self.hit_rate
        return "n/a" if rate is None else f"{rate:.0%}"


def from_json(data: object) -> CcacheStats | None:
    """The statistics a summary.json record keeps (an earlier run's), or None."""
    if not isinstance(data, dict):
        return None
    hits, misses = data.get("hits"), data.get("misses")
    if isinstance(hits, int) and isinstance(misses, int):
        return CcacheStats(hits, misses)
    return None


def stats_file(artifacts: Path, config: str) -> Path:
    return artifacts / f"ccache-stats-{config}.txt"


def docker_args(host_dir: Path, volume_options: str) -> list[str]:
    return [
        "-v",
        f"{host_dir}:{CONTAINER_DIR}:{volume_options}",
        "-e",
        f"CCACHE_DIR={CONTAINER_DIR}",
    ]


def parse_stats(text: str) -> CcacheStats | None:
    """Read ``ccache --print-stats`` (tab-separated ``key value`` lines, ccache >= 4.4)."""
    counters: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition("\t")
        if value.strip().isdigit():
            counters[key.strip()] = int(value)
    if "cache_miss" not in counters:
        return None
    hits = counters.get("direct_cache_hit", 0) + counters.get("preprocessed_cache_hit", 0)
    return CcacheStats(hits=hits, misses=counters["cache_miss"])


def read_stats(artifacts: Path, config: str) -> CcacheStats | None:
    path = stats_file(artifacts, config)
    try:
        return parse_stats(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
