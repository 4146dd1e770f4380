"""This repository's HEAD switched to rattler-build with ``python -m tools switch`` and committed:
what tests/e2e/test_switch_clone.py runs the maintainer's commands on, and what
tests/e2e/test_e2e_real_engine.py builds its CPU batch from.

The switch runs in the clone itself, as a maintainer runs it: the renders it keeps on disk
(the session's render cache, tests/conftest.py) are the ones ``matrix --check`` and
``explain`` then find, which a copy at another path would not (the cache keys name the
feedstock's path). The clone is at the switch's commit, whose parent is the commit it started
from. Like the other clone tests (tests/helpers/clone.py) it takes the committed HEAD:
uncommitted edits are not in it.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.cli import run_tools
from helpers.feedstock_matrix import PINNING

REPO = Path(__file__).resolve().parents[2]
IDENTITY = ("-c", "user.name=switch-test", "-c", "user.email=switch-test@example.invalid")


@dataclass(frozen=True)
class SwitchedClone:
    root: Path  # a git clone, at the switch's commit
    start: str  # the commit the switch started from (this repository's HEAD)
    output: str  # what the switch printed on stdout
    errors: str  # and on stderr


def git(root: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", *IDENTITY, *args], cwd=root, capture_output=True, text=True, check=True
    )
    return result.stdout


def switched_clone(dest: Path) -> SwitchedClone:
    """A clone of this repository's HEAD in ``dest``, switched with the command and committed."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs git and a git checkout to clone")
    subprocess.run(["git", "clone", "-q", str(REPO), str(dest)], check=True)
    start = git(dest, "rev-parse", "HEAD").strip()
    result = run_tools(
        "switch", "--to", "rattler-build", "--pinning", PINNING, cwd=dest, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr
    git(dest, "commit", "-qm", "switch to rattler-build (python -m tools switch)")
    return SwitchedClone(dest, start, result.stdout, result.stderr)
