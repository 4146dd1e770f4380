"""Fixtures shared by every test module.

- ``repo_root``: this checkout.
- ``reference_dir``: tests/fixtures/reference, conda-forge's data the tests compare with
  (its README.md names each file's source and licence); ``pinning_dir``: the pinning there.
- ``tests_cache_dir``: the per-machine cache outside the repository
  ($XDG_CACHE_HOME or ~/.cache, then pytorch-feedstock-tests) for downloads
  and root file systems that outlive one run.
- ``upstream_cp314t_wheel``: upstream's 2.15.0 wheel for the free-threaded 3.14t, likewise.
- ``torch_wheel``: the real PyTorch 2.13.0 CPU wheel, fetched once per machine
  with ``pip download`` into that cache; ``torch_site``: it unpacked there once
  (importable through PYTHONPATH; skips unless the wheel is this interpreter's).
- renders the toolkit keeps on disk (tools/foundation/diskcache.py) go to a folder of the session's
  own (shared by its xdist workers), for the commands the tests run too: a test sees the
  renders of the code under test, and the user's ~/.cache/pytorch-feedstock is left alone.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.cache import CacheError, pip_download, tests_cache_root, unpacked_wheel
from fixtures.feedstock_matrix import PINNING, REFERENCE

REPO_ROOT = Path(__file__).resolve().parent.parent
TORCH_VERSION = "2.13.0"


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """The suite (``python -m pytest``, as CI and .ci/run run it) and the quick loop
    (``-m "not slow"``) run on every core with pytest-xdist (requirements-test.txt), a test
    file per worker (module fixtures built once): most tests are subprocesses of the toolkit
    or of an engine, one core each, and the builds of one file wait on their downloads and
    solves. ``-n N`` (``-n 0``: one process), a path to run, ``--pdb`` or ``--collect-only``
    choose otherwise; so does a worker."""
    if (
        config.pluginmanager.hasplugin("xdist")
        and config.getoption("numprocesses", None) is None
        and config.args_source == pytest.Config.ArgsSource.TESTPATHS
        and not config.getoption("usepdb", False)
        and not config.getoption("collectonly", False)
        and "PYTEST_XDIST_WORKER" not in os.environ
    ):
        config.option.numprocesses = "auto"
        config.option.dist = "loadfile"
        # xdist would hand out the files with the most tests first, which puts the few long
        # tests of the slow files last; the collection's order (below) is the one to keep.
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist, the files that hold slow tests go first, then the others; within each, the
    files with the most tests first (xdist's own order), each file's tests in their own order.
    A worker takes a file at a time, and a long file handed out last runs alone while the other
    core idles: the warm suite took 11 min 18 s for 570 s of work per core when xdist put the
    few long tests of the slow files last. Every worker sorts alike, as xdist requires."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    counts = Counter(item.path for item in items)
    items.sort(key=lambda item: (item.path not in slow_files, -counts[item.path]))


@pytest.fixture(scope="session", autouse=True)
def _session_render_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    from tools.foundation.diskcache import ENV

    # One folder for every worker of an xdist run (their base folders share a parent): the
    # workers render the same recipe states, and an entry is written whole and renamed into
    # place, so one worker's render serves the other.
    base = tmp_path_factory.getbasetemp()
    if "PYTEST_XDIST_WORKER" in os.environ:
        base = base.parent
    path = base / "render-cache"
    path.mkdir(exist_ok=True)
    patch = pytest.MonkeyPatch()
    patch.setenv(ENV, str(path))
    yield path
    patch.undo()


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    return REFERENCE


@pytest.fixture(scope="session")
def pinning_dir() -> Path:
    """conda-forge's pinning, laid out like the installed conda-forge-pinning package."""
    return PINNING


@pytest.fixture(scope="session")
def tests_cache_dir() -> Path:
    path = tests_cache_root()
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def torch_wheel(tests_cache_dir: Path) -> Path:
    """The real torch 2.13.0 wheel for this Python, or skip when pip cannot get it."""
    try:
        return pip_download(
            tests_cache_dir / "wheels",
            f"torch-{TORCH_VERSION}*.whl",
            [f"torch=={TORCH_VERSION}", "--no-deps", "--only-binary=:all:"],
            timeout=1800,
        )
    except CacheError as error:
        pytest.skip(str(error))


@pytest.fixture(scope="session")
def torch_site(torch_wheel: Path) -> Path:
    """A directory holding the unpacked wheel, importable through PYTHONPATH."""
    if not torch_wheel.name.endswith(
        f"cp{sys.version_info[0]}{sys.version_info[1]}-"
        f"cp{sys.version_info[0]}{sys.version_info[1]}-manylinux_2_28_x86_64.whl"
    ):
        pytest.skip(f"{torch_wheel.name} does not run on this interpreter/machine")
    return unpacked_wheel(torch_wheel, torch_wheel.parent / (torch_wheel.stem + ".unpacked"))


@pytest.fixture(scope="session")
def upstream_cp314t_wheel(tests_cache_dir: Path) -> Path:
    """Upstream's torch 2.15.0 wheel for the free-threaded CPython 3.14t (Linux, tagged
    cp314-cp314t; about 540 MB, once per machine), or skip."""
    try:
        return pip_download(
            tests_cache_dir / "wheels",
            "torch-2.15.0-cp314-cp314t-manylinux_2_28_x86_64.whl",
            [
                "torch==2.15.0",
                *("--no-deps", "--only-binary=:all:", "--platform", "manylinux_2_28_x86_64"),
                *("--python-version", "3.14", "--abi", "cp314t"),
            ],
            timeout=3600,
            env={"PIP_CONSTRAINT": "/dev/null"},  # a machine-wide pin of torch
        )
    except CacheError as error:
        pytest.skip(str(error))


@pytest.fixture(scope="session")
def upstream_cuda13_wheel(tests_cache_dir: Path) -> Path:
    """Upstream's torch 2.14.1 wheel for CUDA 13 (Linux, CPython 3.11; about 555 MB, once per
    machine), whose device code and NEEDED libraries the check tests read; or skip."""
    try:
        return pip_download(
            tests_cache_dir / "wheels",
            "torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl",
            [
                "torch==2.14.1",
                *("--no-deps", "--only-binary=:all:", "--platform", "manylinux_2_28_x86_64"),
                *("--python-version", "3.11"),
            ],
            timeout=3600,
            env={"PIP_CONSTRAINT": "/dev/null"},  # a machine-wide pin of torch
        )
    except CacheError as error:
        pytest.skip(str(error))


# Upstream's 2.15.0 wheels of the three platforms the replays lay out (tests/test_layout_replay.py);
# one Python's wheel each: the file layout does not depend on it.
UPSTREAM_WHEELS = {
    "linux-64": ("manylinux_2_28_x86_64", "manylinux_2_28_x86_64"),
    "osx-arm64": ("macosx_14_0_arm64", "macosx_*_arm64"),
    "win-64": ("win_amd64", "win_amd64"),
}


@pytest.fixture(scope="session")
def upstream_2_15_wheel(tests_cache_dir: Path):
    """The real torch 2.15.0 wheel for a platform (a function of it), or skip."""

    def get(platform: str) -> Path:
        tag, pattern = UPSTREAM_WHEELS[platform]
        try:
            return pip_download(
                tests_cache_dir / "wheels",
                f"torch-2.15.0-cp312-cp312-{pattern}.whl",
                [
                    "torch==2.15.0",
                    "--no-deps",
                    "--only-binary=:all:",
                    "--platform",
                    tag,
                    "--python-version",
                    "3.12",
                ],
                timeout=3600,
                # A machine-wide pip constraint may pin torch to the recipe's release.
                env={"PIP_CONSTRAINT": "/dev/null"},
            )
        except CacheError as error:
            pytest.skip(str(error))

    return get
