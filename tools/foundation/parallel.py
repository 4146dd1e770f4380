"""Renders that take seconds, spread over the machine's cores in worker processes.

py-rattler-build holds the GIL while it renders, so threads would take turns: a switched
feedstock's ``matrix`` renders each platform, then each CI job for the README's table, in
worker processes instead. Workers are started once per command (``spawn``: a fork would copy
a process whose Rust runtime may hold a lock) and serve every later call. ``PYTORCH_FEEDSTOCK_
WORKERS=1`` (or a one-core machine, or a single item) keeps the work in this process; an
error raised in a worker (a UserError naming the recipe's line) is raised here as it was.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

ENV = "PYTORCH_FEEDSTOCK_WORKERS"

T = TypeVar("T")
R = TypeVar("R")

_pool: ProcessPoolExecutor | None = None


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
    count = min(len(items), workers())
    if count <= 1:
        return [fn(item) for item in items]
    return list(_executor().map(fn, items))


def _executor() -> ProcessPoolExecutor:
    global _pool
    if _pool is None:
        import multiprocessing

        _pool = ProcessPoolExecutor(workers(), mp_context=multiprocessing.get_context("spawn"))
        atexit.register(_pool.shutdown)
    return _pool
