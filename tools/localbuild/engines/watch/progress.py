"""What the maintainer sees while a multi-hour build runs: where it is, not every line.

On a terminal one status line is redrawn in place (config i of n, elapsed
time, phase, ninja's [done/total]); phase changes are printed once.  Without a
terminal (CI, `| tee`), phase changes are printed, plus a heartbeat every few
minutes.  Every line of a config starts with ``[i/n]   H:MM:SS  `` so phases and
heartbeats line up; with an estimate (``eta.py``) the status and heartbeat lines end
with the expected finish of the config and of the batch.  The full output is in the config's log.
"""

from __future__ import annotations

import shutil
import time
from typing import TextIO

from tools.localbuild.engines.watch.logtee import ninja_progress, phase_of
from tools.localbuild.schedule.eta import finish_text

HEARTBEAT_SECONDS = 300.0
REDRAW_SECONDS = 0.5


def format_duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Progress:
    def __init__(
        self, stream: TextIO, *, is_tty: bool, clock=time.monotonic, wall=time.time
    ) -> None:
        self._stream = stream
        self._tty = is_tty
        self._clock = clock
        self._wall = wall
        self._expected: tuple[float, float, str] | None = None  # this config, the rest, source
        self._label = ""
        self._start = 0.0
        self._phase = "starting"
        self._ninja: tuple[int, int] | None = None
        self._last_draw = 0.0
        self._last_heartbeat = 0.0
        self._drawn = False

    def _write(self, text: str) -> None:
        # `build-locally.py 2>&1 | tee log` loses its reader on Ctrl-C; the build must
        # still be stopped cleanly, and the config's own log has every line anyway.
        try:
            self._stream.write(text)
            self._stream.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass

    def _print(self, text: str) -> None:
        self._erase()
        self._write(text + "\n")

    def _erase(self) -> None:
        if self._drawn:
            self._write("\r\x1b[K")
            self._drawn = False

    def start(
        self,
        index: int,
        total: int,
        config: str,
        *,
        label: str = "",
        expected: tuple[float, float, str] | None = None,
    ) -> None:
        """``expected``: this config's expected seconds, the seconds of the configs after it,
        and where the numbers come from; the status and heartbeat lines then show the ETA."""
        self._label = f"[{index}/{total}]"
        self._start = self._last_heartbeat = self._clock()
        self._phase, self._ninja = "starting", None
        self._expected = expected
        self._print(
            f"{self._label} {label}  {config}"
            if label and label != config
            else f"{self._label} {config}"
        )
        if expected is not None:
            self._print(f"{self._prefix()}expected {format_duration(expected[0])}; {self.eta()}")

    def _prefix(self, elapsed: float | None = None) -> str:
        """``[i/n]   H:MM:SS  ``: every line of a config starts so, phases and heartbeats alike."""
        seconds = self._clock() - self._start if elapsed is None else elapsed
        return f"{self._label}   {format_duration(seconds)}  "

    def eta(self) -> str:
        if self._expected is None:
            return ""
        expected, after, source = self._expected
        return finish_text(
            now=self._wall(),
            elapsed=self._clock() - self._start,
            expected=expected,
            after=after,
            source=source,
        )

    def line(self, text: str) -> None:
        phase = phase_of(text)
        if phase and phase != self._phase:
            self._phase, self._ninja = phase, None
            self._print(f"{self._prefix()}{phase}")
            return
        counts = ninja_progress(text)
        if counts:
            self._ninja = counts

    def status(self) -> str:
        text = f"{self._prefix()}{self._phase}"
        if self._ninja:
            text += f"  [{self._ninja[0]}/{self._ninja[1]}]"
        if self._expected is not None:
            text += f"  {self.eta()}"
        return text

    def tick(self) -> None:
        now = self._clock()
        if self._tty:
            if now - self._last_draw >= REDRAW_SECONDS:
                width = shutil.get_terminal_size((100, 20)).columns - 1
                self._write("\r\x1b[K" + self.status()[:width])
                self._drawn = True
                self._last_draw = now
        elif now - self._last_heartbeat >= HEARTBEAT_SECONDS:
            self._print(f"{self.status()} (still running)")
            self._last_heartbeat = now

    def end(self, status: str, seconds: float, detail: str = "") -> None:
        tail = f"  {detail}" if detail else ""
        self._print(f"{self._prefix(seconds)}{status}{tail}")

    def message(self, text: str) -> None:
        self._print(text)
