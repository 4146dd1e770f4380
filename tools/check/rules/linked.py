"""One rule for every platform: every library a binary links resolves.

The loop is the same on Linux, macOS and Windows: for each binary of a package, each library
it needs either resolves (in the packages, on the system, from a run dependency) or is a
problem naming the file. What "resolves" means is the platform loader's, so each platform's
rules module gives a :class:`Linker` (rules/elf.py for ``elf.needed``, rules/macho.py for
``macho.load-dylib``, rules/pe.py for ``pe.imports``); this module declares no ids itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from tools.check.archive import Package
from tools.check.context import Context
from tools.check.findings import Finding, Status, passed
from tools.check.readers.binary import Binary
from tools.check.rules import each_package, verdict

IDS: tuple[str, ...] = ()


@dataclass(frozen=True)
class Resolved:
    """Found; ``deps`` the run dependencies that ship it, ``wheel`` (library, requirement)
    when a wheel of the package's Requires-Dist does."""

    deps: tuple[str, ...] = ()
    wheel: tuple[str, str] | None = None


@dataclass(frozen=True)
class Unresolved:
    status: Status
    why: str


RESOLVED = Resolved()
# (member, its binary, a library it needs) -> how that library resolves
Resolver = Callable[[str, Binary, str], "Resolved | Unresolved"]


class Linker(Protocol):
    """One platform's loader, as far as the rule needs it."""

    check: str

    def files(self, package: Package) -> Mapping[str, object]:
        """The package's binaries of this format, by member."""
        ...

    def binaries(self, package: Package) -> Iterable[tuple[str, str, Binary]]:
        """(member, the finding's path, binary) for each binary the loader maps."""
        ...

    def resolver(self, ctx: Context, package: Package) -> Resolver: ...

    def all_resolve(self, files: int, deps: list[str], wheels: str) -> str:
        """The pass detail: ``files`` binaries, the run dependencies and Requires-Dist
        wheels (``lib by requirement, ...``) their libraries came from."""
        ...


def check_linked(ctx: Context, linker: Linker) -> list[Finding]:
    return each_package(
        ctx, lambda package: _judge(ctx, linker, package), lambda p: linker.files(p)
    )


def _judge(ctx: Context, linker: Linker, package: Package) -> list[Finding]:
    resolve = linker.resolver(ctx, package)
    problems: list[Finding] = []
    deps: set[str] = set()
    wheels: dict[str, str] = {}
    for member, where, binary in linker.binaries(package):
        for library in binary.needs:
            outcome = resolve(member, binary, library)
            if isinstance(outcome, Unresolved):
                problems.append(Finding(linker.check, outcome.status, where, outcome.why))
                continue
            deps.update(outcome.deps)
            if outcome.wheel is not None:
                wheels[outcome.wheel[0]] = outcome.wheel[1]
    from_wheels = ", ".join(f"{lib} by {req}" for lib, req in sorted(wheels.items()))
    detail = linker.all_resolve(len(linker.files(package)), sorted(deps), from_wheels)
    findings = verdict(linker.check, package, problems, detail)
    if problems and from_wheels:
        # What did resolve through a wheel is still worth saying beside the problems.
        findings.append(passed(linker.check, package.label, f"from Requires-Dist: {from_wheels}"))
    return findings
