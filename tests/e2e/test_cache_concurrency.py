"""Two test runs on one machine share ~/.cache/pytorch-feedstock-tests (CI's run next to a
developer's, or two worktrees): each cache entry they build at the same moment must come out
whole, the one published first is the one both use, and nobody sees an entry half-built.

The runs here are real processes meeting at a barrier, so that they publish together.
"""

from __future__ import annotations

import multiprocessing
import os
import time
import zipfile
from pathlib import Path

import pytest
from helpers.cache import (
    CacheError,
    cached_dir,
    pip_download,
    publish_dir,
    publish_file,
    staging,
    unpacked_wheel,
)
from helpers.standin_channel.channel import _build_libraries, add_to_pool

# fork: the children inherit sys.path (tests/ and the repository) from this process.
FORK = multiprocessing.get_context("fork")
PACKAGE = Path("linux-64", "stand-in-1.0-h0_0.conda")


def _run_together(target, args_per_process: list[tuple]) -> list:
    """Run ``target(barrier, *args)`` in one process per argument tuple; their results."""
    barrier = FORK.Barrier(len(args_per_process))
    results = FORK.Queue()

    def child(index: int, args: tuple) -> None:
        try:
            results.put((index, "ok", target(barrier, *args)))
        except BaseException as error:  # the parent reports it
            results.put((index, "error", f"{type(error).__name__}: {error}"))

    procs = [FORK.Process(target=child, args=(i, a)) for i, a in enumerate(args_per_process)]
    for proc in procs:
        proc.start()
    got = sorted(results.get(timeout=300) for _ in procs)
    for proc in procs:
        proc.join(timeout=60)
    assert [status for _, status, _ in got] == ["ok"] * len(procs), got
    return [value for _, _, value in got]


def _publish_package(barrier, built_by: Path, entry: Path) -> str:
    made = built_by / PACKAGE
    made.parent.mkdir(parents=True)
    made.write_bytes(built_by.name.encode() * 100_000)
    barrier.wait()
    return str(add_to_pool([made], entry))


def test_two_runs_adding_one_package_to_the_channel_pool_both_use_the_first(
    tmp_path: Path,
) -> None:
    pool = tmp_path / "pool"
    pool.mkdir()
    entry = pool / "c70f5b0ccb8a03a0"
    first, second = tmp_path / "run-a", tmp_path / "run-b"

    found = _run_together(_publish_package, [(first, entry), (second, entry)])

    assert found == [str(entry), str(entry)]
    content = (entry / PACKAGE).read_bytes()
    assert content in (b"run-a" * 100_000, b"run-b" * 100_000)
    assert [p.name for p in pool.iterdir()] == [entry.name]  # no staging folder left


def _build_once_counted(barrier, entry: Path, log: Path) -> str:
    def build(folder: Path) -> None:
        with log.open("a") as handle:  # one line per build, whichever run made it
            handle.write(f"{os.getpid()}\n")
        time.sleep(2)  # long enough for the other run to ask for the entry meanwhile
        (folder / "ready").write_text("built\n")

    barrier.wait()
    return str(cached_dir(entry, build, lambda found: (found / "ready").is_file()))


def test_the_second_of_two_cold_runs_waits_for_the_firsts_entry_instead_of_building_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # the locks of this test
    entry, log = tmp_path / "entries" / "replay", tmp_path / "builds.log"

    found = _run_together(_build_once_counted, [(entry, log), (entry, log)])

    assert found == [str(entry), str(entry)]
    assert len(log.read_text().splitlines()) == 1  # built once; the other run used it


def _libraries(barrier, root: Path) -> str:
    barrier.wait()
    return str(_build_libraries(root))


@pytest.mark.slow
def test_two_runs_building_the_stand_in_libraries_at_once_get_one_whole_prefix(
    tmp_path: Path,
) -> None:
    found = _run_together(_libraries, [(tmp_path,), (tmp_path,)])

    [prefix] = set(found)
    assert Path(prefix).parent == tmp_path / "libs"
    assert sorted(p.name for p in (tmp_path / "libs").iterdir()) == [Path(prefix).name]
    assert (Path(prefix) / "include" / "cblas.h").is_file()
    assert (Path(prefix) / "include" / "magma.h").is_file()
    assert sorted((Path(prefix) / "lib").glob("libmagma.so*"))


def _publish_folder(barrier, entry: Path, name: str) -> str:
    with staging(entry) as folder:
        (folder / "made-by").write_text(name)
        (folder / "ready").write_text("")
        barrier.wait()
        return str(publish_dir(folder, entry, lambda found: (found / "ready").is_file()))


def test_many_runs_publishing_one_entry_all_get_the_same_whole_entry(tmp_path: Path) -> None:
    entry = tmp_path / "channels" / "digest"
    names = [f"run-{i}" for i in range(4)]

    found = _run_together(_publish_folder, [(entry, name) for name in names])

    assert set(found) == {str(entry)}
    assert sorted(p.name for p in entry.iterdir()) == ["made-by", "ready"]
    assert (entry / "made-by").read_text() in names
    assert [p.name for p in entry.parent.iterdir()] == ["digest"]


def test_an_incomplete_entry_in_the_way_is_not_used(tmp_path: Path) -> None:
    entry = tmp_path / "digest"
    (entry / "half").mkdir(parents=True)  # what a non-atomic writer, killed, left behind
    with staging(entry) as folder:
        (folder / "ready").write_text("")
        with pytest.raises(CacheError, match="incomplete cache entry is in the way; delete it"):
            publish_dir(folder, entry, lambda found: (found / "ready").is_file())


def test_a_file_published_first_is_kept(tmp_path: Path) -> None:
    entry = tmp_path / "torch.whl"
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    theirs.write_text("theirs")
    ours.write_text("ours")
    publish_file(theirs, entry)
    publish_file(ours, entry)
    assert entry.read_text() == "theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["torch.whl"]


# -- the wheel cache: pip download ---------------------------------------------------------


def _wheel(folder: Path, megabytes: int) -> Path:
    """A valid wheel, big enough that copying it takes a while: where a reader would catch a
    half-copied file, zipfile finds no central directory (it sits at the end)."""
    wheel = folder / "cachetest-1.0-py3-none-any.whl"
    info = "cachetest-1.0.dist-info"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("cachetest/blob.bin", os.urandom(megabytes << 20))
        archive.writestr(
            f"{info}/METADATA", "Metadata-Version: 2.1\nName: cachetest\nVersion: 1.0\n"
        )
        archive.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        archive.writestr(f"{info}/RECORD", "")
    return wheel


def _download(barrier, cache: Path, index: Path) -> str:
    barrier.wait()
    args = ["cachetest==1.0", "--no-deps", "--no-index", "--find-links", str(index)]
    return str(pip_download(cache, "cachetest-*.whl", args, timeout=300))


def _watch(barrier, cache: Path, seconds: float) -> list[str]:
    """Every wheel that showed up in ``cache`` unreadable until one showed up whole."""
    import time

    broken = []
    barrier.wait()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and len(broken) < 10:
        for wheel in cache.glob("cachetest-*.whl"):
            try:
                with zipfile.ZipFile(wheel) as archive:
                    archive.getinfo("cachetest-1.0.dist-info/METADATA")
                return broken
            except (zipfile.BadZipFile, KeyError, FileNotFoundError) as error:
                broken.append(f"{wheel.name}: {error}")
    return broken


@pytest.mark.slow
def test_a_wheel_two_runs_download_at_once_is_never_seen_half_written(tmp_path: Path) -> None:
    index, cache = tmp_path / "index", tmp_path / "wheels"
    index.mkdir()
    cache.mkdir()
    _wheel(index, megabytes=48)

    first, second, broken = _run_together(
        lambda barrier, job, *args: job(barrier, *args),
        [(_download, cache, index), (_download, cache, index), (_watch, cache, 120.0)],
    )

    assert first == second == str(cache / "cachetest-1.0-py3-none-any.whl")
    assert broken == []
    assert [p.name for p in cache.iterdir()] == ["cachetest-1.0-py3-none-any.whl"]


# -- the real torch wheel, unpacked -------------------------------------------------------

#: The part of the wheel the race unpacks: its ~9,400 headers and CMake files make a long
#: window of many small files, without writing the 450 MB of libraries twice.
TORCH_TREES = ("torch/include/", "torch/share/")


def _unpack_torch(barrier, finished, wheel: Path, entry: Path) -> str:
    barrier.wait()
    try:
        return str(unpacked_wheel(wheel, entry, TORCH_TREES))
    finally:
        with finished.get_lock():
            finished.value += 1


def _watch_unpacked(barrier, finished, wheel: Path, entry: Path, unpackers: int) -> list[str]:
    """Each time ``entry`` was visible but missing files, until the unpackers are done: what
    a test that had started using the first run's unpack would have seen."""
    with zipfile.ZipFile(wheel) as archive:
        names = [
            info.filename
            for info in archive.infolist()
            if not info.is_dir() and info.filename.startswith(TORCH_TREES)
        ]
    broken = []
    barrier.wait()
    deadline = time.monotonic() + 600
    while finished.value < unpackers and time.monotonic() < deadline and len(broken) < 5:
        if (entry / "torch").is_dir():
            missing = [name for name in names if not (entry / name).is_file()]
            if missing:
                broken.append(f"{len(missing)} of {len(names)} files missing: {missing[0]}")
    return broken


@pytest.mark.slow
def test_two_runs_unpacking_the_real_torch_wheel_at_once_never_show_a_partial_tree(
    torch_wheel: Path, tmp_path: Path
) -> None:
    entry = tmp_path / "wheels" / (torch_wheel.stem + ".unpacked")  # a private cache root
    finished = FORK.Value("i", 0)

    first, second, broken = _run_together(
        lambda barrier, job, *args: job(barrier, finished, *args),
        [
            (_unpack_torch, torch_wheel, entry),
            (_unpack_torch, torch_wheel, entry),
            (_watch_unpacked, torch_wheel, entry, 2),
        ],
    )

    assert first == second == str(entry)
    assert broken == []
    assert (entry / "torch" / "share" / "cmake" / "Torch" / "TorchConfig.cmake").is_file()
    assert [p.name for p in entry.parent.iterdir()] == [entry.name]  # no staging folder left
