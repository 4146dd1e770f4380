"""The --baseline rules (tools/check/baseline.py) over findings and package records."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.check.archive import Member, Package
from tools.check.baseline import canonical_member, compare
from tools.check.findings import failed, passed, warned

WHEEL = Package(
    Path("torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl"),
    "wheel",
    "torch",
    "2.13.0",
    "",
    "linux-64",
    members=(Member("torch/lib/libc10.so", "file"),),
)


def _conda(name: str, *members: str) -> Package:
    return Package(
        Path(f"{name}-2.13.0-cpu_generic_h0_0.conda"),
        "conda",
        name,
        "2.13.0",
        "cpu_generic_h0_0",
        "linux-64",
        members=tuple(Member(m, "file") for m in members),
    )


@pytest.mark.parametrize(
    ("member", "kind", "expected"),
    [
        ("torch/lib/libc10.so", "wheel", "torch/lib/libc10.so"),
        ("lib/libc10.so", "conda", "torch/lib/libc10.so"),
        ("lib/python3.12/site-packages/torch/lib/libc10.so", "conda", "torch/lib/libc10.so"),
        ("lib/python3.13t/site-packages/torch/bin/test_api", "conda", "torch/bin/test_api"),
        ("Lib/site-packages/torch/lib/c10.dll", "conda", "torch/lib/c10.dll"),
        ("bin/torch_shm_manager", "conda", "torch/bin/torch_shm_manager"),
        ("share/cmake/Torch/X.cmake", "prefix", "torch/share/cmake/Torch/X.cmake"),
        ("torch-2.13.0.dist-info/RECORD", "wheel", "torch-2.13.0.dist-info/RECORD"),
        ("info/about.json", "conda", "info/about.json"),
    ],
)
def test_files_correspond_where_they_land_in_an_installed_torch(member, kind, expected) -> None:
    assert canonical_member(member, kind) == expected


def test_a_warning_in_the_baseline_covers_a_failure_of_the_same_check_and_file() -> None:
    ours = _conda("libtorch", "lib/libc10.so")
    mine = [failed("abi.static-libstdcxx", f"{ours.label}:lib/libc10.so", "defines 3")]
    theirs = [warned("abi.static-libstdcxx", f"{WHEEL.label}:torch/lib/libc10.so", "defines 9")]
    result = compare(mine, [ours], theirs, [WHEEL])
    assert result.hidden == tuple(mine) and result.new == ()


def test_another_check_on_the_same_file_is_not_covered() -> None:
    ours = _conda("libtorch", "lib/libc10.so")
    mine = [failed("elf.needed", f"{ours.label}:lib/libc10.so", "libfoo.so resolves nowhere")]
    theirs = [failed("elf.runpath", f"{WHEEL.label}:torch/lib/libc10.so", "absolute")]
    assert compare(mine, [ours], theirs, [WHEEL]).new == tuple(mine)


def test_a_package_finding_is_covered_only_by_the_same_detail() -> None:
    ours = _conda("libtorch", "lib/libc10.so")
    mine = [
        failed("layout.expected-files", ours.label, "missing lib/libtorch_cpu.so"),
        failed("layout.expected-files", ours.label, "missing lib/libshm.so"),
    ]
    upstream = _conda("libtorch-upstream", "lib/libc10.so")
    theirs = [failed("layout.expected-files", upstream.label, "missing lib/libshm.so")]
    result = compare(mine, [ours], theirs, [upstream])
    assert result.new == (mine[0],) and result.hidden == (mine[1],)


def test_fixed_is_claimed_only_where_the_check_ran_on_the_shipping_package() -> None:
    ours = _conda("libc10-other-feedstock", "lib/libc10.so")
    theirs = [warned("abi.static-libstdcxx", f"{WHEEL.label}:torch/lib/libc10.so", "defines 9")]
    # abi.* checks only torch packages: nothing of ours ran it, so nothing was fixed.
    assert compare([], [ours], theirs, [WHEEL]).new == ()
    ran = [passed("abi.static-libstdcxx", ours.label, "no std:: definitions")]
    [fixed] = [f for f in compare(ran, [ours], theirs, [WHEEL]).new if f not in ran]
    assert fixed.status == "pass" and fixed.path == f"{ours.label}:lib/libc10.so"
