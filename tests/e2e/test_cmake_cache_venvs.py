"""The cached virtual environments the miniature build tests share between runs.

Several pytest processes (a developer's run next to CI's, or parallel helpers) may
ask for the same venv at once; each must get a complete one, and a half-built venv
left at the cached path must never be reused.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import setuptools
from helpers.minitorch.support import (
    Interpreter,
    base_venv,
    find_interpreters,
    run,
    venv_python,
)

pytestmark = pytest.mark.slow

TESTS_DIR = Path(__file__).resolve().parents[2] / "tests"
THIS_PYTHON = Interpreter(Path(sys.executable), (sys.version_info[0], sys.version_info[1]))


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path


def _imports_setuptools(venv: Path) -> bool:
    return run([venv_python(venv), "-c", "import setuptools"], check=False).returncode == 0


def test_a_half_built_venv_at_the_cached_path_is_replaced(cache_home: Path) -> None:
    expected = base_venv(THIS_PYTHON, flavour="partial")
    # What an interrupted, non-atomic creation leaves: an interpreter, no setuptools.
    run([sys.executable, "-m", "venv", "--clear", "--without-pip", expected])
    assert not _imports_setuptools(expected)

    assert base_venv(THIS_PYTHON, flavour="partial") == expected
    assert _imports_setuptools(expected)


def test_a_venv_of_another_python_at_the_cached_path_is_replaced(cache_home: Path) -> None:
    other = next((i for i in find_interpreters() if i.version != THIS_PYTHON.version), None)
    if other is None:
        pytest.skip("one Python version only")
    expected = base_venv(THIS_PYTHON, flavour="moved")
    # Complete but for its Python: setuptools importable (this interpreter's pure-Python copy,
    # through a .pth file, instead of a pip install that costs the suite seconds per run).
    run([other.executable, "-m", "venv", "--clear", "--without-pip", expected])
    probe = run([venv_python(expected), "-c", "import site; print(site.getsitepackages()[0])"])
    (Path(probe.stdout.strip()) / "host-setuptools.pth").write_text(
        f"{Path(setuptools.__file__).parent.parent}\n"
    )
    assert _imports_setuptools(expected)

    assert base_venv(THIS_PYTHON, flavour="moved") == expected
    probe = run([venv_python(expected), "-c", "import sys; print(*sys.version_info[:2])"])
    assert tuple(map(int, probe.stdout.split())) == THIS_PYTHON.version


def test_concurrent_requests_for_one_venv_all_get_a_complete_one(cache_home: Path) -> None:
    script = (
        "import sys; from pathlib import Path; "
        "from helpers.minitorch.support import Interpreter, base_venv; "
        "print(base_venv(Interpreter(Path(sys.executable), sys.version_info[:2]), 'race'))"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            cwd=TESTS_DIR,
            env={**os.environ, "PYTHONPATH": str(TESTS_DIR)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)  # two are a race; each one more builds one more venv
    ]
    results = [proc.communicate(timeout=600) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], [err for _, err in results]
    paths = {out.strip() for out, _ in results}
    assert len(paths) == 1
    venvs = cache_home / "pytorch-feedstock-tests" / "venvs"
    assert [p.name for p in venvs.iterdir()] == [Path(paths.pop()).name]
    assert _imports_setuptools(next(venvs.iterdir()))
