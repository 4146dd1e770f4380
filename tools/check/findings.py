"""The one record every check produces, and the rules for how findings add up.

A finding is ``(check, status, path, detail)``.  ``check`` is a stable dotted
identifier (``elf.needed``, ``layout.overlap`` …) documented in the command's
``--help``; ``path`` names the package and, after a colon, the member inside it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Literal

Status = Literal["pass", "warn", "fail"]
STATUSES: tuple[Status, ...] = ("pass", "warn", "fail")


@dataclass(frozen=True)
class Finding:
    check: str
    status: Status
    path: str
    detail: str
    # Numbers a program reads without parsing ``detail``: binary.formats' files read per format
    counts: tuple[tuple[str, int], ...] = ()

    def to_json(self) -> dict[str, object]:
        document: dict[str, object] = {
            "check": self.check,
            "status": self.status,
            "path": self.path,
            "detail": self.detail,
        }
        if self.counts:
            document["counts"] = dict(self.counts)
        return document

    def with_counts(self, counts: Mapping[str, int]) -> Finding:
        return replace(self, counts=tuple(counts.items()))


def passed(check: str, path: str, detail: str) -> Finding:
    return Finding(check, "pass", path, detail)


def warned(check: str, path: str, detail: str) -> Finding:
    return Finding(check, "warn", path, detail)


def failed(check: str, path: str, detail: str) -> Finding:
    return Finding(check, "fail", path, detail)


def member_path(package_label: str, member: str) -> str:
    return f"{package_label}:{member}"


def any_failed(findings: Iterable[Finding]) -> bool:
    return any(f.status == "fail" for f in findings)


def counts(findings: Iterable[Finding]) -> dict[Status, int]:
    tally: dict[Status, int] = dict.fromkeys(STATUSES, 0)
    for finding in findings:
        tally[finding.status] += 1
    return tally


def machine_findings(
    check: str, label: str, subdir: str, machines: Mapping[str, str], expected: str, kind: str
) -> list[Finding]:
    """elf.machine's and pe.machine's verdict on one package: ``machines`` {member: the
    machine its header names}, each one not ``expected`` (the subdir's) a failure."""
    foreign = [(path, machine) for path, machine in sorted(machines.items()) if machine != expected]
    if not foreign:
        return [passed(check, label, f"{len(machines)} {kind} files, all {expected}")]
    return [
        failed(
            check,
            member_path(label, path),
            f"{machine} binary in a {subdir} package (expected {expected})",
        )
        for path, machine in foreign
    ]
