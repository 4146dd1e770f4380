"""Atomic writes leave ordinary permissions, never mkstemp's private 0600."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools.foundation.files import atomic_write_text


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


def test_replace_files_changes_every_file_or_none(tmp_path: Path) -> None:
    """One rename that fails (its target is a folder) undoes the ones made before it, and
    deletes nothing: the files are all old or all new (issue 43, item 7)."""
    from tools.foundation.files import replace_files

    first, gone, blocked = tmp_path / "a.yaml", tmp_path / "b.yaml", tmp_path / "c.yaml"
    first.write_text("old a\n")
    gone.write_text("old b\n")
    blocked.mkdir()
    (blocked / "inside").write_text("x")
    with pytest.raises(IsADirectoryError):
        replace_files({first: "new a\n", gone: None, blocked: "new c\n"})
    assert first.read_text() == "old a\n"
    assert gone.read_text() == "old b\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.yaml", "b.yaml", "c.yaml"]


def test_replace_files_writes_and_deletes_when_all_can(tmp_path: Path) -> None:
    from tools.foundation.files import replace_files

    kept, gone, new = tmp_path / "a.yaml", tmp_path / "b.yaml", tmp_path / "sub" / "c.yaml"
    kept.write_text("old a\n")
    kept.chmod(0o640)
    gone.write_text("old b\n")
    replace_files({kept: "new a\n", gone: None, new: "new c\n"})
    assert kept.read_text() == "new a\n" and kept.stat().st_mode & 0o777 == 0o640
    assert not gone.exists() and new.read_text() == "new c\n"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a.yaml", "c.yaml", "sub"]
