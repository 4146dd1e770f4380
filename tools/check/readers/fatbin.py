"""The device code in an ELF file's ``.nv_fatbin`` section: SASS per GPU and PTX.

A fatbin is a sequence of containers (magic 0xBA55ED50, header size, payload size), each
holding entries with a header of their own: kind (1 PTX, 2 ELF/SASS), header size,
payload size and, at byte 28, the GPU architecture (75 for sm_75). Flag bits at byte 40
mark the architecture-specific (``sm_90a``) and family (``sm_100f``) variants; they were
read off nvcc 13.0's output (tests/e2e/test_check_fatbin.py compiles both). Only the headers
are read: a compressed 1 GB fatbin costs a few kilobytes of reads.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import BinaryIO

FATBIN_MAGIC = 0xBA55ED50
SECTION = ".nv_fatbin"
_KIND = {1: "ptx", 2: "sass"}
_ARCH_SPECIFIC = 0x100000
_FAMILY = 0x200000


@dataclass(frozen=True)
class DeviceCode:
    kind: str  # "sass" or "ptx"
    arch: int  # 90 for sm_90 / compute_90
    suffix: str = ""  # "a" (sm_90a), "f" (sm_100f) or ""

    def __str__(self) -> str:
        prefix = "sm" if self.kind == "sass" else "compute"
        return f"{prefix}_{self.arch}{self.suffix}"


def read_fatbin(stream: BinaryIO, offset: int, size: int) -> tuple[DeviceCode, ...]:
    """Every entry of the fatbin containers in ``size`` bytes at ``offset``."""
    found: set[DeviceCode] = set()
    end = offset + size
    while offset + 16 <= end:
        stream.seek(offset)
        magic, _version, header, payload = struct.unpack("<IHHQ", stream.read(16))
        if magic != FATBIN_MAGIC:
            break
        entry, last = offset + header, offset + header + payload
        while entry + 48 <= last:
            stream.seek(entry)
            head = stream.read(48)
            kind, _v, entry_header, entry_payload = struct.unpack_from("<HHIQ", head)
            (arch,) = struct.unpack_from("<I", head, 28)
            (flags,) = struct.unpack_from("<Q", head, 40)
            if kind in _KIND:
                suffix = "f" if flags & _FAMILY else "a" if flags & _ARCH_SPECIFIC else ""
                found.add(DeviceCode(_KIND[kind], arch, suffix))
            if entry_header == 0:
                break
            entry += entry_header + entry_payload
        # Containers follow each other, 8-byte aligned.
        offset = last + (-last % 8)
    # SASS first, then PTX, each by architecture: sm_75 sm_80 ... compute_120
    return tuple(sorted(found, key=lambda code: (code.kind != "sass", code.arch, code.suffix)))
