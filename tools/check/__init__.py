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

from tools.check import (
    abi,
    cuda,
    inventory,
    layout,
    linkage,
    macos,
    metadata,
    owned,
    python_abi,
    windows,
)
from tools.check.archive import Package, check_members
from tools.check.context import Context
from tools.check.expectations import Expectations, OutputExpectation
from tools.check.findings import Finding, any_failed
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

CHECKS: tuple[tuple[str, Callable[[Context], list[Finding]]], ...] = (
    ("archive.member / prefix.files", lambda ctx: check_members(ctx.packages)),
    (inventory.CHECK, inventory.check_formats),
    ("elf.read", linkage.check_elf_readable),
    ("elf.machine", linkage.check_machine),
    ("elf.needed", linkage.check_needed),
    ("elf.runpath", linkage.check_runpath),
    ("elf.glibc / elf.glibcxx / elf.cxxabi", linkage.check_symbol_versions),
    ("macho.arch", macos.check_arch),
    ("macho.minos", macos.check_minos),
    ("macho.install-name", macos.check_install_name),
    ("macho.load-dylib", macos.check_load_dylib),
    ("macho.rpath", macos.check_rpath),
    ("macho.signature", macos.check_signature),
    ("macho.openmp", macos.check_openmp),
    ("pe.machine", windows.check_machine),
    ("pe.imports", windows.check_imports),
    ("pe.crt", windows.check_crt),
    ("abi.cxx11", abi.check_cxx11_abi),
    (python_abi.CHECK, python_abi.check_python_abi),
    ("abi.static-libstdcxx", abi.check_static_libstdcxx),
    ("layout.expected-files", layout.check_expected_files),
    ("layout.overlap", layout.check_overlap),
    ("layout.torch-lib-links", layout.check_torch_lib_links),
    ("layout.pyc", layout.check_pyc),
    ("layout.build-prefix", layout.check_build_prefix),
    (owned.CHECK, owned.check_dependency_owned),
    ("cuda.runtime", cuda.check_cuda_runtime),
    ("cuda.magma", cuda.check_magma),
    ("cuda.fatbin", cuda.check_fatbins),
    ("cuda.native-aot", cuda.check_native_aot),
    (
        "metadata.depends / metadata.constrains / metadata.run-exports / metadata.output",
        metadata.check_metadata,
    ),
)

CHECK_IDS: tuple[str, ...] = tuple(i for name, _ in CHECKS for i in name.split(" / "))


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
    for name, run in CHECKS:
        if only is not None and not set(name.split(" / ")) & set(only):
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
