"""The ELF rules, on every ELF file of a Linux package or wheel (tools/check/readers/elf.py):
the machine, NEEDED resolution (rules/linked.py, with :class:`ElfLinker`), RUNPATH hygiene,
symbol-version ceilings."""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Iterable, Iterator, Mapping

import rattler

from tools.check.archive import Package
from tools.check.context import Context
from tools.check.findings import Finding, failed, machine_findings, member_path, passed, warned
from tools.check.providers import dependency_names, providers_of
from tools.check.readers.binary import Binary
from tools.check.readers.elf import ElfInfo
from tools.check.requires_dist import provided_libraries
from tools.check.rules import each_package, verdict
from tools.check.rules.linked import RESOLVED, Resolved, Resolver, Unresolved

READ = "elf.read"
MACHINE = "elf.machine"
NEEDED = "elf.needed"
RUNPATH = "elf.runpath"
GLIBC = "elf.glibc"
GLIBCXX = "elf.glibcxx"
CXXABI = "elf.cxxabi"
IDS = (READ, MACHINE, NEEDED, RUNPATH, GLIBC, GLIBCXX, CXXABI)

# Provided by the system's C library on every Linux target conda-forge supports.
GLIBC_FAMILY = (
    "libc.so.6",
    "libm.so.6",
    "libdl.so.2",
    "libpthread.so.0",
    "librt.so.1",
    "libutil.so.1",
    "libresolv.so.2",
    "libanl.so.1",
    "libnsl.so.1",
    "libmvec.so.1",
    "libBrokenLocale.so.1",
    "ld-linux-x86-64.so.2",
    "ld-linux-aarch64.so.1",
    "ld64.so.2",
    "ld-linux-riscv64-lp64d.so.1",
    "linux-vdso.so.1",
)
# Installed with the NVIDIA driver, never by a package (the recipe's
# missing_dso_whitelist says the same for libcuda).
DRIVER_LIBRARIES = ("libcuda.so*",)
# The manylinux policy lets wheels take these from the system.
MANYLINUX_EXTRA = ("libstdc++.so.6", "libgcc_s.so.1")

# Highest libstdc++ symbol versions of each GCC major's newest release
# (libstdc++ manual, "ABI Policy and Guidelines"); conda-forge's compiler N
# run-exports libstdcxx >=N, so a binary may need at most these.
GCC_LIBSTDCXX: dict[int, tuple[str, str]] = {
    7: ("3.4.24", "1.3.11"),
    8: ("3.4.25", "1.3.11"),
    9: ("3.4.28", "1.3.12"),
    10: ("3.4.28", "1.3.12"),
    11: ("3.4.29", "1.3.13"),
    12: ("3.4.30", "1.3.13"),
    13: ("3.4.32", "1.3.14"),
    14: ("3.4.33", "1.3.15"),
    15: ("3.4.34", "1.3.16"),
}

_ORIGIN = re.compile(r"^\$(?:ORIGIN|\{ORIGIN\})(?=/|$)")
_MANYLINUX = re.compile(r"manylinux_(\d+)_(\d+)")
_LEGACY_MANYLINUX = {"manylinux1": "2.5", "manylinux2010": "2.12", "manylinux2014": "2.17"}


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def _resolve_origin(member: str, entry: str) -> str | None:
    """The package-relative directory an ``$ORIGIN`` entry of ``member`` names, else None."""
    if not _ORIGIN.match(entry):
        return None
    rest = _ORIGIN.sub("", entry).lstrip("/")
    return posixpath.normpath(posixpath.join(posixpath.dirname(member), rest))


def search_dirs(member: str, binary: Binary) -> list[str]:
    """The package-relative directories the loader would search for this file's NEEDED."""
    resolved = (_resolve_origin(member, entry) for entry in binary.looks_in)
    return [directory for directory in resolved if directory is not None]


# ---------------------------------------------------------------- elf.needed


class ElfLinker:
    """elf.needed (rules/linked.py): a NEEDED resolves through the file's RUNPATH (or RPATH)
    in the packages, to glibc or the driver, to a run dependency that ships it, or, for a
    wheel, to the system's C++ runtime or a wheel of its Requires-Dist."""

    check = NEEDED

    def files(self, package: Package) -> Mapping[str, ElfInfo]:
        return package.elves

    def binaries(self, package: Package) -> Iterator[tuple[str, str, ElfInfo]]:
        for path, info in sorted(package.elves.items()):
            yield path, member_path(package.label, path), info

    def resolver(self, ctx: Context, package: Package) -> Resolver:
        tree = ctx.tree_for(package)
        deps = dependency_names(package)
        from_wheels = provided_libraries(package)
        allowed = (
            GLIBC_FAMILY + DRIVER_LIBRARIES + (MANYLINUX_EXTRA if package.kind == "wheel" else ())
        )

        def resolve(member: str, binary: Binary, needed: str) -> Resolved | Unresolved:
            if _matches(needed, allowed):
                return RESOLVED
            dirs = search_dirs(member, binary)
            if any(tree.resolve(posixpath.join(d, needed)) for d in dirs if not d.startswith("..")):
                return RESOLVED
            providers = providers_of(needed)
            provided_by = sorted(deps.intersection(providers))
            if provided_by:
                return Resolved(deps=tuple(provided_by))
            if needed in from_wheels:
                return Resolved(wheel=(needed, from_wheels[needed]))
            elsewhere = [p for p in tree.named(needed) if tree.resolve(p)]
            if elsewhere:
                return Unresolved(
                    "warn",
                    f"{needed} exists at {elsewhere[0]} but not on this file's RUNPATH "
                    f"({':'.join(binary.looks_in) or 'none'})",
                )
            if providers:
                return Unresolved(
                    "fail",
                    f"{needed} is not in the packages; it comes from {' or '.join(providers)}, "
                    "which is not a run dependency",
                )
            return Unresolved(
                "fail",
                f"{needed} resolves nowhere: not shipped by the checked packages, "
                "not a system or driver library, no known provider among the run dependencies",
            )

        return resolve

    def all_resolve(self, files: int, deps: list[str], wheels: str) -> str:
        via = f"; from run dependencies: {', '.join(deps)}" if deps else ""
        via += f"; from Requires-Dist: {wheels}" if wheels else ""
        return f"all NEEDED of {files} ELF files resolve{via}"


LINKER = ElfLinker()


# ---------------------------------------------------------------- elf.runpath


def runpath_problem(member: str, entry: str, *, relative_root: bool) -> str | None:
    if entry.startswith("/"):
        return f"absolute RUNPATH entry {entry!r} (a build-machine path)"
    resolved = _resolve_origin(member, entry)
    if resolved is None:
        return f"RUNPATH entry {entry!r} is relative to the working directory, not $ORIGIN"
    if relative_root and (resolved == ".." or resolved.startswith("../")):
        return f"RUNPATH entry {entry!r} reaches above the prefix"
    return None


def check_runpath(ctx: Context) -> list[Finding]:
    return each_package(ctx, _runpath, lambda package: package.elves)


def _runpath(package: Package) -> list[Finding]:
    problems = []
    for path, info in sorted(package.elves.items()):
        for kind, entries in (("RUNPATH", info.runpath), ("RPATH", info.rpath)):
            found = [
                p
                for e in entries
                if (p := runpath_problem(path, e, relative_root=package.kind != "wheel"))
            ]
            if found:
                where = member_path(package.label, path)
                problems.append(failed(RUNPATH, where, "; ".join(found).replace("RUNPATH", kind)))
    detail = f"every RUNPATH/RPATH of {len(package.elves)} ELF files is $ORIGIN-relative"
    return verdict(RUNPATH, package, problems, detail)


# ---------------------------------------------------------------- symbol versions


def _highest(package: Package, prefix: str) -> tuple[rattler.Version, str, str] | None:
    best: tuple[rattler.Version, str, str] | None = None
    pattern = re.compile(rf"^{prefix}_(\d+(?:\.\d+)*)$")
    for path, info in package.elves.items():
        for label in info.required_versions:
            match = pattern.match(label)
            if match:
                version = rattler.Version(match.group(1))
                if best is None or version > best[0]:
                    best = (version, label, path)
    return best


def _glibc_ceiling(package: Package, ctx: Context) -> tuple[str | None, str]:
    if ctx.expect.c_stdlib_version:
        return ctx.expect.c_stdlib_version, f"c_stdlib_version {ctx.expect.c_stdlib_version}"
    if package.kind == "wheel":
        name = package.source.name
        match = _MANYLINUX.search(name)
        if match:
            return (
                f"{match.group(1)}.{match.group(2)}",
                f"the wheel's manylinux_{match.group(1)}_{match.group(2)} tag",
            )
        for tag, version in _LEGACY_MANYLINUX.items():
            if tag in name:
                return version, f"the wheel's {tag} tag"
    return None, ""


def check_symbol_versions(ctx: Context) -> list[Finding]:
    return each_package(ctx, lambda package: _symbol_versions(package, ctx), lambda p: p.elves)


def _symbol_versions(package: Package, ctx: Context) -> list[Finding]:
    compiler = ctx.expect.cxx_compiler_version
    gcc_major = (
        int(compiler.split(".")[0]) if compiler and compiler.split(".")[0].isdigit() else None
    )
    findings: list[Finding] = []
    private = [p for p, i in package.elves.items() if "GLIBC_PRIVATE" in i.required_versions]
    for path in sorted(private):
        findings.append(
            failed(
                GLIBC,
                member_path(package.label, path),
                "requires GLIBC_PRIVATE symbols, which no other glibc build provides",
            )
        )
    ceiling, why = _glibc_ceiling(package, ctx)
    findings.extend(_compare(package, "GLIBC", GLIBC, ceiling, why))
    glibcxx_ceiling = cxxabi_ceiling = None
    why_cxx = ""
    if gcc_major is not None:
        if gcc_major in GCC_LIBSTDCXX:
            glibcxx_ceiling, cxxabi_ceiling = GCC_LIBSTDCXX[gcc_major]
            why_cxx = f"the libstdc++ of cxx_compiler_version {compiler}"
        else:
            findings.append(
                warned(
                    GLIBCXX,
                    package.label,
                    f"no libstdc++ version table for cxx_compiler_version {compiler}",
                )
            )
    findings.extend(_compare(package, "GLIBCXX", GLIBCXX, glibcxx_ceiling, why_cxx))
    findings.extend(_compare(package, "CXXABI", CXXABI, cxxabi_ceiling, why_cxx))
    return findings


def _compare(
    package: Package, prefix: str, check: str, ceiling: str | None, why: str
) -> list[Finding]:
    best = _highest(package, prefix)
    if best is None:
        return [passed(check, package.label, f"no {prefix}_ symbol versions required")]
    version, label, path = best
    where = f"{label} (by {posixpath.basename(path)})"
    if ceiling is None:
        return [
            passed(check, package.label, f"highest required: {where}; no config to compare with")
        ]
    if version > rattler.Version(ceiling):
        return [
            failed(
                check,
                member_path(package.label, path),
                f"requires {label}, above {prefix}_{ceiling} allowed by {why}",
            )
        ]
    return [
        passed(check, package.label, f"highest required: {where} <= {prefix}_{ceiling} ({why})")
    ]


# conda subdir -> the e_machine its ELF files must have; a cross-compiled
# linux-aarch64 build that picks up a build-platform (x86_64) binary is caught here.
SUBDIR_MACHINES = {
    "linux-64": "EM_X86_64",
    "linux-aarch64": "EM_AARCH64",
    "linux-ppc64le": "EM_PPC64",
    "linux-riscv64": "EM_RISCV",
}


def check_machine(ctx: Context) -> list[Finding]:
    return each_package(
        ctx,
        lambda package: machine_findings(
            MACHINE,
            package.label,
            package.subdir,
            {path: info.machine for path, info in package.elves.items()},
            SUBDIR_MACHINES[package.subdir],
            "ELF",
        ),
        lambda package: package.subdir in SUBDIR_MACHINES and package.elves,
    )


def check_elf_readable(ctx: Context) -> list[Finding]:
    return each_package(
        ctx,
        lambda package: [
            failed(READ, member_path(package.label, path), error)
            for path, error in sorted(package.elf_errors.items())
        ],
    )
