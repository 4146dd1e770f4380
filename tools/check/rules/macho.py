"""The macOS rules, on every Mach-O file of an osx-64 / osx-arm64 package or a macOS wheel.

Each rule is one check (``macho.arch`` …); docs/check.md gives each its reason and source:
conda-build's post-processing (``post.py``: install names made ``@rpath/…``, RPATHs made
``@loader_path``-relative, every linked library traced to the package, a dependency or the
system), Apple's ``dyld`` and ``ld`` documentation of the load commands, and PyTorch's own
``check_binary``. macho.openmp, on the same files, is rules/openmp.py's.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from tools.check.archive import Package
from tools.check.context import Context
from tools.check.findings import Finding, failed, member_path
from tools.check.formats import wheel_macos_minimum
from tools.check.providers import dependency_names, providers_of
from tools.check.readers.binary import Binary
from tools.check.rules import each_package, verdict
from tools.check.rules.linked import RESOLVED, Resolved, Resolver, Unresolved

if TYPE_CHECKING:  # macholib is imported only where a Mach-O file is read
    from tools.check.readers.macho import MachOInfo, MachOSlice

ARCH = "macho.arch"
MINOS = "macho.minos"
INSTALL_NAME = "macho.install-name"
LOAD_DYLIB = "macho.load-dylib"
RPATH = "macho.rpath"
SIGNATURE = "macho.signature"
IDS = (ARCH, MINOS, INSTALL_NAME, LOAD_DYLIB, RPATH, SIGNATURE)

# conda subdir -> the slice its loader maps
SUBDIR_ARCHS = {"osx-64": "x86_64", "osx-arm64": "arm64"}
# The C++ runtime in /usr/lib: conda-forge ships its own (libcxx), and its compilers link
# @rpath/libc++.1.dylib; a wheel may take the system's, as a manylinux wheel its libstdc++.
SYSTEM_CXX = ("/usr/lib/libc++.1.dylib", "/usr/lib/libc++abi.dylib")
# Paths of package managers on the build machine, never on a user's.
FOREIGN_PREFIXES = ("/usr/local/", "/opt/homebrew/", "/opt/local/", "/sw/")
# What macOS itself provides: /usr/lib (libSystem, libobjc, libresolv ...) and the frameworks.
OS_PREFIXES = ("/usr/lib/", "/System/Library/")


def _archs(package: Package) -> list[str]:
    """The slices the package's platforms load (a wheel's tags, else its subdir's)."""
    return [SUBDIR_ARCHS[p] for p in package.platforms or (package.subdir,) if p in SUBDIR_ARCHS]


def slices(package: Package) -> Iterator[tuple[str, str, MachOSlice]]:
    """(member, arch, slice) for the slices of each Mach-O file the package's platform loads;
    files without that slice are macho.arch's business and left out here."""
    archs = _archs(package)
    for path, info in sorted(package.machos.items()):
        for found in info.slices:
            if not archs or found.arch in archs:
                yield path, found.arch, found


def where(package: Package, path: str, arch: str) -> str:
    """The member, with the slice named where the file is universal."""
    universal = package.machos[path].universal
    return member_path(package.label, f"{path} [{arch}]" if universal else path)


def check_arch(ctx: Context) -> list[Finding]:
    return each_package(ctx, _arch, lambda package: _archs(package) and package.machos)


def _arch(package: Package) -> list[Finding]:
    wanted = _archs(package)
    problems = []
    for path, info in sorted(package.machos.items()):
        missing = [arch for arch in wanted if arch not in info.archs]
        if missing:
            kind = "universal file" if info.universal else "file"
            problems.append(
                failed(
                    ARCH,
                    member_path(package.label, path),
                    f"{kind} holds {', '.join(info.archs)}, not the {' and '.join(missing)} "
                    f"slice {package.subdir} loads",
                )
            )
    detail = f"{len(package.machos)} Mach-O files, all holding {' and '.join(wanted)}"
    return verdict(ARCH, package, problems, detail)


def _target(package: Package, ctx: Context) -> tuple[str | None, str]:
    if ctx.expect.macos_deployment_target:
        return ctx.expect.macos_deployment_target, (
            f"the config's deployment target {ctx.expect.macos_deployment_target} "
            "(MACOSX_DEPLOYMENT_TARGET / c_stdlib_version)"
        )
    if package.kind == "wheel":
        tag_minimum = wheel_macos_minimum(package.source.name)
        if tag_minimum:
            return tag_minimum, f"the wheel's macosx_{tag_minimum.replace('.', '_')} tag"
    return None, ""


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if part.isdigit())


def check_minos(ctx: Context) -> list[Finding]:
    return each_package(ctx, lambda package: _minos(package, ctx), lambda p: p.machos)


def _minos(package: Package, ctx: Context) -> list[Finding]:
    target, why = _target(package, ctx)
    problems = []
    highest: tuple[tuple[int, ...], str, str] | None = None
    for path, arch, found in slices(package):
        if found.minos is None:
            continue
        if highest is None or _version(found.minos) > highest[0]:
            highest = (_version(found.minos), found.minos, path)
        if target is not None and _version(found.minos) > _version(target):
            problems.append(
                failed(
                    MINOS,
                    where(package, path, arch),
                    f"needs macOS {found.minos} (minos), above {why}: it does not load on "
                    f"the macOS {target} the package promises",
                )
            )
    if highest is None:
        detail = "no minimum macOS recorded"
    elif target is None:
        detail = f"highest minos {highest[1]} (by {posixpath.basename(highest[2])}); no config"
    else:
        detail = f"highest minos {highest[1]} <= {target} ({why})"
    return verdict(MINOS, package, problems, detail)


def check_install_name(ctx: Context) -> list[Finding]:
    return each_package(ctx, _install_name)


def _install_name(package: Package) -> list[Finding]:
    dylibs = 0
    problems = []
    for path, arch, found in slices(package):
        if found.filetype != "dylib":
            continue
        dylibs += 1
        name = found.install_name
        if name is None or not name.startswith("@rpath/"):
            problems.append(
                failed(
                    INSTALL_NAME,
                    where(package, path, arch),
                    f"install name {name!r} is not @rpath/{posixpath.basename(path)}: every "
                    "file linked against it records that path and looks for it there",
                )
            )
    detail = f"all {dylibs} dylibs are named @rpath/..." if dylibs else None
    return verdict(INSTALL_NAME, package, problems, detail)


def search_dir(member: str, entry: str) -> str | None:
    """The package-relative directory an @loader_path LC_RPATH entry names, else None."""
    if entry != "@loader_path" and not entry.startswith("@loader_path/"):
        return None
    rest = entry[len("@loader_path") :].lstrip("/")
    return posixpath.normpath(posixpath.join(posixpath.dirname(member), rest))


def _resolves(tree, directory: str, name: str) -> bool:
    return not directory.startswith("..") and tree.resolve(posixpath.join(directory, name))


def _dylib(
    package: Package, tree, deps: set[str], member: str, found: Binary, library: str
) -> Resolved | Unresolved:
    """How ``library`` (an LC_LOAD_DYLIB of ``member``) resolves, by conda-forge's rules."""
    name = posixpath.basename(library)
    provided = sorted(deps.intersection(providers_of(name)))
    if library in SYSTEM_CXX:
        if package.kind == "wheel":
            return RESOLVED
        return Unresolved(
            "fail",
            f"{library} is the system's C++ runtime; conda-forge links libcxx's "
            f"@rpath/{name}, which the libcxx package ships",
        )
    if library.startswith(FOREIGN_PREFIXES):
        return Unresolved("fail", f"{library} is a path of a package manager on the build machine")
    if library.startswith(OS_PREFIXES):
        return RESOLVED
    if library.startswith("/"):
        return Unresolved(
            "fail", f"{library} is an absolute path outside macOS (a build machine's file)"
        )
    if library.startswith("@executable_path/"):
        return Unresolved("warn", f"{library} depends on which program loads this file")
    if library.startswith("@loader_path/"):
        directory = posixpath.dirname(
            posixpath.normpath(posixpath.join(posixpath.dirname(member), library[13:]))
        )
        if _resolves(tree, directory, name) or provided:
            return RESOLVED
        return Unresolved(
            "fail", f"{library} is not in the packages and no run dependency ships {name}"
        )
    if library.startswith("@rpath/"):
        rest = library[len("@rpath/") :]
        dirs = [d for d in (search_dir(member, r) for r in found.looks_in) if d is not None]
        if any(_resolves(tree, d, rest) for d in dirs) or provided:
            return RESOLVED
        elsewhere = [p for p in tree.named(name) if tree.resolve(p)]
        if elsewhere:
            return Unresolved(
                "warn",
                f"{library}: {elsewhere[0]} is in the packages but not on this file's "
                f"LC_RPATH ({', '.join(found.looks_in) or 'none'})",
            )
        providers = providers_of(name)
        if providers:
            return Unresolved(
                "fail",
                (f"{library} comes from {' or '.join(providers)}, which is not a run dependency"),
            )
        return Unresolved(
            "fail",
            f"{library} resolves nowhere: not on this file's LC_RPATH in the packages, "
            "no known provider among the run dependencies",
        )
    return Unresolved(
        "fail", f"{library} is relative to the working directory, not @rpath or @loader_path"
    )


class MachoLinker:
    """macho.load-dylib (rules/linked.py), per slice of the package's platform."""

    check = LOAD_DYLIB

    def files(self, package: Package) -> Mapping[str, MachOInfo]:
        return package.machos

    def binaries(self, package: Package) -> Iterator[tuple[str, str, MachOSlice]]:
        for path, arch, found in slices(package):
            yield path, where(package, path, arch), found

    def resolver(self, ctx: Context, package: Package) -> Resolver:
        tree = ctx.tree_for(package)
        deps = dependency_names(package)
        return lambda member, found, library: _dylib(package, tree, deps, member, found, library)

    def all_resolve(self, files: int, deps: list[str], wheels: str) -> str:
        return f"every LC_LOAD_DYLIB of {files} Mach-O files resolves"


LINKER = MachoLinker()


def check_rpath(ctx: Context) -> list[Finding]:
    return each_package(ctx, _rpath, lambda package: package.machos)


def _rpath(package: Package) -> list[Finding]:
    problems = []
    for path, arch, found in slices(package):
        for entry in found.rpaths:
            directory = search_dir(path, entry)
            if directory is None:
                why = (
                    f"absolute LC_RPATH {entry!r} (a build machine's path)"
                    if entry.startswith("/")
                    else f"LC_RPATH {entry!r} is not @loader_path-relative"
                )
            elif package.kind != "wheel" and directory.startswith(".."):
                why = f"LC_RPATH {entry!r} reaches above the prefix"
            else:
                continue
            problems.append(failed(RPATH, where(package, path, arch), why))
    detail = f"every LC_RPATH of {len(package.machos)} Mach-O files is @loader_path-relative"
    return verdict(RPATH, package, problems, detail)


def check_signature(ctx: Context) -> list[Finding]:
    return each_package(ctx, _signature)


def _signature(package: Package) -> list[Finding]:
    signed = 0
    problems = []
    for path, arch, found in slices(package):
        if not arch.startswith("arm64"):
            continue
        if found.signature_problem is None:
            signed += 1
            continue
        problems.append(
            failed(
                SIGNATURE,
                where(package, path, arch),
                f"{found.signature_problem}; macOS on Apple silicon kills unsigned or "
                "modified arm64 code when it loads (re-sign with codesign -s - -f)",
            )
        )
    detail = f"all {signed} arm64 files carry a signature matching their load commands"
    return verdict(SIGNATURE, package, problems, detail if signed else None)
