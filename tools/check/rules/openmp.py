"""macho.openmp: one OpenMP runtime in a macOS package, llvm-openmp's (PyTorch's own
``check_binary`` holds a macOS wheel's libraries to one OpenMP too; docs/check.md has why).
The Mach-O files and their slices are rules/macho.py's."""

from __future__ import annotations

import posixpath
import re
from typing import TYPE_CHECKING

from tools.check.archive import Package
from tools.check.context import Context, is_torch
from tools.check.findings import Finding, failed, member_path
from tools.check.providers import dependency_names
from tools.check.rules import each_package, verdict
from tools.check.rules.macho import search_dir, slices

if TYPE_CHECKING:  # macholib is imported only where a Mach-O file is read
    from tools.check.readers.macho import MachOSlice

OPENMP_CHECK = "macho.openmp"
IDS = (OPENMP_CHECK,)

# OpenMP runtimes by file name: LLVM's (conda-forge: llvm-openmp), Intel's, GCC's.
OPENMP = re.compile(r"^lib(?:omp|iomp5|gomp)(?:[.-].*)?\.dylib$")
LLVM_OPENMP = "libomp.dylib"
# The library that holds torch's parallel kernels, so the one that must link OpenMP.
TORCH_CPU = "libtorch_cpu.dylib"


def landing_path(tree, member: str, found: MachOSlice, library: str) -> str | None:
    """The file in the packages that ``library`` (an LC_LOAD_DYLIB of ``member``) loads."""
    if library.startswith("@loader_path/"):
        rest = posixpath.join(posixpath.dirname(member), library[len("@loader_path/") :])
        return tree.resolve(rest)
    if library.startswith("@rpath/"):
        rest = library[len("@rpath/") :]
        for directory in (search_dir(member, r) for r in found.rpaths):
            if directory is not None and not directory.startswith(".."):
                landed = tree.resolve(posixpath.join(directory, rest))
                if landed:
                    return landed
    return None


def check_openmp(ctx: Context) -> list[Finding]:
    """One OpenMP runtime, llvm-openmp's, linked by @rpath and shipped by that package only."""
    return each_package(ctx, lambda package: _openmp(package, ctx), lambda p: p.machos)


def _openmp(package: Package, ctx: Context) -> list[Finding]:
    tree = ctx.tree_for(package)
    deps = dependency_names(package)
    problems: list[Finding] = []
    runtimes: dict[str, str] = {}
    for path in sorted(package.machos):
        if OPENMP.match(posixpath.basename(path)):
            problems.append(
                failed(
                    OPENMP_CHECK,
                    member_path(package.label, path),
                    "bundles an OpenMP runtime; llvm-openmp ships the one every package "
                    "of the environment must share (two runtimes in one process crash "
                    "or oversubscribe)",
                )
            )
    for path, _arch, found in slices(package):
        for library in found.dylibs:
            name = posixpath.basename(library)
            if not OPENMP.match(name):
                continue
            runtimes.setdefault(name, path)
            if name != LLVM_OPENMP:
                problems.append(
                    failed(
                        OPENMP_CHECK,
                        member_path(package.label, path),
                        f"links {library}; conda-forge's OpenMP on macOS is llvm-openmp's "
                        f"{LLVM_OPENMP}",
                    )
                )
            elif package.kind == "conda" and "llvm-openmp" not in deps:
                problems.append(
                    failed(
                        OPENMP_CHECK,
                        member_path(package.label, path),
                        f"links {library}, but llvm-openmp is not a run dependency",
                    )
                )
            else:
                landing = landing_path(tree, path, found, library)
                owner = tree.get(landing).package if landing else None
                if owner is not None and (owner.kind == "wheel" or is_torch(owner)):
                    problems.append(
                        failed(
                            OPENMP_CHECK,
                            member_path(package.label, path),
                            f"links {library}, which resolves to the package's own copy "
                            f"{landing}, not llvm-openmp's",
                        )
                    )
    cpu = [p for p in package.machos if posixpath.basename(p) == TORCH_CPU]
    if cpu and not runtimes:
        problems.append(
            failed(
                OPENMP_CHECK,
                member_path(package.label, cpu[0]),
                "links no OpenMP runtime; the recipe builds torch with llvm-openmp's "
                "(check_torch.py --expect openmp)",
            )
        )
    if len(runtimes) > 1:
        listed = ", ".join(f"{name} (by {path})" for name, path in sorted(runtimes.items()))
        problems.append(
            failed(OPENMP_CHECK, package.label, f"links several OpenMP runtimes: {listed}")
        )
    detail = f"links llvm-openmp's {LLVM_OPENMP} only" if runtimes else "links no OpenMP runtime"
    return verdict(OPENMP_CHECK, package, problems, detail)
