"""The ELF rules on records: NEEDED resolution, RUNPATHs, symbol versions, the C++ ABI and
the machine.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from helpers.check_records import elf, fails, package, statuses

from tools.check import Expectations, run_checks
from tools.check.archive import Package
from tools.check.rules.abi import declared_abi
from tools.check.rules.elf import runpath_problem

REPO = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ linkage


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("/home/conda/feedstock_root/build_artifacts/x/_h_env/lib", "absolute"),
        ("/lib/intel64", "absolute"),
        ("lib", "working directory"),
        ("$ORIGIN/../../../..", "above the prefix"),
    ],
)
def test_runpath_entries_that_do_not_stay_origin_relative_are_problems(entry, problem):
    assert problem in runpath_problem("lib/libtorch.so", entry, relative_root=True)


def test_origin_relative_runpath_inside_the_prefix_is_fine():
    assert (
        runpath_problem(
            "lib/python3.12/site-packages/torch/_C.so", "$ORIGIN/lib", relative_root=True
        )
        is None
    )
    assert runpath_problem("lib/libtorch.so", "${ORIGIN}/../lib", relative_root=True) is None


def test_needed_found_through_a_runpath_symlink_resolves():
    lib = package(files=["lib/libc10.so"], elves={"lib/libshm.so": elf(["libc10.so", "libc.so.6"])})
    py = package(
        "pytorch",
        "cpu_generic_py312_h1_2",
        links=[("lib/python3.12/site-packages/torch/lib/libc10.so", "../../../../libc10.so")],
        elves={"lib/python3.12/site-packages/torch/_C.so": elf(["libc10.so"], ["$ORIGIN/lib"])},
    )
    assert statuses(run_checks([lib, py]), "elf.needed") == ["pass"]


def test_needed_provided_by_a_dependency_not_in_depends_fails():
    lib = package(elves={"lib/libtorch_cpu.so": elf(["libgomp.so.1"])}, depends=["libstdcxx >=14"])
    failing = fails(run_checks([lib]), "elf.needed")
    assert len(failing) == 1 and "libgomp" in failing[0].detail


def test_needed_from_a_run_dependency_passes():
    lib = package(
        elves={"lib/libtorch_cpu.so": elf(["libgomp.so.1", "libcuda.so.1"])},
        depends=["libgomp >=14"],
    )
    assert statuses(run_checks([lib]), "elf.needed") == ["pass"]


def test_needed_present_but_off_the_runpath_is_a_warning():
    lib = package(
        files=["lib/libc10.so"], elves={"bin/tool": elf(["libc10.so"], runpath=["$ORIGIN"])}
    )
    assert statuses(run_checks([lib]), "elf.needed") == ["warn"]


def test_glibcxx_above_what_the_compiler_ships_fails():
    lib = package(
        elves={
            "lib/libc10.so": elf(versions=[("libstdc++.so.6", ("GLIBCXX_3.4.34", "CXXABI_1.3.15"))])
        }
    )
    findings = run_checks([lib], Expectations(cxx_compiler_version="14"))
    assert "above GLIBCXX_3.4.33" in fails(findings, "elf.glibcxx")[0].detail
    assert statuses(findings, "elf.cxxabi") == ["pass"]


def test_glibc_private_requirement_fails():
    lib = package(
        elves={"lib/libc10.so": elf(versions=[("libc.so.6", ("GLIBC_PRIVATE", "GLIBC_2.17"))])}
    )
    assert fails(run_checks([lib], Expectations(c_stdlib_version="2.17")), "elf.glibc")


# ------------------------------------------------------------------ C++ ABI


def test_torchconfig_abi_flag_is_read():
    assert declared_abi('set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=0")') == 0
    assert declared_abi("no flag here") is None


def test_old_abi_symbols_contradicting_torchconfig_fail():
    lib = package(
        files=["share/cmake/Torch/TorchConfig.cmake"],
        texts={"share/cmake/Torch/TorchConfig.cmake": "-D_GLIBCXX_USE_CXX11_ABI=1"},
        elves={"lib/libtorch_cpu.so": elf(cxx11=500, old=3)},
    )
    assert fails(run_checks([lib]), "abi.cxx11")


def test_statically_linked_libstdcxx_in_a_conda_torch_library_fails():
    lib = package(elves={"lib/libtorch_cpu.so": elf(std=12)})
    assert "12 libstdc++ symbols" in fails(run_checks([lib]), "abi.static-libstdcxx")[0].detail


def test_binary_for_another_architecture_fails():
    aarch64 = Package(
        source=Path("/pkgs/libtorch-2.13.0-cpu_generic_h1_2.conda"),
        kind="conda",
        name="libtorch",
        version="2.13.0",
        build="cpu_generic_h1_2",
        subdir="linux-aarch64",
        elves={"lib/libc10.so": elf()},
    )
    assert (
        "EM_X86_64 binary in a linux-aarch64 package"
        in fails(run_checks([aarch64]), "elf.machine")[0].detail
    )


def test_an_elf_file_looks_for_its_libraries_on_its_runpath_or_else_its_rpath():
    with_runpath = elf(needed=("libz.so.1",), runpath=("$ORIGIN/../lib",))
    assert (with_runpath.needs, with_runpath.looks_in) == (("libz.so.1",), ("$ORIGIN/../lib",))
    assert replace(elf(runpath=()), rpath=("$ORIGIN",)).looks_in == ("$ORIGIN",)
