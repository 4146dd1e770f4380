"""``check --baseline``: keep only what differs from a reference build (upstream's wheel).

A finding is *in the baseline* when the baseline has a warning or failure of the
same check for the corresponding file.  Files correspond when they land in the
same place of an installed ``torch``:

- a wheel's ``torch/lib/x.so`` is a conda package's ``lib/x.so`` (libtorch puts the
  libraries into ``$PREFIX/lib``) and its ``site-packages/torch/lib/x.so``;
- ``bin/``, ``include/`` and ``share/`` of a conda package likewise map to
  ``torch/bin/``, ``torch/include/`` and ``torch/share/``;
- ``lib/pythonX.Y/site-packages/`` (``Lib/site-packages/`` on Windows) is dropped.

A finding about a whole package (no member) is in the baseline when the baseline
has a warning or failure of the same check with the same detail.  Baseline problems
on files our packages ship and do not share are reported as fixed (a pass).
Everything here is pure: findings and packages in, findings out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tools.check.archive import Package
from tools.check.findings import Finding, passed

_SITE_PACKAGES = re.compile(r"^(?:lib/python\d+\.\d+t?/site-packages|Lib/site-packages)/")
_PREFIX_TOPS = ("lib/", "bin/", "include/", "share/")


def canonical_member(member: str, kind: str) -> str:
    """Where ``member`` of a package of ``kind`` lands relative to an installed torch."""
    stripped = _SITE_PACKAGES.sub("", member, count=1)
    if stripped != member or kind == "wheel":
        return stripped
    if member.startswith(_PREFIX_TOPS):
        return f"torch/{member}"
    return member


@dataclass(frozen=True)
class Located:
    """A finding split into the package it is about (if known) and its member (if any)."""

    finding: Finding
    label: str | None
    member: str | None
    kind: str

    @property
    def key(self) -> tuple[str, str, str]:
        if self.member is None:
            return (self.finding.check, "package", self.finding.detail)
        return (self.finding.check, "file", canonical_member(self.member, self.kind))


def locate(findings: Iterable[Finding], packages: Sequence[Package]) -> list[Located]:
    kinds = {package.label: package.kind for package in packages}
    # Longest label first: a prefix's "<dir>[libtorch]" must not be cut at "<dir>[lib".
    labels = sorted(kinds, key=len, reverse=True)
    located = []
    for finding in findings:
        for label in labels:
            if finding.path == label:
                located.append(Located(finding, label, None, kinds[label]))
                break
            if finding.path.startswith(f"{label}:"):
                member = finding.path[len(label) + 1 :]
                located.append(Located(finding, label, member, kinds[label]))
                break
        else:
            # Findings across packages (layout.overlap) name the member alone.
            located.append(Located(finding, None, finding.path, "conda"))
    return located


@dataclass(frozen=True)
class Comparison:
    new: tuple[Finding, ...]  # ours, minus what the baseline has too, plus what we fixed
    hidden: tuple[Finding, ...]  # ours, also in the baseline


def compare(
    ours: Sequence[Finding],
    our_packages: Sequence[Package],
    theirs: Sequence[Finding],
    their_packages: Sequence[Package],
) -> Comparison:
    problems = [item for item in locate(theirs, their_packages) if item.finding.status != "pass"]
    known = {item.key for item in problems}
    new: list[Finding] = []
    hidden: list[Finding] = []
    ours_located = locate(ours, our_packages)
    for item in ours_located:
        if item.finding.status != "pass" and item.key in known:
            hidden.append(item.finding)
        else:
            new.append(item.finding)
    new.extend(_fixed(problems, ours_located, our_packages))
    return Comparison(tuple(new), tuple(hidden))


def _fixed(
    problems: Sequence[Located], ours: Sequence[Located], packages: Sequence[Package]
) -> list[Finding]:
    """A pass for each baseline problem on a file we ship without that problem.

    Only where the check ran on the package that ships the file: a check that does
    not apply to it (abi.* to a package from another feedstock) fixed nothing.
    """
    shipped: dict[str, tuple[str, str]] = {}  # canonical member -> (package label, member)
    for package in packages:
        if not package.analysed:
            continue
        for member in package.members:
            if member.kind == "file":
                canonical = canonical_member(member.path, package.kind)
                shipped.setdefault(canonical, (package.label, member.path))
    ran = {(item.finding.check, item.label) for item in ours}
    still = {item.key for item in ours if item.finding.status != "pass"}
    fixed: list[Finding] = []
    seen: set[tuple[str, str, str]] = set()
    for item in problems:
        if item.member is None or item.key in still or item.key in seen:
            continue
        label, member = shipped.get(item.key[2], (None, None))
        if label is None or (item.finding.check, label) not in ran:
            continue
        seen.add(item.key)
        fixed.append(
            passed(
                item.finding.check,
                f"{label}:{member}",
                f"fixed: the baseline's {item.label or ''}:{item.member} has "
                f"{item.finding.status} {item.finding.detail!r}",
            )
        )
    return fixed
