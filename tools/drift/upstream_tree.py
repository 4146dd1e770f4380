"""Upstream claims from an unpacked PyTorch source tree (release tarball or git checkout).

Three kinds of files speak about versions, each with its reader:

- vendored libraries under ``third_party/`` (:mod:`tools.drift.tree_vendored`);
- the CI images' pins under ``.ci/docker/`` (:mod:`tools.drift.tree_ci_images`);
- Python requirements: ``pyproject.toml`` and ``requirements*.txt``
  (:mod:`tools.drift.tree_python`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tools.drift.model import UpstreamClaim
from tools.drift.tree_ci_images import ci_images
from tools.drift.tree_python import python_requirements
from tools.drift.tree_vendored import vendored
from tools.foundation.errors import UserError
from tools.foundation.files import read_user_file


@dataclass(frozen=True)
class TreeResult:
    claims: tuple[UpstreamClaim, ...]
    notes: tuple[str, ...] = ()  # things found but not understood, for a warning


def check_tree(root: Path) -> None:
    if not root.is_dir():
        raise UserError(
            f"{root}: no such directory; pass --source the unpacked PyTorch source tree"
        )
    pyproject = root / "pyproject.toml"
    names_torch = pyproject.is_file() and re.search(
        r'(?m)^\s*name\s*=\s*"torch"', read_user_file(pyproject, errors="replace")
    )
    if not (names_torch or ((root / "setup.py").is_file() and (root / "torch").is_dir())):
        raise UserError(
            f"{root}: not a PyTorch source tree (no pyproject.toml naming torch, "
            "no setup.py beside torch/); pass --source the unpacked source directory"
        )


def read_tree(root: Path) -> TreeResult:
    check_tree(root)
    claims: list[UpstreamClaim] = []
    notes: list[str] = []
    for found, found_notes in (vendored(root), ci_images(root)):
        claims += found
        notes += found_notes
    claims += python_requirements(root)
    return TreeResult(tuple(claims), tuple(notes))
