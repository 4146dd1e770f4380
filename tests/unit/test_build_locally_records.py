"""build-locally's records, without starting any process: log lines, build_artifacts/,
ccache statistics and the summary."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tools.foundation.errors import UserError
from tools.localbuild.batch.record import ConfigResult, classify
from tools.localbuild.batch.summary import summary_table
from tools.localbuild.engines.ccache import CcacheStats, parse_stats
from tools.localbuild.engines.watch.logtee import (
    LineSplitter,
    LogSink,
    clean,
    ninja_progress,
    phase_of,
    scrub,
)
from tools.localbuild.records import artifacts as art


@pytest.fixture(autouse=True)
def _no_processes(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("unit tests must not start processes")

    monkeypatch.setattr(subprocess, "Popen", refuse)


# ---------------------------------------------------------------- log lines


def test_log_lines_keep_what_a_terminal_shows_last() -> None:
    assert clean("\x1b[32mok\x1b[0m") == "ok"
    assert clean("Downloading 10%\rDownloading 100%\r") == "Downloading 100%"


def test_splitter_survives_utf8_split_across_reads() -> None:
    splitter = LineSplitter()
    data = "naïve line\r\nnext".encode()
    cut = data.index(b"\xc3") + 1
    assert splitter.feed(data[:cut]) == []
    assert splitter.feed(data[cut:]) == ["naïve line"]
    assert splitter.flush() == ["next"]


def test_scrub_redacts_known_values_and_github_token_shapes() -> None:
    token = "ghp_" + "a" * 36
    assert scrub(f"value tok-123456 and {token}", ["tok-123456"]) == "value *** and ***"


@pytest.mark.parametrize(
    ("line", "phase"),
    [
        ("::group::Configuring conda", "Configuring conda"),
        ("##[group]Inspecting artifacts", "Inspecting artifacts"),
        ("==> Running conda-build for x", "Running conda-build for x"),
        ("Configuring conda", "Configuring conda"),
        ("BUILD START: ['libtorch-2.13.0-h1_0.conda']", "build start 'libtorch-2.13.0-h1_0.conda'"),
        ("[12/9000] Building CXX object x.o", None),
        ("plain output", None),
    ],
)
def test_phase_of_recognises_group_markers(line: str, phase: str | None) -> None:
    assert phase_of(line) == phase


def test_ninja_progress_is_read_from_status_lines() -> None:
    assert ninja_progress("[12/9000] Building CXX object x.o") == (12, 9000)
    assert ninja_progress("[done]") is None


def test_log_sink_timestamps_and_redacts(tmp_path: Path) -> None:
    sink = LogSink(tmp_path / "x-log.txt", ["tok-123456"], clock=lambda: 3600 * 5 + 61)
    assert sink.line("token tok-123456") == "token ***"
    sink.close()
    assert (tmp_path / "x-log.txt").read_text() == "[05:01:01] token ***\n"


# ---------------------------------------------------------------- artifacts


def test_produced_packages_are_new_or_changed_ones() -> None:
    before = {"linux-64/a.conda": (1, 1), "linux-64/b.conda": (1, 1)}
    after = {"linux-64/a.conda": (1, 1), "linux-64/b.conda": (2, 5), "noarch/c.tar.bz2": (1, 1)}
    assert art.produced(before, after) == ["linux-64/b.conda", "noarch/c.tar.bz2"]


def test_sha256sums_lists_packages_in_channel_folders_only(tmp_path: Path) -> None:
    (tmp_path / "linux-64").mkdir()
    (tmp_path / "linux-64" / "libtorch-2.13.0-h0_0.conda").write_bytes(b"abc")
    (tmp_path / "pkg_cache").mkdir()
    (tmp_path / "pkg_cache" / "cached-1.0-0.conda").write_bytes(b"cached")
    art.write_sha256sums(tmp_path)
    assert (tmp_path / "SHA256SUMS").read_text() == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  "
        "linux-64/libtorch-2.13.0-h0_0.conda\n"
    )
    assert not list(tmp_path.glob(".SHA256SUMS*"))


def test_work_dirs_are_conda_build_timestamped_folders(tmp_path: Path) -> None:
    for name in ("libtorch_1732000000123", "pkg_cache", "linux-64", "src_cache"):
        (tmp_path / name).mkdir()
    assert art.work_dirs(tmp_path) == {"libtorch_1732000000123"}
    assert art.remove_work_dirs(tmp_path, ["libtorch_1732000000123", "../etc_1732000000123"]) == [
        "libtorch_1732000000123"
    ]


def test_earlier_log_is_set_aside_not_overwritten(tmp_path: Path) -> None:
    art.log_path(tmp_path, "cfg").write_text("first attempt\n")
    moved = art.set_aside_old_log(tmp_path, "cfg")
    assert moved is not None and moved.read_text() == "first attempt\n"
    assert not art.log_path(tmp_path, "cfg").exists()


def test_unreadable_summary_is_treated_as_absent(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text("{not json")
    assert art.read_summary(tmp_path) == {}
    (tmp_path / "summary.json").write_text(json.dumps({"configs": {"a": {"status": "done"}}}))
    assert art.read_summary(tmp_path) == {"a": {"status": "done"}}


# ---------------------------------------------------------------- ccache and summary


def test_ccache_print_stats_hits_are_direct_plus_preprocessed() -> None:
    stats = parse_stats("direct_cache_hit\t7\npreprocessed_cache_hit\t1\ncache_miss\t2\n")
    assert stats == CcacheStats(hits=8, misses=2) and stats.describe() == "80%"


def test_ccache_stats_without_counters_are_unknown() -> None:
    assert parse_stats("not ccache output") is None


@pytest.mark.parametrize(
    ("returncode", "interrupted", "marker", "status"),
    [
        (0, False, True, "done"),
        (0, False, False, "failed"),  # the script ended early without failing: not done
        (1, False, False, "failed"),
        (130, True, False, "interrupted"),
        (0, True, True, "interrupted"),
    ],
)
def test_classify_counts_only_a_clean_exit_with_marker_as_done(
    returncode, interrupted, marker, status
) -> None:
    assert classify(returncode, interrupted, marker)[0] == status


def test_summary_table_lists_every_config_with_its_status() -> None:
    results = [
        ConfigResult(
            "cfg_a",
            "done",
            seconds=3725,
            packages=(art.Package("linux-64/a.conda", "0" * 64, 1),),
            ccache=CcacheStats(3, 1),
        ),
        ConfigResult("cfg_b", "failed", seconds=60),
        ConfigResult("cfg_c", "pending"),
    ]
    labels = {"cfg_a": "linux-64 cpu", "cfg_b": "win-64 cuda12.9", "cfg_c": "osx-64 cpu"}
    lines = summary_table(results, labels).splitlines()
    assert lines[0].split() == ["status", "time", "pkgs", "ccache", "label", "config"]
    assert lines[1].split() == ["done", "1:02:05", "1", "75%", "linux-64", "cpu", "cfg_a"]
    assert lines[2].split() == ["FAILED", "0:01:00", "-", "-", "win-64", "cuda12.9", "cfg_b"]
    assert lines[3].split() == ["pending", "-", "-", "-", "osx-64", "cpu", "cfg_c"]


def test_summary_table_ends_with_the_total_build_and_wall_clock_time() -> None:
    results = [
        ConfigResult("a", "done", seconds=3600, packages=(art.Package("p", "0" * 64, 1),)),
        ConfigResult("b", "failed", seconds=1800),
        ConfigResult("c", "skipped", seconds=999),  # built by an earlier run: not this run's time
    ]
    total = summary_table(results, wall_seconds=5410).splitlines()[-1]
    assert total.split() == ["total", "1:30:00", "1", "-", "3", "configs", "(wall", "clock",
                             "1:30:10)"]  # fmt: skip


def test_summary_table_keeps_an_earlier_runs_build_out_of_this_runs_total() -> None:
    results = [
        ConfigResult("a", "done", seconds=3600, earlier=True),
        ConfigResult("b", "done", seconds=60),
        ConfigResult("w", "skipped", reason="cannot build here (Windows)"),
    ]
    lines = summary_table(results).splitlines()
    assert lines[1].split()[:5] == ["done", "(earlier", "run)", "1:00:00", "0"]
    assert lines[3].split()[:7] == ["skipped:", "cannot", "build", "here", "(Windows)", "-", "0"]
    assert lines[-1].split()[:2] == ["total", "0:01:00"]
    assert "3 configs, 1 built by an earlier run" in lines[-1]


def _record(machine: str, commit: str, packages=("linux-64/a.conda",)) -> dict[str, object]:
    return {
        "status": "done",
        "machine": machine,
        "packages": [{"path": p, "sha256": "0" * 64, "size": 1} for p in packages],
        "provenance": {"machine": machine, "commit": commit, "dirty": False},
    }


def test_merge_refuses_one_config_built_from_two_commits_naming_machines_and_field() -> None:
    from tools.review.merge import Source, choose_records

    sources = [
        Source(Path(name), None, None, (), {"cfg": _record(name, commit)})
        for name, commit in (("alpha", "a" * 40), ("beta", "b" * 40))
    ]
    with pytest.raises(UserError) as excinfo:
        choose_records(sources)
    assert str(excinfo.value).startswith(
        f"review merge: cfg was built on alpha and on beta with a different commit ({'a' * 40} vs "
    )


def test_merge_prefers_another_machines_failure_to_a_config_filtered_out_here() -> None:
    from tools.review.merge import Source, choose_records

    here = {"cfg": {"status": "skipped", "reason": "filtered out"}}
    there = {"cfg": {"status": "failed", "machine": "beta", "note": "exit status 1"}}
    sources = [Source(Path("a"), None, None, (), here), Source(Path("b"), None, None, (), there)]
    assert choose_records(sources)["cfg"].record["status"] == "failed"
