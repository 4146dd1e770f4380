"""``python -m tools review why CONFIG``: the first real error of a failed build, not its
200 MB log.

The log is read as :mod:`tools.localbuild.engines.watch.logtee` writes it (``[HH:MM:SS] line``,
tokens already redacted), one line at a time, keeping only a few lines of context.  "Real" means
what a person fixes: a compiler's ``file:line:col: error:``, ``CMake Error``, the linker's
undefined references, a failing test (pytest's ``E   `` lines, ctest, conda-build's
``TESTS FAILED``), a download that failed (the source archive, a channel: a machine
without internet), a solve that found no environment (conda-build's ``Unsatisfiable
dependencies``, libmamba's, rattler-build's and its solver's own words).  Ninja's
``FAILED: target`` line is the build step around a compiler error, so it is context, never
the error itself.  When nothing matches, the end of the log is shown instead, and said so.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

BEFORE = 3  # lines of context before the error
AFTER = 8  # and after it (the source line and caret, notes, CMake's message body)
TAIL = 20  # lines shown when no error is recognised

_STAMP = re.compile(r"^\[\d\d:\d\d:\d\d\] ")
KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("CMake error", re.compile(r"^CMake Error\b")),
    (
        "compiler error",
        re.compile(
            r"^\S[^:]*:\d+(?::\d+)?: (?:fatal )?error: "  # gcc, clang
            r"|^\S.*\(\d+\): (?:fatal )?error(?: C\d{4})?\s*:"  # MSVC, nvcc
        ),
    ),
    (
        "linker error",
        re.compile(
            r"undefined reference to |\bld(?:\.\w+)?: (?:error: |cannot find )"
            r"|^Undefined symbols for architecture |\berror LNK\d{4}:|collect2: error: "
        ),
    ),
    (
        "test failure",
        re.compile(
            r"^E {3,}\S"  # pytest's assertion detail
            r"|^\s*\d+/\d+ Test +#\d+: .*\*\*\*(?:Failed|Exception)"  # ctest
            r"|^TESTS FAILED: |^FAILED \S+::\S+"  # conda-build, pytest's summary
        ),
    ),
    (
        "download failure",
        re.compile(
            r"Failed to download from URL"  # rattler-build (it names no URL)
            r"|\berror: cannot download "  # the embedded engine's line naming it
            r"|CondaHTTPError: HTTP \d+ [A-Z ]+ for url "  # conda, conda-build
            r"|curl: \(\d+\) Could not resolve host"
        ),
    ),
    (
        "solver failure",
        re.compile(
            r"Unsatisfiable dependencies for platform \S+:"  # conda-build
            r"|Could not solve for environment specs"  # conda-libmamba-solver
            r"|Failed to resolve dependencies"  # rattler-build
            r"|Cannot solve the request because of"  # rattler's solver (resolvo)
        ),
    ),
)


@dataclass(frozen=True)
class Finding:
    kind: str  # one of KINDS' names, or "" when nothing was recognised
    line: int  # 1-based line number of the error in the log (0 when none)
    context: tuple[tuple[int, str], ...]  # (line number, line as written)


def strip_stamp(line: str) -> str:
    return _STAMP.sub("", line, count=1)


def kind_of(text: str) -> str:
    """What kind of real error a log line (without its time stamp) reports, or ""."""
    if text.startswith("### build-locally: "):
        return ""
    for kind, pattern in KINDS:
        if pattern.search(text):
            return kind
    return ""


def first_error(lines: Iterable[str]) -> Finding:
    """The first real error of ``lines`` (a log as written) with its context."""
    before: deque[tuple[int, str]] = deque(maxlen=max(BEFORE, TAIL))
    found: Finding | None = None
    after: list[tuple[int, str]] = []
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\n")
        if found is not None:
            after.append((number, line))
            if len(after) >= AFTER:
                break
            continue
        kind = kind_of(strip_stamp(line))
        if kind:
            found = Finding(kind, number, (*list(before)[-BEFORE:], (number, line)))
        else:
            before.append((number, line))
    if found is None:
        return Finding("", 0, tuple(list(before)[-TAIL:]))
    return Finding(found.kind, found.line, (*found.context, *after))


def read_first_error(log: Path) -> Finding:
    with log.open(encoding="utf-8", errors="replace") as handle:
        return first_error(handle)


def describe(finding: Finding, *, title: str, log: Path) -> str:
    if finding.kind:
        head = f"{title}: {finding.kind} at line {finding.line} of the log"
    else:
        head = (
            f"{title}: no compiler, CMake, linker, test, download or solver error recognised; "
            "the log ends"
        )
    body = [f"{'>' if number == finding.line else ' '} {line}" for number, line in finding.context]
    return "\n".join([head, *body, f"log: {log}"])
