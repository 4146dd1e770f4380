"""The scripts under benchmarks/ start as the docs tell a maintainer to run them.

They are not tests and a full run takes minutes, so each is asked for ``--help`` only:
that imports everything the script imports, from the repository root, with nothing on
PYTHONPATH, which is where a script that finds only part of the repository breaks.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS)
def test_benchmark_script_starts_from_the_repository_root(script: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [sys.executable, script, "--help"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: {Path(script).name}"), result.stdout
