"""Renders that take seconds, spread over the machine's cores in worker processes.

py-rattler-build holds the GIL while it renders, so threads would take turns: a switched
feedstock's ``matrix`` renders each platform, then each CI job for the README's table, in
worker processes instead. Workers are started once per command (``spawn``: a fork would copy
a process whose Rust runtime may hold a lock) and serve every later call. ``PYTORCH_FEEDSTOCK_
WORKERS=1`` (or a one-core machine, or a single item) keeps the work in this process; an
error raised in a worker (a UserError naming the recipe's line) is raised here as it was.
Workers ignore Ctrl-C: this process alone answers it (exit 130), and the work not started yet
is dropped.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable, Iterable
from typing import TypeVar

ENV = "PYTORCH_FEEDSTOCK_WORKERS"

T = TypeVar("T")
R = TypeVar("R")

_pool = None  # a multiprocessing Pool, started on the first call that needs one


def workers(environ: dict[str, str] | None = None) -> int:
    """How many processes may render at once: $PYTORCH_FEEDSTOCK_WORKERS, else the cores this
    process may run on."""
    env = os.environ if environ is None else environ
    chosen = env.get(ENV, "").strip()
    if chosen.isdigit() and int(chosen) > 0:
        return int(chosen)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def map_in_processes(fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """``[fn(item) for item in items]``, in worker processes when that can be faster. ``fn``
    and the items are pickled: a module-level function and plain data."""
    items = list(items)
    if min(len(items), workers()) <= 1:
        return [fn(item) for item in items]
    pool = _started()
    try:
        return pool.map(fn, items, chunksize=1)
    except KeyboardInterrupt:
        _stop()  # the renders under way end now, not when they are done
        raise


def _started():
    global _pool
    if _pool is None:
        import multiprocessing

        _pool = multiprocessing.get_context("spawn").Pool(workers(), initializer=_worker)
        atexit.register(_stop)
    return _pool


def _stop() -> None:
    global _pool
    if _pool is not None:
        _pool.terminate()
        _pool.join()
        _pool = None


def _worker() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
