"""This repository's HEAD switched to rattler-build with ``python -m tools switch`` and committed:
what tests/e2e/test_switch_clone.py runs the maintainer's commands on, and what
tests/e2e/test_e2e_real_engine.py builds its CPU batch from.

The switch computes the whole v1 matrix (rattler-build renders every platform, then every CI
job for the README's table), so it runs once per HEAD commit and engine version, kept in the
tests cache (tests/helpers/cache.py); every caller gets its own git clone of that, at the
switch's commit, whose parent is the commit it started from. Like the other clone tests
(tests/helpers/clone.py) it takes the committed HEAD: uncommitted edits are not in it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.cache import cached_dir, tests_cache_root
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


def tools(root: Path, *args: str | Path, **kwargs) -> subprocess.CompletedProcess[str]:
    """``python -m tools ARGS`` in ``root``, with ``root``'s own toolkit."""
    return subprocess.run(
        [sys.executable, "-m", "tools", *map(str, args)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        **kwargs,
    )


def _switch(folder: Path, head: str) -> None:
    clone = folder / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    git(clone, "checkout", "-q", head)
    result = tools(clone, "switch", "--to", "rattler-build", "--pinning", PINNING)
    assert result.returncode == 0, result.stdout + result.stderr
    git(clone, "commit", "-qm", "switch to rattler-build (python -m tools switch)")
    (folder / "switch.err").write_text(result.stderr)
    (folder / "switch.out").write_text(result.stdout)


def switched_clone(dest: Path) -> SwitchedClone:
    """A clone of this repository's HEAD switched with the command, in ``dest``."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs git and a git checkout to clone")
    head = git(REPO, "rev-parse", "HEAD").strip()
    engine = importlib.metadata.version("py-rattler-build")
    key = hashlib.sha256(f"{head}\n{engine}\n".encode()).hexdigest()[:16]
    entry = cached_dir(
        tests_cache_root() / "switched-clone" / key,
        lambda folder: _switch(folder, head),
        lambda found: (found / "switch.out").is_file(),
    )
    subprocess.run(["git", "clone", "-q", str(entry / "clone"), str(dest)], check=True)
    return SwitchedClone(
        dest, head, (entry / "switch.out").read_text(), (entry / "switch.err").read_text()
    )
