"""Atomic writes leave ordinary permissions, never mkstemp's private 0600."""

from __future__ import annotations

import os
from pathlib import Path

from tools.files import atomic_write_text


def test_new_file_gets_the_umask_permissions_an_ordinary_open_would(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "new.yaml", "a: 1\n")
    finally:
        os.umask(old)
    assert (tmp_path / "new.yaml").stat().st_mode & 0o777 == 0o644


def test_replaced_file_keeps_its_permissions(tmp_path: Path) -> None:
    target = tmp_path / "script.sh"
    target.write_text("old\n")
    target.chmod(0o755)
    atomic_write_text(target, "new\n")
    assert target.read_text() == "new\n"
    assert target.stat().st_mode & 0o777 == 0o755


def test_no_temporary_file_is_left_beside_the_target(tmp_path: Path) -> None:
    atomic_write_text(tmp_path / "out.txt", "x")
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]
