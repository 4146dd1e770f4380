"""Findings for people (a table) and for programs (JSON)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from tools.check.findings import Finding, counts

_ORDER = {"fail": 0, "warn": 1, "pass": 2}
_MARK = {"fail": "FAIL", "warn": "warn", "pass": "ok"}


def to_json(findings: Sequence[Finding]) -> str:
    return json.dumps([f.to_json() for f in findings], indent=2)


def summary(findings: Sequence[Finding]) -> str:
    tally = counts(findings)
    return f"{tally['pass']} passed, {tally['warn']} warnings, {tally['fail']} failed"


def to_table(findings: Sequence[Finding], limit: int = 10) -> str:
    """Failures first, then warnings, then passes; at most ``limit`` rows per check and status."""
    rows = sorted(findings, key=lambda f: (_ORDER[f.status], f.check, f.path))
    check_w = max((len(f.check) for f in rows), default=5)
    lines = [f"{'STATUS':<6} {'CHECK':<{check_w}} PATH / DETAIL"]
    shown: dict[tuple[str, str], int] = {}
    for f in rows:
        key = (f.status, f.check)
        shown[key] = shown.get(key, 0) + 1
        if shown[key] > limit:
            continue
        lines.append(f"{_MARK[f.status]:<6} {f.check:<{check_w}} {f.path}")
        lines.append(f"{'':<6} {'':<{check_w}}   {f.detail}")
    for (status, check), seen in shown.items():
        if seen > limit:
            lines.append(
                f"{_MARK[status]:<6} {check:<{check_w}} "
                f"... and {seen - limit} more (--json lists all)"
            )
    lines.append(summary(findings))
    return "\n".join(lines)
