"""`--ccache DIR` through the embedded engine, measured with the real ccache (issue 43).

`python build-locally.py CPU_CONFIG --ccache DIR` builds the miniature (one Python, no test
phase) in a throw-away copy of this feedstock (tests/helpers/e2e_feedstock.py, the stand-in
channel of tests/e2e/test_e2e_real_engine.py), with the machine's ccache on PATH as the compiler
launcher; then once more from a second copy in another folder, with the same DIR, as a
second checkout (or a rebuild after the work folder went) does. The engine writes
`ccache --print-stats` to build_artifacts/ccache-stats-<config>.txt, read here with the
toolkit's own parser: the first build compiles everything, the second nothing.
"""

from __future__ import annotations

import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.debian import apt_install, can_install
from helpers.e2e_feedstock import CPU, PYTHONS, E2EFeedstock, e2e_channel

from tools.localbuild.engines.ccache import CcacheStats, parse_stats, stats_file

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="builds linux-64 packages"),
]


@dataclass(frozen=True)
class Build:
    feedstock: E2EFeedstock
    stats: CcacheStats
    seconds: float


def real_ccache() -> Path:
    """The machine's ccache; CI installs Debian's, elsewhere a skip."""
    found = shutil.which("ccache")
    if found is None and can_install():
        apt_install("ccache")
        found = shutil.which("ccache")
    if found is None:
        pytest.skip("ccache is not installed (apt-get install ccache)")
    return Path(found)


def _build(tmp: Path, channel: Path, ccache: Path, cache_dir: Path) -> Build:
    fs = E2EFeedstock.make_embedded(
        tmp,
        CPU.name,
        channel,
        pythons=PYTHONS[:1],
        options="--no-test",
        ccache=ccache,
        ccache_dir=cache_dir,
    )
    start = time.monotonic()
    result = fs.build()
    seconds = time.monotonic() - start
    logs = sorted(fs.artifacts.glob("*-log.txt"))
    tail = "\n".join(logs[0].read_text().splitlines()[-60:]) if logs else result.stderr
    assert result.returncode == 0, f"build-locally.py {fs.config} failed:\n{tail}"
    text = stats_file(fs.artifacts, fs.config).read_text()
    stats = parse_stats(text)
    assert stats is not None, f"no ccache statistics in {stats_file(fs.artifacts, fs.config)}"
    return Build(fs, stats, seconds)


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Build, Build]:
    """The CPU config built twice, from two copies of the feedstock, on one cache folder."""
    channel = e2e_channel(tmp_path_factory)
    ccache = real_ccache()
    cache_dir = tmp_path_factory.mktemp("ccache")
    # Two folders whose paths differ, in length too: the engine builds in one work folder
    # whatever the clone's (tools/rattler_build/workroot.py), so the compile commands
    # and the host prefix's padded name are the same for both.
    first = _build(tmp_path_factory.mktemp("copy-a"), channel, ccache, cache_dir)
    second = _build(tmp_path_factory.mktemp("copy-b-longer"), channel, ccache, cache_dir)
    assert len(str(first.feedstock.artifacts)) != len(str(second.feedstock.artifacts))
    print(
        f"\nccache: first build {first.stats} in {first.seconds:.0f} s, "
        f"second {second.stats} in {second.seconds:.0f} s"
    )
    return first, second


def test_the_first_build_compiles_into_the_empty_cache(builds) -> None:
    first, _ = builds
    assert first.stats.misses > 0


def test_a_second_build_from_another_folder_takes_every_compile_from_the_cache(builds) -> None:
    first, second = builds
    assert first.feedstock.root != second.feedstock.root
    compiles = first.stats.hits + first.stats.misses
    assert (second.stats.hits, second.stats.misses) == (compiles, 0)
