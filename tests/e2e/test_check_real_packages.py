"""``python -m tools check`` on real PyTorch binaries.

The torch 2.13.0 CPU wheel is unpacked and laid out the way
recipe/build.sh splits it: ``libtorch`` (lib/, include/, share/cmake, bin/)
and ``pytorch`` (site-packages/torch with torch/lib entries linked into
$PREFIX/lib, libtorch_python in $PREFIX/lib), plus the ``pytorch-cpu``
metapackage.  They are packed into real .conda files with
conda-package-handling (zstd level 1: the 430 MB libtorch_cpu.so is packed
once), kept in the tests cache (made once per machine; tests/helpers/check_real_split.py),
read once per session, and then checked against different expectations.  Broken packages are
small and built beside them. The command itself: tests/e2e/test_check_real_command.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.check_real_split import (
    Built,
    _expect,
    _failures,
    built_packages,
)

from tools.check import load, run_checks

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def built(torch_wheel, tests_cache_dir, tmp_path_factory) -> Built:
    return built_packages(torch_wheel, tests_cache_dir, tmp_path_factory)


@pytest.fixture(scope="session")
def clean_packages(built: Built):
    return load(built.clean)


# ------------------------------------------------------------------ clean packages


def test_clean_split_passes_every_check_that_applies_to_upstream_binaries(built, clean_packages):
    findings = run_checks(clean_packages, _expect(built))
    # Upstream builds with devtoolset, which links parts of libstdc++ statically;
    # that is the one property a conda-forge build must not share with them.
    unexpected = [f for f in _failures(findings) if f.check != "abi.static-libstdcxx"]
    assert unexpected == []
    checks_run = {f.check for f in findings}
    assert {
        "archive.member",
        "elf.machine",
        "elf.needed",
        "elf.runpath",
        "elf.glibc",
        "elf.glibcxx",
        "elf.cxxabi",
        "abi.cxx11",
        "layout.expected-files",
        "layout.overlap",
        "layout.torch-lib-links",
        "layout.build-prefix",
        "cuda.runtime",
        "metadata.depends",
        "metadata.constrains",
        "metadata.run-exports",
    } <= checks_run


def test_libtorch_cpu_symbols_agree_with_the_cxx11_abi(built, clean_packages):
    findings = [f for f in run_checks(clean_packages, _expect(built)) if f.check == "abi.cxx11"]
    assert [f.status for f in findings] == ["pass"]
    assert findings[0].path.endswith(":lib/libtorch_cpu.so")
    assert "0 old-ABI" in findings[0].detail


def test_upstream_devtoolset_libstdcxx_pieces_are_reported_as_static_libstdcxx(
    built, clean_packages
):
    failing = _failures(run_checks(clean_packages, _expect(built)), "abi.static-libstdcxx")
    assert any(
        f.path.endswith(":lib/libtorch_cpu.so") and "filesystem" in f.detail for f in failing
    )


def test_needed_libraries_resolve_through_runpath_and_run_dependencies(built, clean_packages):
    needed = [f for f in run_checks(clean_packages, _expect(built)) if f.check == "elf.needed"]
    assert {f.status for f in needed} == {"pass"}
    libtorch = next(f for f in needed if f.path.startswith("libtorch-"))
    assert "libgomp" in libtorch.detail and "libstdcxx" in libtorch.detail


def test_torch_lib_entries_of_pytorch_are_links_into_prefix_lib(built, clean_packages):
    links = [
        f for f in run_checks(clean_packages, _expect(built)) if f.check == "layout.torch-lib-links"
    ]
    assert [f.status for f in links] == ["pass"]
    assert links[0].detail.startswith("6 torch/lib links")


# ------------------------------------------------------------------ broken packages


def test_glibc_requirement_above_the_configs_c_stdlib_version_fails(built, clean_packages):
    findings = run_checks(clean_packages, _expect(built, c_stdlib_version="2.17"))
    glibc = _failures(findings, "elf.glibc")
    assert glibc and all("above GLIBC_2.17" in f.detail for f in glibc)
    assert any("GLIBC_2.28" in f.detail for f in glibc)


def test_missing_library_fails_needed_resolution(built):
    findings = run_checks(load([built.missing_lib]))
    needed = _failures(findings, "elf.needed")
    assert {f.path.rsplit(":", 1)[1] for f in needed} >= {"lib/libshm.so", "lib/libtorch.so"}
    assert all("libtorch_cpu.so" in f.detail for f in needed)
    assert any(
        "missing lib/libtorch_cpu.so" in f.detail
        for f in _failures(findings, "layout.expected-files")
    )


def test_absolute_runpath_set_by_patchelf_fails(built):
    failing = _failures(run_checks(load([built.absolute_runpath])), "elf.runpath")
    assert len(failing) == 1
    assert failing[0].path.endswith(":lib/libc10.so")
    assert "/home/conda/feedstock_root" in failing[0].detail


def test_dotdot_absolute_and_escaping_members_fail_and_are_never_written(built, tmp_path):
    before = set(built.dotdot_member.parent.parent.iterdir())
    findings = run_checks(load([built.dotdot_member], workdir=tmp_path))
    failing = {f.path.split(":", 1)[1]: f.detail for f in _failures(findings, "archive.member")}
    assert set(failing) == {"../escaped-by-dotdot.txt", "/tmp/absolute-member.txt", "lib/passwd"}
    assert "'..'" in failing["../escaped-by-dotdot.txt"]
    assert "escapes" in failing["lib/passwd"]
    assert not (built.dotdot_member.parent.parent / "escaped-by-dotdot.txt").exists()
    assert not Path("/tmp/absolute-member.txt").exists()
    assert set(built.dotdot_member.parent.parent.iterdir()) == before
    assert list(tmp_path.iterdir()) == []


def test_file_shipped_by_two_packages_of_one_config_fails(built, clean_packages):
    packages = [*clean_packages, *load([built.overlapping])]
    overlap = _failures(run_checks(packages, _expect(built)), "layout.overlap")
    assert [f.path for f in overlap] == ["lib/libc10.so"]
    assert "libtorch-extras" in overlap[0].detail and "libtorch-2.13.0" in overlap[0].detail
