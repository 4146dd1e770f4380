"""Check ``binary.formats``: a verdict must not pass what it did not read.

Every package says how many ELF, Mach-O and PE files the checks read (with the numbers in
``--json``'s ``counts``); a Mach-O or PE file that does not parse fails; a binary of a format
no check reads is a warning, and one of another platform's format (an ELF file in an
osx-arm64 package) is a warning too: no loader of that platform maps it.
"""

from __future__ import annotations

from tools.check.archive import Package
from tools.check.context import Context
from tools.check.findings import Finding, failed, member_path, passed, warned
from tools.check.formats import READ, platform_format
from tools.check.rules import each_package

CHECK = "binary.formats"
IDS = (CHECK,)


def check_formats(ctx: Context) -> list[Finding]:
    return each_package(ctx, _formats)


def _formats(package: Package) -> list[Finding]:
    findings: list[Finding] = []
    read = {"ELF": len(package.elves), "Mach-O": len(package.machos), "PE": len(package.pes)}
    unread = 0
    for path, (kind, why) in sorted(package.binary_errors.items()):
        where = member_path(package.label, path)
        if kind in READ:
            findings.append(failed(CHECK, where, f"{kind} file that does not parse: {why}"))
        else:
            findings.append(warned(CHECK, where, why))
        unread += 1
    unread += len(package.elf_errors)
    expected = platform_format(package.subdir)
    if expected is not None:
        for kind, members in (
            ("ELF", package.elves),
            ("Mach-O", package.machos),
            ("PE", package.pes),
        ):
            for path in sorted(members) if kind != expected else ():
                findings.append(
                    warned(
                        CHECK,
                        member_path(package.label, path),
                        f"{kind} file; {package.subdir}'s loader maps {expected} files only",
                    )
                )
    total = sum(read.values())
    detail = ", ".join(f"{n} {kind}" for kind, n in read.items())
    if unread:
        detail += f"; {unread} binaries not read (above)"
    findings.append(
        passed(CHECK, package.label, f"read {total} binaries: {detail}").with_counts(
            {**read, "unread": unread}
        )
    )
    return findings
