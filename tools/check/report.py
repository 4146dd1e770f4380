"""Findings for people (a report grouped by check) and for programs (JSON).

Both use the same status words, ``fail``, ``warn`` and ``pass``.  Colour is for
terminals only: :func:`use_colour` says no when the stream is not a TTY, when
``NO_COLOR`` is set (https://no-color.org) or when ``TERM=dumb``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TextIO

from tools.check.findings import STATUSES, Finding, Status, counts

_ORDER: dict[Status, int] = {"fail": 0, "warn": 1, "pass": 2}
_COLOUR: dict[Status, str] = {"fail": "\033[1;31m", "warn": "\033[33m", "pass": "\033[32m"}
_RESET = "\033[0m"


def use_colour(stream: TextIO, env: Mapping[str, str]) -> bool:
    if env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def to_json(findings: Sequence[Finding]) -> str:
    return json.dumps([f.to_json() for f in findings], indent=2)


def tally(findings: Sequence[Finding]) -> str:
    """``3 fail, 1 warn, 120 pass``: worst first, zeros left out (``0 fail`` when clean)."""
    numbers = counts(findings)
    parts = [f"{numbers[s]} {s}" for s in sorted(STATUSES, key=_ORDER.get) if numbers[s]]
    return ", ".join(parts) or "0 fail"


def summary(findings: Sequence[Finding]) -> str:
    numbers = counts(findings)
    return f"{numbers['fail']} fail, {numbers['warn']} warn, {numbers['pass']} pass"


def summary_line(counted: Sequence[Finding], shown: int, status_filter: Sequence[str] = ()) -> str:
    """The report's last line: what was counted (what the exit status follows) and, when
    ``--status`` filters, how many of those findings it shows."""
    line = f"summary: {summary(counted)}"
    if status_filter:
        line += (
            f" (--status {','.join(status_filter)} shows {shown} of these {len(counted)} "
            "findings; it filters what is shown, not what is counted)"
        )
    return line


def failure_message(findings: Sequence[Finding]) -> str:
    """Why ``check`` exits 1: how many failed findings, of how many checks, and which."""
    failed = [f for f in findings if f.status == "fail"]
    checks = sorted({f.check for f in failed})
    plural = "" if len(failed) == 1 else "s"
    return (
        f"{len(failed)} finding{plural} of {len(checks)} check{'' if len(checks) == 1 else 's'} "
        f"failed: {', '.join(checks)}"
    )


def to_text(
    findings: Sequence[Finding],
    *,
    check_order: Sequence[str] = (),
    limit: int = 10,
    colour: bool = False,
    notes: Sequence[str] = (),
    counted: Sequence[Finding] | None = None,
    status_filter: Sequence[str] = (),
) -> str:
    """One block per check (the worst first), headed by its counts.

    Inside a block failures come first, then warnings, then passes; at most
    ``limit`` rows per status, followed at once by how many more there are.
    ``counted`` are the findings before ``--status`` (``status_filter``) chose the shown ones;
    the summary counts them.
    """
    counted = findings if counted is None else counted
    position = {check: index for index, check in enumerate(check_order)}
    groups: dict[str, list[Finding]] = {}
    for finding in findings:
        groups.setdefault(finding.check, []).append(finding)

    def group_rank(check: str) -> tuple[int, int, str]:
        worst = min(_ORDER[f.status] for f in groups[check])
        return (worst, position.get(check, len(position)), check)

    def word(status: Status) -> str:
        return f"{_COLOUR[status]}{status}{_RESET}" if colour else status

    lines: list[str] = []
    for check in sorted(groups, key=group_rank):
        rows = sorted(groups[check], key=lambda f: (_ORDER[f.status], f.path))
        lines.append(f"{check}: {tally(rows)}")
        for status in sorted(STATUSES, key=_ORDER.get):
            mine = [f for f in rows if f.status == status]
            for finding in mine[:limit]:
                lines.append(f"  {word(status)}  {finding.path}")
                lines.append(f"        {finding.detail}")
            if len(mine) > limit:
                lines.append(
                    f"  {word(status)}  ... and {len(mine) - limit} more {status} "
                    "(--json lists all)"
                )
    if not findings:
        lines.append(f"no {'/'.join(status_filter)} findings" if status_filter else "no findings")
    lines.append(summary_line(counted, len(findings), status_filter))
    lines.extend(notes)
    return "\n".join(lines)
