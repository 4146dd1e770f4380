"""Check built packages the way PyTorch's binary checks do, for conda artifacts.

``check(paths, expectations)`` reads packages (``.conda``/``.tar.bz2``, a
directory of them, an installed prefix, or an upstream wheel) and returns
findings.  Reading (I/O) and checking (pure functions over the package
records) are separate: :func:`load` then :func:`run_checks`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from tools.check.archive import Package
from tools.check.context import Context
from tools.check.expectations import Expectations, OutputExpectation
from tools.check.findings import Finding, any_failed
from tools.check.rules import (
    abi,
    archive,
    cuda,
    elf,
    inventory,
    layout,
    linked,
    macho,
    metadata,
    openmp,
    owned,
    pe,
    python_abi,
)
from tools.check.sources import read_all
from tools.foundation.errors import UserError

__all__ = [
    "CHECKS",
    "CHECK_IDS",
    "Expectations",
    "Finding",
    "OutputExpectation",
    "Package",
    "any_failed",
    "check",
    "load",
    "resolve_only",
    "run_checks",
]

# Every rule, in the order its findings are reported: (the check ids it emits, the rule).
# The ids are its module's (each rules/ module declares them in IDS).
Rule = Callable[[Context], list[Finding]]
CHECKS: tuple[tuple[tuple[str, ...], Rule], ...] = (
    (archive.IDS, lambda ctx: archive.check_members(ctx.packages)),
    (inventory.IDS, inventory.check_formats),
    ((elf.READ,), elf.check_elf_readable),
    ((elf.MACHINE,), elf.check_machine),
    ((elf.NEEDED,), lambda ctx: linked.check_linked(ctx, elf.LINKER)),
    ((elf.RUNPATH,), elf.check_runpath),
    ((elf.GLIBC, elf.GLIBCXX, elf.CXXABI), elf.check_symbol_versions),
    ((macho.ARCH,), macho.check_arch),
    ((macho.MINOS,), macho.check_minos),
    ((macho.INSTALL_NAME,), macho.check_install_name),
    ((macho.LOAD_DYLIB,), lambda ctx: linked.check_linked(ctx, macho.LINKER)),
    ((macho.RPATH,), macho.check_rpath),
    ((macho.SIGNATURE,), macho.check_signature),
    (openmp.IDS, openmp.check_openmp),
    ((pe.MACHINE,), pe.check_machine),
    ((pe.IMPORTS,), lambda ctx: linked.check_linked(ctx, pe.LINKER)),
    ((pe.CRT,), pe.check_crt),
    (("abi.cxx11",), abi.check_cxx11_abi),
    (python_abi.IDS, python_abi.check_python_abi),
    (("abi.static-libstdcxx",), abi.check_static_libstdcxx),
    (("layout.expected-files",), layout.check_expected_files),
    (("layout.overlap",), layout.check_overlap),
    (("layout.torch-lib-links",), layout.check_torch_lib_links),
    (("layout.pyc",), layout.check_pyc),
    (("layout.build-prefix",), layout.check_build_prefix),
    (owned.IDS, owned.check_dependency_owned),
    (("cuda.runtime",), cuda.check_cuda_runtime),
    (("cuda.magma",), cuda.check_magma),
    (("cuda.fatbin",), cuda.check_fatbins),
    (("cuda.native-aot",), cuda.check_native_aot),
    (metadata.IDS, metadata.check_metadata),
)

CHECK_IDS: tuple[str, ...] = tuple(i for ids, _ in CHECKS for i in ids)


def resolve_only(requested: Iterable[str]) -> frozenset[str]:
    """``--only`` values (``elf.runpath``, or a family such as ``elf``) as check ids."""
    chosen: set[str] = set()
    for item in requested:
        family = item.rstrip(".*")
        found = [i for i in CHECK_IDS if i == item or i.split(".", 1)[0] == family]
        if not found:
            from tools.foundation.selection import closest

            near = ", ".join(closest(item, CHECK_IDS))
            raise UserError(
                f"--only {item}: no such check; the closest are {near} "
                "(`python -m tools check --help` lists them all)"
            )
        chosen.update(found)
    return frozenset(chosen)


def load(paths: Iterable[Path], workdir: Path | None = None) -> list[Package]:
    """Read every package; ELF members are spooled one at a time into a private directory."""
    if workdir is not None:
        return read_all(paths, workdir)
    with tempfile.TemporaryDirectory(prefix="tools-check-") as private:
        return read_all(paths, Path(private))


def run_checks(
    packages: Sequence[Package],
    expect: Expectations | None = None,
    only: Collection[str] | None = None,
) -> list[Finding]:
    """Every check's findings; with ``only`` (check ids), just those checks'."""
    expect = expect or Expectations()
    packages = _for_config_platform(packages, expect)
    ctx = Context(packages, expect)
    findings: list[Finding] = []
    for ids, run in CHECKS:
        if only is not None and not set(ids) & set(only):
            continue
        findings.extend(run(ctx))
    if only is not None:
        findings = [f for f in findings if f.check in only]
    return findings


def _for_config_platform(packages: Sequence[Package], expect: Expectations) -> list[Package]:
    """A config describes one platform; comparing another's packages with it is meaningless
    (a linux-64 library's GLIBC against a macOS SDK version), so it is refused. A wheel that
    fits several platforms (macOS universal2) is checked as the config's."""
    if expect.subdir is None:
        return list(packages)
    pinned = []
    for package in packages:
        fits = package.platforms or (package.subdir,)
        if package.analysed and expect.subdir not in fits and package.subdir != "noarch":
            raise UserError(
                f"{package.label}: built for {package.subdir or 'an unknown platform'}, but "
                f"config {expect.config} builds {expect.subdir}; pass the config it was built from"
            )
        if len(fits) > 1:
            package = replace(package, subdir=expect.subdir, platforms=(expect.subdir,))
        pinned.append(package)
    return pinned


def check(
    paths: Iterable[Path], expect: Expectations | None = None, only: Collection[str] | None = None
) -> list[Finding]:
    return run_checks(load(paths), expect, only)
