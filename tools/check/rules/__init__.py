"""The rules: pure functions from the packages' records (a Context) to findings.

Each module is one family of checks and declares ``IDS``, the check ids its findings carry
(each documented in tools/commands/check.py's epilog; tests/unit/test_check_ids.py holds both to
it). A rule judges one package at a time (:func:`each_package`) and, where it finds no
problem, says so once for the package (:func:`verdict`); a rule whose verdict is per file
(cuda.magma, cuda.fatbin, cuda.native-aot, the metadata comparisons) keeps the loop only.
Three look wider than one package: abi.cxx11 and layout.overlap judge the packages one config
installs together (``Context.groups``), and archive.member / prefix.files every package read,
analysed or only listed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from tools.check.archive import Package
from tools.check.context import Context
from tools.check.findings import Finding, passed


def each_package(
    ctx: Context,
    judge: Callable[[Package], Iterable[Finding]],
    having: Callable[[Package], object] | None = None,
) -> list[Finding]:
    """``judge``'s findings on every analysed package (those ``having`` holds for)."""
    findings: list[Finding] = []
    for package in ctx.analysed():
        if having is None or having(package):
            findings.extend(judge(package))
    return findings


def verdict(
    check: str, package: Package, problems: Sequence[Finding], detail: str | None
) -> list[Finding]:
    """The problems found in ``package``; with none, one pass of ``check`` for the whole
    package saying ``detail`` (None when there is nothing to vouch for)."""
    if problems:
        return list(problems)
    return [passed(check, package.label, detail)] if detail is not None else []
