"""Turn a build's raw terminal output into log lines: timestamped, readable, redacted.

The build runs on a pseudo-terminal (so `docker run -it` works and the engine
never puts *our* terminal into raw mode), which means CRLF line ends, carriage
return progress bars and colour codes.  The log keeps what a terminal would
have shown last on each line, without escape codes.
"""

from __future__ import annotations

import codecs
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from tools.foundation.proc import scrub

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Z0-9]")
MAX_PENDING = 64 * 1024


def clean(text: str) -> str:
    text = ANSI.sub("", text)
    if "\r" in text:
        parts = [p for p in text.split("\r") if p]
        text = parts[-1] if parts else ""
    return text


class LineSplitter:
    """Bytes in, complete lines out; decoding survives multi-byte characters split across reads."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""

    def feed(self, data: bytes) -> list[str]:
        self._pending += self._decoder.decode(data)
        *lines, self._pending = self._pending.split("\n")
        if len(self._pending) > MAX_PENDING:  # a prompt or progress bar that never ends its line
            lines.append(self._pending)
            self._pending = ""
        return [clean(line) for line in lines]

    def flush(self) -> list[str]:
        rest = self._pending + self._decoder.decode(b"", final=True)
        self._pending = ""
        return [clean(rest)] if rest.strip() else []


# Group markers: GitHub Actions, Azure, our logging_utils.sh when run locally.
_GROUP = re.compile(r"^(?:::group::|##\[group\]|==> )(.+)$")
# conda-smithy's logging_utils prints bare titles outside CI; these are its phases.
_SMITHY_TITLES = frozenset(
    {
        "Configure Docker",
        "Start Docker",
        "Configuring conda",
        "Inspecting artifacts",
        "Validating outputs",
        "Uploading packages",
        "Final checks",
    }
)
_CONDA_BUILD = re.compile(r"^(?:BUILD START|TEST START|Packaging|Running conda) ?:? ?(.*)$")
_NINJA = re.compile(r"^\[(\d+)/(\d+)\] ")


def phase_of(line: str) -> str | None:
    """The build phase a line announces, if any."""
    text = line.strip()
    match = _GROUP.match(text)
    if match:
        return match.group(1).strip()
    if text in _SMITHY_TITLES:
        return text
    match = _CONDA_BUILD.match(text)
    if match:
        word = text.split(":", 1)[0] if ":" in text else text.split(" ", 1)[0]
        rest = match.group(1).strip().strip("[]")
        return f"{word.lower()} {rest}".strip()
    return None


def ninja_progress(line: str) -> tuple[int, int] | None:
    match = _NINJA.match(line)
    return (int(match.group(1)), int(match.group(2))) if match else None


class LogSink:
    """Append-only log of one config: a header, then ``[HH:MM:SS] line`` in UTC."""

    def __init__(self, path: Path, secrets: Sequence[str], clock=time.time) -> None:
        self.path = path
        self._secrets = tuple(secrets)
        self._clock = clock
        path.parent.mkdir(parents=True, exist_ok=True)
        self._handle: TextIO = path.open("w", encoding="utf-8", newline="\n")
        self._last_flush = 0.0

    def _stamp(self) -> str:
        return time.strftime("%H:%M:%S", time.gmtime(self._clock()))

    def line(self, text: str) -> str:
        """Write one line and return it scrubbed (what the screen may show)."""
        safe = scrub(text, self._secrets)
        self._handle.write(f"[{self._stamp()}] {safe}\n")
        self.tick()
        return safe

    def tick(self) -> None:
        """Flush at most once a second, so `tail -f` and the tests see a quiet build's last
        lines."""
        now = self._clock()
        if now - self._last_flush >= 1.0:
            self._handle.flush()
            self._last_flush = now

    def note(self, text: str) -> None:
        self.line(f"### build-locally: {text}")

    def header(self, fields: Sequence[tuple[str, str]]) -> None:
        started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self._clock()))
        self.note(f"log started {started}; times are UTC")
        for key, value in fields:
            self.note(f"{key}: {value}")

    def close(self) -> None:
        self._handle.flush()
        self._handle.close()
