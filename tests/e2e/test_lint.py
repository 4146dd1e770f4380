"""The lint gate: ruff (the rules in pyproject.toml) and ``ruff format`` over every Python file,
shellcheck over the shell scripts that run in CI and in the build.

ruff comes with requirements-test.txt.  shellcheck is a Debian package: on CI (root,
CI=true) the fixture installs it with apt, as the QEMU tests install theirs; elsewhere
its tests skip with the command to run.  ``python -m pytest -m lint`` runs only this gate.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.debian import apt_install, can_install

pytestmark = pytest.mark.lint

REPO = Path(__file__).resolve().parents[2]
SHELL_SCRIPTS = [
    REPO / "recipe" / "build.sh",
    # The files build.sh sources: shellcheck reports nothing in a file it only follows.
    *sorted((REPO / "recipe").glob("build_*.sh")),
    *sorted((REPO / ".scripts").glob("*.sh")),
    REPO / ".ci" / "run",
]
ON_CI = os.environ.get("CI") == "true"


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec("ruff") is None:
        if ON_CI:
            pytest.fail("ruff is missing: CI installs requirements-test.txt, which lists it")
        pytest.skip("ruff is not installed: python -m pip install -r requirements-test.txt")
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_ruff_finds_nothing_to_fix() -> None:
    result = _ruff("check", "--no-cache", "--output-format", "concise", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_python_files_are_ruff_formatted() -> None:
    result = _ruff("format", "--no-cache", "--check", "--diff", ".")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture(scope="session")
def shellcheck() -> str:
    """The shellcheck executable; installed on CI, skipped elsewhere when absent."""
    found = shutil.which("shellcheck")
    if found is None and can_install():
        apt_install("shellcheck")
        found = shutil.which("shellcheck")
    if found is None:
        if ON_CI:
            pytest.fail("shellcheck is missing on CI and could not be installed with apt-get")
        pytest.skip("shellcheck is not installed (apt-get install shellcheck)")
    return found


@pytest.mark.parametrize(
    "script", SHELL_SCRIPTS, ids=[p.relative_to(REPO).as_posix() for p in SHELL_SCRIPTS]
)
def test_shell_script_passes_shellcheck(shellcheck: str, script: Path) -> None:
    result = subprocess.run(
        [shellcheck, "--external-sources", "--severity=style", str(script)],
        cwd=script.parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
