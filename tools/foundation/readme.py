"""Generated README sections between ``<!-- NAME:start -->`` / ``<!-- NAME:end -->`` markers.

The build-matrix (CI-job) table lives in README.md, the drift table in docs/drift.md (the drift
manual); their commands rewrite only the text between their own pair of markers, atomically.
"""

from __future__ import annotations

from pathlib import Path

from tools.foundation.errors import UserError
from tools.foundation.files import atomic_write_text

DRIFT_TABLE = "drift-table"
MATRIX_TABLE = "matrix-table"

# The page, relative to the feedstock, that carries the drift table by default.
DRIFT_PAGE = "docs/drift.md"


def markers(section: str) -> tuple[str, str]:
    return f"<!-- {section}:start -->", f"<!-- {section}:end -->"


def replace_section(text: str, table: str, where: str, section: str = DRIFT_TABLE) -> str:
    """``text`` with everything between the section's two markers replaced by ``table``."""
    start_marker, end_marker = markers(section)
    start, end = text.find(start_marker), text.find(end_marker)
    if start < 0 or end < 0:
        missing = start_marker if start < 0 else end_marker
        raise UserError(
            f"{where}: no {missing} marker; "
            f"put {start_marker} and {end_marker} where the table belongs"
        )
    if text.count(start_marker) > 1 or text.count(end_marker) > 1:
        raise UserError(f"{where}: the {section} markers appear more than once; keep one pair")
    if end < start:
        raise UserError(f"{where}: {end_marker} comes before {start_marker}; swap them")
    newline = "\r\n" if "\r\n" in text else "\n"
    body = table.replace("\n", newline)
    head = text[: start + len(start_marker)]
    return head + newline + body + text[end:]


def updated_text(path: Path, table: str, section: str = DRIFT_TABLE) -> str | None:
    """``path``'s text with one section replaced by ``table``; ``None`` when nothing changes."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise UserError(
            f"{path}: no such file; pass --readme pointing at the README to update"
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text") from None
    new = replace_section(text, table, str(path), section)
    return None if new == text else new


def update_readme(path: Path, table: str, section: str = DRIFT_TABLE) -> bool:
    """Rewrite one section of ``path`` atomically; ``False`` when nothing changed."""
    new = updated_text(path, table, section)
    if new is None:
        return False
    atomic_write_text(path, new, mode=path.stat().st_mode & 0o7777)
    return True


def section_of(path: Path, section: str) -> str | None:
    """The text between the section's markers in ``path`` (``None``: no such file, or no
    markers: a feedstock whose README does not carry this table)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    start_marker, end_marker = markers(section)
    start, end = text.find(start_marker), text.find(end_marker)
    if start < 0 or end < start:
        return None
    return text[start + len(start_marker) : end].replace("\r\n", "\n").removeprefix("\n")
