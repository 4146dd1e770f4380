"""The suite (`python -m pytest`, as .ci/run runs it) and the quick loop
(`python -m pytest -m "not slow"`, docs/testing.md) run their test files on every core, one
file per worker; asked for a path, or for `-n`, pytest does as asked."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _pytest(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    return result.stdout


def test_the_quick_loop_starts_a_worker_per_core() -> None:
    # the quick loop's own command line, its test paths narrowed to one small file
    out = _pytest("-m", "not slow", "-o", "testpaths=tests/e2e/test_smoke.py")
    assert re.search(r"^created: (\d+)/\1 workers$", out, flags=re.MULTILINE), out


def test_the_whole_suite_starts_a_worker_per_core() -> None:
    # .ci/run's command line (no marker), its test paths narrowed to one small file: before,
    # only the quick loop ran in parallel, and CI's run took a core's time for every file
    out = _pytest("-o", "testpaths=tests/e2e/test_smoke.py")
    assert re.search(r"^created: (\d+)/\1 workers$", out, flags=re.MULTILINE), out


def test_collect_only_lists_the_tests_in_this_process() -> None:
    out = _pytest("--collect-only", "-q", "-o", "testpaths=tests/e2e/test_smoke.py")
    assert "workers" not in out and "test_smoke.py::" in out


def test_a_path_given_runs_in_this_process() -> None:
    out = _pytest("-m", "not slow", "tests/e2e/test_smoke.py")
    assert "workers" not in out


class _Item:
    """What the ordering reads of a collected test: its file and its `slow` mark."""

    def __init__(self, path: str, slow: bool) -> None:
        self.path, self.slow = Path(path), slow

    def get_closest_marker(self, name: str) -> object:
        return self if name == "slow" and self.slow else None


def _root_conftest():
    """tests/conftest.py by its path: the name ``conftest`` is also tests/unit's."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "conftest.py"
    spec = importlib.util.spec_from_file_location("tests_root_conftest", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_under_xdist_the_files_that_hold_slow_tests_are_handed_out_first(monkeypatch) -> None:
    # A long file handed out last runs alone while the other core idles: the warm suite took
    # 11 min 18 s for 570 s of work per core, xdist handing out the files with most tests first.
    # The quick files keep that order (their tests are short: the many-test files first).
    pytest_collection_modifyitems = _root_conftest().pytest_collection_modifyitems

    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    items = [
        _Item("tests/test_a.py", False),
        _Item("tests/test_b.py", False),
        _Item("tests/test_b.py", True),
        _Item("tests/test_c.py", True),
        _Item("tests/test_d.py", False),
        _Item("tests/test_d.py", False),
    ]
    pytest_collection_modifyitems(None, items)
    assert [(str(i.path), i.slow) for i in items] == [
        ("tests/test_b.py", False),
        ("tests/test_b.py", True),
        ("tests/test_c.py", True),
        ("tests/test_d.py", False),
        ("tests/test_d.py", False),
        ("tests/test_a.py", False),
    ]
