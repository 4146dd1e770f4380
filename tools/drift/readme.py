"""The README section holding the drift table, rewritten in place and atomically."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tools.errors import UserError

START_MARKER = "<!-- drift-table:start -->"
END_MARKER = "<!-- drift-table:end -->"


def replace_section(text: str, table: str, where: str) -> str:
    """``text`` with everything between the two drift-table markers replaced by ``table``."""
    start, end = text.find(START_MARKER), text.find(END_MARKER)
    if start < 0 or end < 0:
        missing = START_MARKER if start < 0 else END_MARKER
        raise UserError(
            f"{where}: no {missing} marker; "
            f"put {START_MARKER} and {END_MARKER} where the table belongs"
        )
    if text.count(START_MARKER) > 1 or text.count(END_MARKER) > 1:
        raise UserError(f"{where}: the drift-table markers appear more than once; keep one pair")
    if end < start:
        raise UserError(f"{where}: {END_MARKER} comes before {START_MARKER}; swap them")
    newline = "\r\n" if "\r\n" in text else "\n"
    body = table.replace("\n", newline)
    head = text[: start + len(START_MARKER)]
    return head + newline + body + text[end:]


def update_readme(path: Path, table: str) -> bool:
    """Rewrite the table section of ``path`` atomically; ``False`` when nothing changed."""
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
    new = replace_section(text, table, str(path))
    if new == text:
        return False
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(new.encode("utf-8"))
        os.chmod(temporary, path.stat().st_mode & 0o7777)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return True
