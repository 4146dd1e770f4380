"""One batch at a time per ``build_artifacts/``.

Two runs sharing a conda-build root would resume, prune and summarise each other's
configs.  The lock is an OS file lock on ``build_artifacts/.build-locally.lock``,
so it is released however its holder ends (even killed); the file keeps the
holder's pid for the message the second run prints.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tools.foundation.errors import UserError

LOCK_NAME = ".build-locally.lock"

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]
    import msvcrt


def _try_lock(fd: int) -> bool:
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        else:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    except OSError:
        return False
    return True


def _holder(path: Path) -> str:
    try:
        text = path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return "unknown"
    return text if text.isdigit() else "unknown"


def _in_use(folder: Path, path: Path, what: str = "in use") -> UserError:
    doing = "in use" if what == "in use" else f"being {what}"
    return UserError(
        f"{folder} is {doing} by another build-locally run (pid {_holder(path)}); "
        "wait for it to finish or stop it, then rerun" + (" to resume" if what == "in use" else "")
    )


def check_free(artifacts: Path) -> None:
    """Refuse as :func:`exclusive` would, without creating or writing anything (--dry-run)."""
    path = artifacts / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR)  # no O_CREAT: without the file nobody holds the lock
    except OSError:
        return
    try:
        if not _try_lock(fd):
            raise _in_use(artifacts, path)
    finally:
        os.close(fd)  # releases the lock we just took to look


@contextmanager
def exclusive(artifacts: Path, *, name: str = LOCK_NAME, what: str = "in use") -> Iterator[None]:
    """Hold the lock ``name`` of the folder ``artifacts`` (created if needed), or raise a
    UserError saying what the holder is doing there (``what``: "published to")."""
    artifacts.mkdir(parents=True, exist_ok=True)
    path = artifacts / name
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not _try_lock(fd):
            raise _in_use(artifacts, path, what)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)  # releases the lock
