"""The toolkit's one console: where a command speaks (one object per entry point).

Results and tables go to ``out`` (``say``), progress and warnings to ``err`` (``note``,
``warn``, ``step``: a heading, a CI fold group, and the step's duration), answers come from
``ask``.  ``python -m tools`` and ``build-locally.py`` each build one :class:`Console` and
pass it in; code that takes ``say``/``note`` callables gets ``console.say``/``console.note``.
The module-level :func:`step` and :func:`warn` speak through a console on the process's
own streams, for library code that no console reaches.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TextIO


def _fold_markers(env: Mapping[str, str]) -> tuple[str, str] | None:
    if env.get("GITHUB_ACTIONS") == "true":
        return "::group::{}", "::endgroup::"
    if env.get("TF_BUILD"):  # Azure Pipelines
        return "##[group]{}", "##[endgroup]"
    return None


@dataclass
class Console:
    # the streams are looked up when the console is built, so pytest's capsys sees them
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    ask: Callable[[str], str] = input

    def say(self, text: str = "", *, end: str = "\n") -> None:
        """A result: stdout.  The reader (`| tee`, `| head`) may be gone; files still get
        written."""
        with contextlib.suppress(BrokenPipeError):
            print(text, file=self.out, end=end, flush=True)

    def note(self, text: str = "", *, end: str = "\n") -> None:
        """Progress that must not mix with a document on stdout (--list, --json)."""
        print(text, file=self.err, end=end, flush=True)

    def warn(self, message: str) -> None:
        self.note(f"warning: {message}")

    @contextlib.contextmanager
    def step(self, title: str, env: Mapping[str, str] | None = None) -> Iterator[None]:
        """Print a heading (a fold group on CI) and the step's duration when it ends."""
        markers = _fold_markers(os.environ if env is None else env)
        self.note(markers[0].format(title) if markers else f"==> {title}")
        start = time.monotonic()

        def finish(mark: str | None) -> None:
            if markers:
                self.note(markers[1])
            if mark:
                self.note(f"    {mark}: {title} ({time.monotonic() - start:.1f}s)")

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


def step(title: str, env: Mapping[str, str] | None = None, stream=None):
    """:meth:`Console.step` on ``stream`` (default: this process's stderr)."""
    return Console(err=stream or sys.stderr).step(title, env)


def warn(message: str, stream=None) -> None:
    Console(err=stream or sys.stderr).warn(message)
