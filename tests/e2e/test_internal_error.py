"""A crash is not "problems found" (1) nor "bad input" (2): through either real entry point, an
exception no rule expected prints ``internal error`` and its traceback, and exits 70."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tools.foundation.errors import EXIT_INTERNAL

ROOT = Path(__file__).resolve().parents[2]

# Each wrapper replaces the one function the entry point calls with one that raises, then
# runs the entry point as a user does (build-locally.py by path, the toolkit's main).
CRASH = "def boom(*args, **kwargs):\n    raise RuntimeError('forced crash ghp_' + 36 * 'x')\n"
WRAPPERS = {
    "build-locally.py": CRASH
    + "import runpy, sys, tools.localbuild.cli as cli\n"
    + "cli.run = boom\n"
    + "sys.argv = ['build-locally.py', '--list']\n"
    + "runpy.run_path('build-locally.py', run_name='__main__')\n",
    "python -m tools": CRASH
    + "import sys, tools.__main__ as entry, tools.commands.matrix as matrix\n"
    + "matrix.run = boom\n"
    + "sys.exit(entry.main(['matrix']))\n",
}


@pytest.mark.parametrize("entry", WRAPPERS)
def test_an_unexpected_exception_exits_70_with_internal_error_and_the_traceback(
    entry: str,
) -> None:
    result = subprocess.run(
        [sys.executable, "-c", WRAPPERS[entry]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == EXIT_INTERNAL == 70, result.stderr
    assert result.stderr.startswith("internal error"), result.stderr
    assert "Traceback (most recent call last):" in result.stderr
    assert "RuntimeError: forced crash" in result.stderr
    assert "ghp_" + 36 * "x" not in result.stderr  # a token in a traceback is masked too
    assert "error:" not in result.stderr.splitlines()[0]
