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

from tools.errors import UserError

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


def _in_use(artifacts: Path, path: Path) -> UserError:
    return UserError(
        f"{artifacts} is in use by another build-locally run (pid {_holder(path)}); "
        "wait for it to finish or stop it, then rerun to resume"
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
def exclusive(artifacts: Path) -> Iterator[None]:
    """Hold the batch lock of ``artifacts`` (created if needed), or raise a UserError."""
    artifacts.mkdir(parents=True, exist_ok=True)
    path = artifacts / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not _try_lock(fd):
            raise _in_use(artifacts, path)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)  # releases the lock
