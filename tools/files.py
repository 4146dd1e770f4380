"""Reading input files with a one-line error, and writing files so that a reader,
or an interrupted run, never sees half of one."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tools.errors import UserError


def read_user_file(path: Path, *, errors: str = "strict") -> str:
    """A UTF-8 file the user pointed at; unreadable is their error to fix.  ``errors`` is
    ``str.decode``'s (``"replace"`` for files we only search, such as an upstream tree's)."""
    try:
        return path.read_text(encoding="utf-8", errors=errors)
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from exc
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text (byte {exc.start})") from None


@contextmanager
def atomic_replace(path: Path, *, mode: int | None = None) -> Iterator[Path]:
    """A temporary path beside ``path`` for the caller to write; when the block succeeds the
    file is flushed to disk and renamed over ``path``, when it fails it is removed.

    Without ``mode`` the file keeps the permissions of the file it replaces, and a new file
    gets what ``open()`` would give it (0666 less the umask), not mkstemp's private 0600.
    The temporary name is unique, so two writers never share one.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        # The rename must not reach the disk before the data does (a crash would leave an
        # empty file under the real name).
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, mode if mode is not None else _mode_for(path))
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` through :func:`atomic_replace`."""
    with atomic_replace(path, mode=mode) as tmp:
        tmp.write_bytes(data)


def _mode_for(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def atomic_write_text(path: Path, text: str, *, mode: int | None = None) -> None:
    """UTF-8, newlines written as given (``\\n`` stays ``\\n`` on every platform)."""
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode)


_CONFLICT_MARKER = re.compile(r"^(?:<{7}|={7}|>{7})(?: |$)", re.MULTILINE)


def yaml_error_message(source: str, exc: Exception, text: str = "") -> str:
    """``file:line: not valid YAML (problem)``, pointing at merge-conflict markers first."""
    conflict = _CONFLICT_MARKER.search(text)
    if conflict:
        line = text.count("\n", 0, conflict.start()) + 1
        return f"{source}:{line}: merge-conflict marker; resolve the conflict (or rerender)"
    mark = getattr(exc, "problem_mark", None)
    where = f"{source}:{mark.line + 1}" if mark is not None else source
    problem = getattr(exc, "problem", None) or exc.__class__.__name__
    return f"{where}: not valid YAML ({problem})"
