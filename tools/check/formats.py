"""Which binary format a file is, which format each platform loads, which subdirs a wheel's
platform tag fits. The check that counts what was read is tools/check/rules/inventory.py."""

from __future__ import annotations

import re
import struct
from typing import Literal

BinaryFormat = Literal["ELF", "Mach-O", "PE", "WebAssembly"]
READ: tuple[BinaryFormat, ...] = ("ELF", "Mach-O", "PE")

# conda subdir prefix -> the format its loader maps
PLATFORM_FORMATS: dict[str, BinaryFormat] = {
    "linux-": "ELF",
    "osx-": "Mach-O",
    "win-": "PE",
    "emscripten-": "WebAssembly",
}

MACHO_THIN = (b"\xfe\xed\xfa\xce", b"\xce\xfa\xed\xfe", b"\xfe\xed\xfa\xcf", b"\xcf\xfa\xed\xfe")
MACHO_FAT = (b"\xca\xfe\xba\xbe", b"\xca\xfe\xba\xbf")
# Java class files share 0xCAFEBABE; their next field (the version, >= 45) is what a fat
# header's slice count would be. No universal file has 30 slices; file(1) draws the same line.
_MAX_SLICES = 30


def binary_format(head: bytes) -> BinaryFormat | None:
    """The format of a file from its first bytes, or None for anything else."""
    if head[:4] == b"\x7fELF":
        return "ELF"
    if head[:4] in MACHO_THIN:
        return "Mach-O"
    if head[:4] in MACHO_FAT and len(head) >= 8:
        if 0 < struct.unpack(">I", head[4:8])[0] < _MAX_SLICES:
            return "Mach-O"
        return None
    if head[:2] == b"MZ" and len(head) >= 0x40:
        # An MZ stub whose e_lfanew points at a PE signature (a plain DOS program has none).
        (lfanew,) = struct.unpack_from("<I", head, 0x3C)
        if head[lfanew : lfanew + 4] == b"PE\0\0":
            return "PE"
        return None
    if head[:4] == b"\0asm":
        return "WebAssembly"
    return None


def foreign_format(kind: BinaryFormat) -> str:
    return f"a {kind} binary; no check reads this format"


def platform_format(subdir: str) -> BinaryFormat | None:
    return next((f for prefix, f in PLATFORM_FORMATS.items() if subdir.startswith(prefix)), None)


# A wheel's platform tag (one dotted part) -> the conda subdirs it fits.
_WHEEL_TAGS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (re.compile(r"^(?:many|musl)?linux.*_x86_64$"), ("linux-64",)),
    (re.compile(r"^(?:many|musl)?linux.*_aarch64$"), ("linux-aarch64",)),
    (re.compile(r"^(?:many|musl)?linux.*_ppc64le$"), ("linux-ppc64le",)),
    (re.compile(r"^(?:many|musl)?linux.*_s390x$"), ("linux-s390x",)),
    (re.compile(r"^(?:many|musl)?linux.*_riscv64$"), ("linux-riscv64",)),
    (re.compile(r"^macosx_\d+_\d+_x86_64$"), ("osx-64",)),
    (re.compile(r"^macosx_\d+_\d+_arm64$"), ("osx-arm64",)),
    (re.compile(r"^macosx_\d+_\d+_universal2$"), ("osx-arm64", "osx-64")),
    (re.compile(r"^win_amd64$"), ("win-64",)),
    (re.compile(r"^win_arm64$"), ("win-arm64",)),
    (re.compile(r"^win32$"), ("win-32",)),
    (re.compile(r"^any$"), ("noarch",)),
)
_MACOS_TAG = re.compile(r"(?:^|[.-])macosx_(\d+)_(\d+)_")


def wheel_platforms(tag: str) -> tuple[str, ...]:
    """The conda subdirs a wheel's platform tag (``macosx_14_0_arm64``,
    ``manylinux_2_17_x86_64.manylinux2014_x86_64``) fits, or () for an unknown one."""
    found: list[str] = []
    for part in tag.split("."):
        for pattern, subdirs in _WHEEL_TAGS:
            if pattern.match(part):
                found.extend(s for s in subdirs if s not in found)
    return tuple(found)


def wheel_macos_minimum(tag: str) -> str | None:
    """``14.0`` for ``macosx_14_0_arm64``: the oldest macOS the wheel says it runs on."""
    match = _MACOS_TAG.search(tag)
    return f"{match.group(1)}.{match.group(2)}" if match else None
