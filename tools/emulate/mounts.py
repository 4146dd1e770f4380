"""Mounts that are always undone: on success, failure, Ctrl-C, SIGTERM or SIGHUP.

A run that is killed outright (SIGKILL) cannot clean up; the next run finds
its leftovers in /proc/self/mountinfo and unmounts them before doing anything.
"""

from __future__ import annotations

import contextlib
import re
import signal
from collections.abc import Iterator, Sequence
from pathlib import Path

from tools.emulate.host import SBIN_PATH
from tools.foundation import log, proc
from tools.foundation.errors import CommandError

MOUNTINFO = Path("/proc/self/mountinfo")
_CLEANUP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as \ooo.
    return _OCTAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)


def mounts_under(root: Path, mountinfo: str) -> list[Path]:
    """Mount points at or below ``root``, deepest (most recent) first."""
    root = Path(root)
    found = []
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) < 5:
            continue
        point = Path(_unescape(fields[4]))
        if point == root or root in point.parents:
            found.append(point)
    return list(reversed(found))


def _run_mount_tool(*args: str | Path, check: bool = True):
    return proc.call(*args, env={"PATH": SBIN_PATH}, capture=True, check=check, timeout=120)


def unmount(target: Path) -> None:
    """Unmount ``target``; detach it lazily when something still holds it busy."""
    if _run_mount_tool("umount", target, check=False).returncode == 0:
        return
    # A process that outlived its run (a daemon forked by a test) keeps the
    # mount busy; detaching removes it from view now and frees it when done.
    _run_mount_tool("umount", "--lazy", target)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold Ctrl-C and friends while cleaning up; they arrive right after."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _CLEANUP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _interrupt(signum: int, _frame) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into KeyboardInterrupt so ``finally`` blocks run."""
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def sweep(
    root: Path, *, left_by: str = "an earlier run", mountinfo: Path = MOUNTINFO
) -> list[Path]:
    """Unmount whatever a killed run (or debootstrap) left mounted under ``root``."""
    stale = mounts_under(Path(root).resolve(), mountinfo.read_text())
    with signals_deferred():
        for point in stale:
            log.warn(f"unmounting {point}, left behind by {left_by}")
            unmount(point)
    return stale


class MountStack(contextlib.AbstractContextManager):
    """Mounts made through it are unmounted in reverse order when the block ends."""

    def __init__(self) -> None:
        self._targets: list[Path] = []

    def mount(self, target: Path, *, fstype: str, source: str, options: Sequence[str] = ()) -> Path:
        args: list[str | Path] = ["mount", "-t", fstype]
        if options:
            args += ["-o", ",".join(options)]
        _run_mount_tool(*args, source, target)
        self._targets.append(target)
        return target

    def close(self, *, raise_errors: bool = True) -> None:
        failed = []
        with signals_deferred():
            while self._targets:
                target = self._targets.pop()
                try:
                    unmount(target)
                except CommandError as exc:
                    failed.append(target)
                    log.warn(f"could not unmount {target}: {exc}")
        if failed and raise_errors:
            raise CommandError(
                "could not unmount " + ", ".join(map(str, failed)) + "; run umount --lazy on them"
            )

    def __exit__(self, exc_type, exc, tb) -> None:
        # Never mask the error that ended the block; the warnings name the mounts.
        self.close(raise_errors=exc_type is None)
