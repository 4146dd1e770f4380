"""Step logging with CI fold groups and timings (one logger per process)."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator, Mapping


def _fold_markers(env: Mapping[str, str]) -> tuple[str, str] | None:
    if env.get("GITHUB_ACTIONS") == "true":
        return "::group::{}", "::endgroup::"
    if env.get("TF_BUILD"):  # Azure Pipelines
        return "##[group]{}", "##[endgroup]"
    return None


@contextlib.contextmanager
def step(title: str, env: Mapping[str, str] | None = None, stream=None) -> Iterator[None]:
    """Print a heading (a fold group on CI) and the step's duration when it ends."""
    stream = stream or sys.stderr
    markers = _fold_markers(os.environ if env is None else env)
    print(markers[0].format(title) if markers else f"==> {title}", file=stream, flush=True)
    start = time.monotonic()

    def finish(mark: str | None) -> None:
        if markers:
            print(markers[1], file=stream, flush=True)
        if mark:
            elapsed = time.monotonic() - start
            print(f"    {mark}: {title} ({elapsed:.1f}s)", file=stream, flush=True)

    try:
        yield
    except KeyboardInterrupt:
        # Ctrl-C is not a failed step: the one handler (foundation.errors) prints `interrupted`.
        finish(None)
        raise
    except BaseException:
        finish("FAILED")
        raise
    finish("done")


def warn(message: str, stream=None) -> None:
    print(f"warning: {message}", file=stream or sys.stderr)
