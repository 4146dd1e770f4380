"""Where the batch speaks: progress and tables on stdout, notes on stderr, answers from input."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO


@dataclass
class Console:
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    ask: Callable[[str], str] = input

    def say(self, text: str = "") -> None:
        # the reader (`| tee`, `| head`) may be gone; files still get written
        with contextlib.suppress(BrokenPipeError):
            print(text, file=self.out, flush=True)

    def note(self, text: str) -> None:
        """Progress that must not mix with a document on stdout (--list, review request)."""
        print(text, file=self.err, flush=True)
