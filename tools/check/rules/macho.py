"""The macOS rules, on every Mach-O file of an osx-64 / osx-arm64 package or a macOS wheel.

Each rule is one check (``macho.arch`` …); docs/check.md gives each its reason and source:
conda-build's post-processing (``post.py``: install names made ``@rpath/…``, RPATHs made
``@loader_path``-relative, every linked library traced to the package, a dependency or the
system), Apple's ``dyld`` and ``ld`` documentation of the load commands, and PyTorch's own
``check_binary`` (which holds a macOS wheel's libraries to one OpenMP).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from tools.check.archive import Package
from tools.check.context import Context, is_torch
from tools.check.findings import Finding, failed, member_path, passed, warned
from tools.check.formats import wheel_macos_minimum
from tools.check.providers import dependency_names, providers_of

if TYPE_CHECKING:  # macholib is imported only where a Mach-O file is read
    from tools.check.macho import MachOSlice

# conda subdir -> the slice its loader maps
SUBDIR_ARCHS = {"osx-64": "x86_64", "osx-arm64": "arm64"}
# The C++ runtime in /usr/lib: conda-forge ships its own (libcxx), and its compilers link
# @rpath/libc++.1.dylib; a wheel may take the system's, as a manylinux wheel its libstdc++.
SYSTEM_CXX = ("/usr/lib/libc++.1.dylib", "/usr/lib/libc++abi.dylib")
# Paths of package managers on the build machine, never on a user's.
FOREIGN_PREFIXES = ("/usr/local/", "/opt/homebrew/", "/opt/local/", "/sw/")
# What macOS itself provides: /usr/lib (libSystem, libobjc, libresolv ...) and the frameworks.
OS_PREFIXES = ("/usr/lib/", "/System/Library/")
# OpenMP runtimes by file name: LLVM's (conda-forge: llvm-openmp), Intel's, GCC's.
OPENMP = re.compile(r"^lib(?:omp|iomp5|gomp)(?:[.-].*)?\.dylib$")
LLVM_OPENMP = "libomp.dylib"
# The library that holds torch's parallel kernels, so the one that must link OpenMP.
TORCH_CPU = "libtorch_cpu.dylib"


def _archs(package: Package) -> list[str]:
    """The slices the package's platforms load (a wheel's tags, else its subdir's)."""
    return [SUBDIR_ARCHS[p] for p in package.platforms or (package.subdir,) if p in SUBDIR_ARCHS]


def _slices(package: Package) -> Iterator[tuple[str, str, MachOSlice]]:
    """(member, arch, slice) for the slices of each Mach-O file the package's platform loads;
    files without that slice are macho.arch's business and left out here."""
    archs = _archs(package)
    for path, info in sorted(package.machos.items()):
        for found in info.slices:
            if not archs or found.arch in archs:
                yield path, found.arch, found


def _where(package: Package, path: str, arch: str) -> str:
    """The member, with the slice named where the file is universal."""
    universal = package.machos[path].universal
    return member_path(package.label, f"{path} [{arch}]" if universal else path)


def check_arch(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    for package in ctx.analysed():
        wanted = _archs(package)
        if not wanted or not package.machos:
            continue
        bad = 0
        for path, info in sorted(package.machos.items()):
            missing = [arch for arch in wanted if arch not in info.archs]
            if missing:
                bad += 1
                held = ", ".join(info.archs)
                kind = "universal file" if info.universal else "file"
                findings.append(
                    failed(
                        "macho.arch",
                        member_path(package.label, path),
                        f"{kind} holds {held}, not the {' and '.join(missing)} slice "
                        f"{package.subdir} loads",
                    )
                )
        if not bad:
            findings.append(
                passed(
                    "macho.arch",
                    package.label,
                    f"{len(package.machos)} Mach-O files, all holding {' and '.join(wanted)}",
                )
            )
    return findings


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
    findings: list[Finding] = []
    for package in ctx.analysed():
        if not package.machos:
            continue
        target, why = _target(package, ctx)
        above = 0
        highest: tuple[tuple[int, ...], str, str] | None = None
        for path, arch, found in _slices(package):
            if found.minos is None:
                continue
            if highest is None or _version(found.minos) > highest[0]:
                highest = (_version(found.minos), found.minos, path)
            if target is not None and _version(found.minos) > _version(target):
                above += 1
                findings.append(
                    failed(
                        "macho.minos",
                        _where(package, path, arch),
                        f"needs macOS {found.minos} (minos), above {why}: it does not load on "
                        f"the macOS {target} the package promises",
                    )
                )
        if highest is None:
            findings.append(passed("macho.minos", package.label, "no minimum macOS recorded"))
        elif target is None:
            detail = f"highest minos {highest[1]} (by {posixpath.basename(highest[2])}); no config"
            findings.append(passed("macho.minos", package.label, detail))
        elif not above:
            detail = f"highest minos {highest[1]} <= {target} ({why})"
            findings.append(passed("macho.minos", package.label, detail))
    return findings


def check_install_name(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    for package in ctx.analysed():
        dylibs = bad = 0
        for path, arch, found in _slices(package):
            if found.filetype != "dylib":
                continue
            dylibs += 1
            name = found.install_name
            if name is None or not name.startswith("@rpath/"):
                bad += 1
                findings.append(
                    failed(
                        "macho.install-name",
                        _where(package, path, arch),
                        f"install name {name!r} is not @rpath/{posixpath.basename(path)}: every "
                        "file linked against it records that path and looks for it there",
                    )
                )
        if dylibs and not bad:
            detail = f"all {dylibs} dylibs are named @rpath/..."
            findings.append(passed("macho.install-name", package.label, detail))
    return findings


def _search(member: str, entry: str) -> str | None:
    """The package-relative directory an @loader_path LC_RPATH entry names, else None."""
    if entry != "@loader_path" and not entry.startswith("@loader_path/"):
        return None
    rest = entry[len("@loader_path") :].lstrip("/")
    return posixpath.normpath(posixpath.join(posixpath.dirname(member), rest))


def _resolves(tree, directory: str, name: str) -> bool:
    return not directory.startswith("..") and tree.resolve(posixpath.join(directory, name))


def dylib_problem(
    package: Package, tree, deps: set[str], member: str, found: MachOSlice, library: str
) -> tuple[str, str] | None:
    """("fail"|"warn", why) when ``library`` (an LC_LOAD_DYLIB of ``member``) does not
    resolve the way conda-forge's rules allow; None when it does."""
    name = posixpath.basename(library)
    provided = sorted(deps.intersection(providers_of(name)))
    if library in SYSTEM_CXX:
        if package.kind == "wheel":
            return None
        return "fail", (
            f"{library} is the system's C++ runtime; conda-forge links libcxx's "
            f"@rpath/{name}, which the libcxx package ships"
        )
    if library.startswith(FOREIGN_PREFIXES):
        return "fail", f"{library} is a path of a package manager on the build machine"
    if library.startswith(OS_PREFIXES):
        return None
    if library.startswith("/"):
        return "fail", f"{library} is an absolute path outside macOS (a build machine's file)"
    if library.startswith("@executable_path/"):
        return "warn", f"{library} depends on which program loads this file"
    if library.startswith("@loader_path/"):
        directory = posixpath.dirname(
            posixpath.normpath(posixpath.join(posixpath.dirname(member), library[13:]))
        )
        if _resolves(tree, directory, name) or provided:
            return None
        return "fail", f"{library} is not in the packages and no run dependency ships {name}"
    if library.startswith("@rpath/"):
        rest = library[len("@rpath/") :]
        dirs = [d for d in (_search(member, r) for r in found.rpaths) if d is not None]
        if any(_resolves(tree, d, rest) for d in dirs) or provided:
            return None
        elsewhere = [p for p in tree.named(name) if tree.resolve(p)]
        if elsewhere:
            return "warn", (
                f"{library}: {elsewhere[0]} is in the packages but not on this file's "
                f"LC_RPATH ({', '.join(found.rpaths) or 'none'})"
            )
        providers = providers_of(name)
        if providers:
            return "fail", (
                f"{library} comes from {' or '.join(providers)}, which is not a run dependency"
            )
        return "fail", (
            f"{library} resolves nowhere: not on this file's LC_RPATH in the packages, "
            "no known provider among the run dependencies"
        )
    return "fail", f"{library} is relative to the working directory, not @rpath or @loader_path"


def landing_path(tree, member: str, found: MachOSlice, library: str) -> str | None:
    """The file in the packages that ``library`` (an LC_LOAD_DYLIB of ``member``) loads."""
    if library.startswith("@loader_path/"):
        rest = posixpath.join(posixpath.dirname(member), library[len("@loader_path/") :])
        return tree.resolve(rest)
    if library.startswith("@rpath/"):
        rest = library[len("@rpath/") :]
        for directory in (_search(member, r) for r in found.rpaths):
            if directory is not None and not directory.startswith(".."):
                landed = tree.resolve(posixpath.join(directory, rest))
                if landed:
                    return landed
    return None


def check_load_dylib(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    for package in ctx.analysed():
        if not package.machos:
            continue
        tree = ctx.tree_for(package)
        deps = dependency_names(package)
        problems = 0
        for path, arch, found in _slices(package):
            for library in found.dylibs:
                problem = dylib_problem(package, tree, deps, path, found, library)
                if problem is None:
                    continue
                problems += 1
                status, why = problem
                make = failed if status == "fail" else warned
                where = _where(package, path, arch)
                findings.append(make("macho.load-dylib", where, why))
        if not problems:
            detail = f"every LC_LOAD_DYLIB of {len(package.machos)} Mach-O files resolves"
            findings.append(passed("macho.load-dylib", package.label, detail))
    return findings


def check_rpath(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    for package in ctx.analysed():
        if not package.machos:
            continue
        bad = 0
        for path, arch, found in _slices(package):
            for entry in found.rpaths:
                directory = _search(path, entry)
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
                bad += 1
                where = _where(package, path, arch)
                findings.append(failed("macho.rpath", where, why))
        if not bad:
            detail = (
                f"every LC_RPATH of {len(package.machos)} Mach-O files is @loader_path-relative"
            )
            findings.append(passed("macho.rpath", package.label, detail))
    return findings


def check_signature(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    for package in ctx.analysed():
        signed = bad = 0
        for path, arch, found in _slices(package):
            if not arch.startswith("arm64"):
                continue
            if found.signature_problem is None:
                signed += 1
                continue
            bad += 1
            findings.append(
                failed(
                    "macho.signature",
                    _where(package, path, arch),
                    f"{found.signature_problem}; macOS on Apple silicon kills unsigned or "
                    "modified arm64 code when it loads (re-sign with codesign -s - -f)",
                )
            )
        if signed and not bad:
            detail = f"all {signed} arm64 files carry a signature matching their load commands"
            findings.append(passed("macho.signature", package.label, detail))
    return findings


def check_openmp(ctx: Context) -> list[Finding]:
    """One OpenMP runtime, llvm-openmp's, linked by @rpath and shipped by that package only."""
    findings: list[Finding] = []
    for package in ctx.analysed():
        if not package.machos:
            continue
        tree = ctx.tree_for(package)
        deps = dependency_names(package)
        bad = 0
        runtimes: dict[str, str] = {}
        for path in sorted(package.machos):
            if OPENMP.match(posixpath.basename(path)):
                bad += 1
                findings.append(
                    failed(
                        "macho.openmp",
                        member_path(package.label, path),
                        "bundles an OpenMP runtime; llvm-openmp ships the one every package "
                        "of the environment must share (two runtimes in one process crash "
                        "or oversubscribe)",
                    )
                )
        for path, _arch, found in _slices(package):
            for library in found.dylibs:
                name = posixpath.basename(library)
                if not OPENMP.match(name):
                    continue
                runtimes.setdefault(name, path)
                if name != LLVM_OPENMP:
                    bad += 1
                    findings.append(
                        failed(
                            "macho.openmp",
                            member_path(package.label, path),
                            f"links {library}; conda-forge's OpenMP on macOS is llvm-openmp's "
                            f"{LLVM_OPENMP}",
                        )
                    )
                elif package.kind == "conda" and "llvm-openmp" not in deps:
                    bad += 1
                    findings.append(
                        failed(
                            "macho.openmp",
                            member_path(package.label, path),
                            f"links {library}, but llvm-openmp is not a run dependency",
                        )
                    )
                else:
                    landing = landing_path(tree, path, found, library)
                    owner = tree.get(landing).package if landing else None
                    if owner is not None and (owner.kind == "wheel" or is_torch(owner)):
                        bad += 1
                        findings.append(
                            failed(
                                "macho.openmp",
                                member_path(package.label, path),
                                f"links {library}, which resolves to the package's own copy "
                                f"{landing}, not llvm-openmp's",
                            )
                        )
        cpu = [p for p in package.machos if posixpath.basename(p) == TORCH_CPU]
        if cpu and not runtimes:
            bad += 1
            findings.append(
                failed(
                    "macho.openmp",
                    member_path(package.label, cpu[0]),
                    "links no OpenMP runtime; the recipe builds torch with llvm-openmp's "
                    "(check_torch.py --expect openmp)",
                )
            )
        if len(runtimes) > 1:
            bad += 1
            listed = ", ".join(f"{name} (by {path})" for name, path in sorted(runtimes.items()))
            findings.append(
                failed("macho.openmp", package.label, f"links several OpenMP runtimes: {listed}")
            )
        if not bad:
            detail = (
                f"links llvm-openmp's {LLVM_OPENMP} only" if runtimes else "links no OpenMP runtime"
            )
            findings.append(passed("macho.openmp", package.label, detail))
    return findings
