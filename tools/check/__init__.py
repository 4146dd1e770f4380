"""Check built packages the way PyTorch's binary checks do, for conda artifacts.

``check(paths, expectations)`` reads packages (``.conda``/``.tar.bz2``, a
directory of them, an installed prefix, or an upstream wheel) and returns
findings.  Reading (I/O) and checking (pure functions over the package
records) are separate: :func:`load` then :func:`run_checks`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from tools.check import abi, cuda, layout, linkage, metadata
from tools.check.archive import Package, check_members, read_all
from tools.check.context import Context
from tools.check.expectations import Expectations, OutputExpectation
from tools.check.findings import Finding, any_failed
from tools.errors import UserError

__all__ = [
    "CHECKS",
    "Expectations",
    "Finding",
    "OutputExpectation",
    "Package",
    "any_failed",
    "check",
    "load",
    "run_checks",
]

CHECKS: tuple[tuple[str, Callable[[Context], list[Finding]]], ...] = (
    ("archive.member / prefix.files", lambda ctx: check_members(ctx.packages)),
    ("elf.read", linkage.check_elf_readable),
    ("elf.machine", linkage.check_machine),
    ("elf.needed", linkage.check_needed),
    ("elf.runpath", linkage.check_runpath),
    ("elf.glibc / elf.glibcxx / elf.cxxabi", linkage.check_symbol_versions),
    ("abi.cxx11", abi.check_cxx11_abi),
    ("abi.static-libstdcxx", abi.check_static_libstdcxx),
    ("layout.expected-files", layout.check_expected_files),
    ("layout.overlap", layout.check_overlap),
    ("layout.torch-lib-links", layout.check_torch_lib_links),
    ("layout.pyc", layout.check_pyc),
    ("layout.build-prefix", layout.check_build_prefix),
    ("cuda.runtime", cuda.check_cuda_runtime),
    ("cuda.magma", cuda.check_magma),
    (
        "metadata.depends / metadata.constrains / metadata.run-exports / metadata.output",
        metadata.check_metadata,
    ),
)


def load(paths: Iterable[Path], workdir: Path | None = None) -> list[Package]:
    """Read every package; ELF members are spooled one at a time into a private directory."""
    if workdir is not None:
        return read_all(paths, workdir)
    with tempfile.TemporaryDirectory(prefix="tools-check-") as private:
        return read_all(paths, Path(private))


def run_checks(packages: Sequence[Package], expect: Expectations | None = None) -> list[Finding]:
    expect = expect or Expectations()
    _require_config_platform(packages, expect)
    ctx = Context(packages, expect)
    findings: list[Finding] = []
    for _, run in CHECKS:
        findings.extend(run(ctx))
    return findings


def _require_config_platform(packages: Sequence[Package], expect: Expectations) -> None:
    """A config describes one platform; comparing another's packages with it is meaningless
    (a linux-64 library's GLIBC against a macOS SDK version), so it is refused."""
    if expect.subdir is None:
        return
    for package in packages:
        if package.analysed and package.subdir not in (expect.subdir, "noarch"):
            raise UserError(
                f"{package.label}: built for {package.subdir or 'an unknown platform'}, but "
                f"config {expect.config} builds {expect.subdir}; pass the config it was built from"
            )


def check(paths: Iterable[Path], expect: Expectations | None = None) -> list[Finding]:
    return run_checks(load(paths), expect)
