"""The packages as archives: no member escapes its package, and an installed prefix holds
every file its conda-meta records list (tools/check/archive.py reads them)."""

from __future__ import annotations

from collections.abc import Iterable

from tools.check.archive import Package
from tools.check.findings import Finding, failed, member_path, passed

MEMBER = "archive.member"
PREFIX_FILES = "prefix.files"
IDS = (MEMBER, PREFIX_FILES)


def check_members(packages: Iterable[Package]) -> list[Finding]:
    """Unsafe members (absolute, '..', escaping links) are failures; they were never written.

    In a prefix, the files a package's conda-meta record lists must all be there: a check of
    what is missing would otherwise pass by having nothing to look at.
    """
    findings = []
    for package in packages:
        if package.kind == "prefix":
            if package.analysed:
                findings.append(_prefix_files(package))
            continue
        for name, reason in package.unsafe:
            findings.append(failed(MEMBER, member_path(package.label, name), reason))
        if not package.unsafe:
            findings.append(
                passed(
                    MEMBER,
                    package.label,
                    f"{len(package.members)} members, all inside the package",
                )
            )
    return findings


def _prefix_files(package: Package) -> Finding:
    record = f"conda-meta record of {package.name}"
    if package.missing:
        first = ", ".join(package.missing[:3]) + (" ..." if len(package.missing) > 3 else "")
        return failed(
            PREFIX_FILES,
            package.label,
            f"{len(package.missing)} of {len(package.members) + len(package.missing)} files "
            f"the {record} lists are missing ({first}); reinstall {package.name}",
        )
    if not package.members:
        return failed(PREFIX_FILES, package.label, f"the {record} lists no files")
    return passed(
        PREFIX_FILES,
        package.label,
        f"all {len(package.members)} files the {record} lists are present",
    )
