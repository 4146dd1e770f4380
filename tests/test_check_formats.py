"""Which binary format a file is, which subdirs a wheel's platform tag fits, and that a
package's verdict says what it read (check ``binary.formats``): records and bytes only."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.check import Expectations, run_checks
from tools.check.archive import Package
from tools.check.formats import binary_format, wheel_macos_minimum, wheel_platforms
from tools.foundation.errors import UserError


def _package(subdir: str, **fields) -> Package:
    return Package(
        source=Path("/pkgs/libtorch-2.13.0-cpu_generic_h1_2.conda"),
        kind="conda",
        name="libtorch",
        version="2.13.0",
        build="cpu_generic_h1_2",
        subdir=subdir,
        **fields,
    )


def _formats(package: Package):
    return [f for f in run_checks([package]) if f.check == "binary.formats"]


@pytest.mark.parametrize(
    ("head", "kind"),
    [
        (b"\x7fELF\x02\x01\x01", "ELF"),
        (b"\xcf\xfa\xed\xfe\x0c\x00\x00\x01", "Mach-O"),
        (b"\xca\xfe\xba\xbe\x00\x00\x00\x02", "Mach-O"),
        (b"\xca\xfe\xba\xbe\x00\x00\x00\x34", None),  # a Java class file (version 52)
        (b"MZ" + b"\0" * 0x3A + b"\x40\0\0\0" + b"PE\0\0", "PE"),
        (b"MZ" + b"\0" * 0x3A + b"\x40\0\0\0" + b"NE\0\0", None),  # a DOS/16-bit program
        (b"\0asm\x01\0\0\0", "WebAssembly"),
        (b"#!/bin/sh\n", None),
    ],
)
def test_a_files_format_is_known_from_its_first_bytes(head, kind):
    assert binary_format(head) == kind


def test_a_macos_package_with_no_binaries_read_says_so():
    (counted,) = _formats(_package("osx-arm64"))
    assert (counted.status, counted.detail) == ("pass", "read 0 binaries: 0 ELF, 0 Mach-O, 0 PE")


def test_a_binary_of_a_format_no_check_reads_warns():
    unread = {"lib/torch.wasm": ("WebAssembly", "a WebAssembly binary; no check reads this format")}
    package = _package("osx-arm64", binary_errors=unread)
    (warning,) = [f for f in _formats(package) if f.status == "warn"]
    assert warning.path.endswith(":lib/torch.wasm")
    (counted,) = [f for f in _formats(package) if f.status == "pass"]
    assert dict(counted.counts)["unread"] == 1


def test_a_binary_of_another_platforms_format_warns():
    from tools.check.elf import ElfInfo

    info = ElfInfo("EM_X86_64", None, (), (), (), (), 0, 0, 0, ())
    (warning,) = [
        f
        for f in _formats(_package("osx-arm64", elves={"lib/libx.so": info}))
        if f.status == "warn"
    ]
    assert warning.detail == "ELF file; osx-arm64's loader maps Mach-O files only"


@pytest.mark.parametrize(
    ("tag", "subdirs"),
    [
        ("macosx_14_0_arm64", ("osx-arm64",)),
        ("macosx_11_0_x86_64", ("osx-64",)),
        ("macosx_10_9_universal2", ("osx-arm64", "osx-64")),
        ("win_amd64", ("win-64",)),
        ("manylinux_2_28_x86_64", ("linux-64",)),
        ("manylinux_2_17_aarch64.manylinux2014_aarch64", ("linux-aarch64",)),
    ],
)
def test_wheel_platform_tags_map_to_conda_subdirs(tag, subdirs):
    assert wheel_platforms(tag) == subdirs


def test_a_macos_wheel_tag_names_its_minimum_macos():
    assert wheel_macos_minimum("torch-1.0-cp312-cp312-macosx_14_0_arm64.whl") == "14.0"


def test_a_macos_wheel_is_checked_against_its_config_and_refused_by_another():
    wheel = Package(
        source=Path("/w/torch-1.0-cp312-cp312-macosx_14_0_arm64.whl"),
        kind="wheel",
        name="torch",
        version="1.0",
        build="",
        subdir="osx-arm64",
        platforms=("osx-arm64",),
    )
    run_checks([wheel], Expectations(config="osx_arm64", subdir="osx-arm64"))
    with pytest.raises(UserError, match="built for osx-arm64, but config osx_64 builds osx-64"):
        run_checks([wheel], Expectations(config="osx_64", subdir="osx-64"))
