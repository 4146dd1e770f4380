"""Golden files: what a command prints, kept under tests/golden/ and compared as text.

`python -m pytest PATH --update-golden` (tests/conftest.py) rewrites the files the selected
tests compare with, from what the code prints now; `git diff tests/golden` is then the
review. Without it a test whose output differs fails with pytest's diff, and a missing
file fails naming the command that writes it. A golden holds no date, timing or path of
this machine: `stable()` puts placeholders in their place before the comparison.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def stable(text: str, **places: Path | str) -> str:
    """``text`` with each of ``places``' paths (longest first) written ``<NAME>``."""
    for name, place in sorted(places.items(), key=lambda item: -len(str(item[1]))):
        text = text.replace(str(place), f"<{name}>")
    return text


class Golden:
    def __init__(self, update: bool, nodeid: str) -> None:
        self.update = update
        self.nodeid = nodeid

    def path(self, name: str) -> Path:
        return GOLDEN / name

    def check(self, name: str, actual: str) -> None:
        """Compare ``actual`` with tests/golden/``name`` (or write it, with --update-golden)."""
        path = self.path(name)
        if self.update:
            if not path.is_file() or path.read_text(encoding="utf-8") != actual:
                path.parent.mkdir(parents=True, exist_ok=True)
                scratch = path.with_name(path.name + ".tmp")
                scratch.write_text(actual, encoding="utf-8")
                os.replace(scratch, path)  # never a half-written golden
            return
        if not path.is_file():
            pytest.fail(
                f"no golden file tests/golden/{name}: write it with "
                f"`python -m pytest '{self.nodeid}' --update-golden` and review it"
            )
        expected = path.read_text(encoding="utf-8")
        assert actual == expected, (
            f"tests/golden/{name} differs (after an intended change: rerun with --update-golden "
            "and review `git diff tests/golden`)"
        )
