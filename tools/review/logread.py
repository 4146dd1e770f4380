"""A config's log as ``review verify`` reads it: the head build-locally wrote (its
``### build-locally: KEY: VALUE`` lines before the build's first line), the packages it
listed with their sha256, the build's own output, and the last line.

The writer is tools/localbuild/batch/loop.py (``_header``, ``provenance_fields``, the package
and end lines); the reader compares what it finds with what the writer would have written
for the record, so the two cannot drift apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tools.review.why import strip_stamp

NOTE = "### build-locally: "
_PACKAGE = re.compile(r"^package (\S+) sha256 ([0-9a-f]{64}) \(\d+ bytes\)$")


@dataclass(frozen=True)
class LogFacts:
    head: tuple[tuple[str, str], ...]  # (key, value) in the order written
    packages: dict[str, str]  # subdir/file -> sha256, as the log lists them
    output_lines: int  # lines that are not build-locally's own: the engine's output
    last: str  # the last line, time stamp and all

    def values(self, key: str) -> list[str]:
        return [v for k, v in self.head if k == key]


def read_log(path: Path) -> LogFacts:
    head: list[tuple[str, str]] = []
    packages: dict[str, str] = {}
    output = 0
    in_head = True
    last = ""
    with path.open(encoding="utf-8", errors="replace") as handle:
        for raw in handle:
            line = raw.rstrip("\n")
            if line:
                last = line
            text = strip_stamp(line)
            if not text.startswith(NOTE):
                in_head = False
                output += 1 if text.strip() else 0
                continue
            note = text[len(NOTE) :]
            match = _PACKAGE.match(note)
            if match:
                packages.setdefault(match.group(1), match.group(2))
            elif in_head and ": " in note:
                key, value = note.split(": ", 1)
                head.append((key, value))
    return LogFacts(tuple(head), packages, output, last)
