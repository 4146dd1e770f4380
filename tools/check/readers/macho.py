"""What the macOS checks need from one Mach-O file: its load commands, per architecture.

The reader is macholib's: its ``mach_o`` module holds the header, fat-header and load-command
layouts, the load-command numbers and the CPU and file-type names. Its ``MachO`` class is not
used, because it reads the data of every section while it walks the load commands: 421 MB
for the 2.15.0 wheel's libtorch_cpu.dylib, 0.26 s and that much memory. Here only the mach
header and the ``sizeofcmds`` bytes after it are read (a few kilobytes), plus, for a signed
file, its code signature's CodeDirectory and the pages it hashes that hold the load commands.

Why macholib (and pefile for Windows, tools/check/readers/pe.py) rather than lief, which reads all
three formats and is what conda-build uses: measured on the 2.15.0 wheels, ``import lief``
(1.0.0) takes 0.4 s and lief's parse of libtorch_cpu.dylib 2.4 s with its dyld-info parsing
off, against 0.01 s and a few milliseconds for the load commands here; torch_cpu.dll's
imports take 0.4 s in lief and 1 ms in pefile. ELF stays with pyelftools
(tools/check/readers/elf.py), so a Linux check imports neither. Both are pure Python, small,
and long maintained (macholib by py2app's maintainer, pefile since 2004).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from typing import BinaryIO, ClassVar

from macholib import mach_o
from macholib.ptypes import sizeof

from tools.check.formats import MACHO_FAT, MACHO_THIN, BinaryFormat

# Commands whose library the loader maps (weak ones may be absent at run time, but a
# conda package that names one still means it).
DYLIB_COMMANDS = {
    mach_o.LC_LOAD_DYLIB: "LC_LOAD_DYLIB",
    mach_o.LC_LOAD_WEAK_DYLIB: "LC_LOAD_WEAK_DYLIB",
    mach_o.LC_REEXPORT_DYLIB: "LC_REEXPORT_DYLIB",
    mach_o.LC_LAZY_LOAD_DYLIB: "LC_LAZY_LOAD_DYLIB",
    mach_o.LC_LOAD_UPWARD_DYLIB: "LC_LOAD_UPWARD_DYLIB",
}
_PLATFORM_MACOS = 1
_CPU_SUBTYPE_ARM64E = 2
_CPU_SUBTYPE_MASK = 0x00FFFFFF

# Code signature blobs (Apple's xnu, osfmk/kern/cs_blobs.h): a SuperBlob of indexed blobs,
# slot 0 the CodeDirectory, whose code slots hash the file page by page.
_CSMAGIC_EMBEDDED_SIGNATURE = 0xFADE0CC0
_CSMAGIC_CODEDIRECTORY = 0xFADE0C02
_CSSLOT_CODEDIRECTORY = 0
_HASHES = {1: "sha1", 2: "sha256", 3: "sha256", 4: "sha384"}  # 3: SHA-256 truncated to 20


@dataclass(frozen=True)
class MachOSlice:
    arch: str  # "arm64", "x86_64", "arm64e", "i386" ...
    filetype: str  # "dylib", "bundle", "execute", "object" ...
    install_name: str | None  # LC_ID_DYLIB
    dylibs: tuple[str, ...]  # every library a LC_*_DYLIB command loads, in order
    rpaths: tuple[str, ...]
    minos: str | None  # "14.0", from LC_BUILD_VERSION (macOS) or LC_VERSION_MIN_MACOSX
    # None: signed and the signature hashes the load commands as they are; otherwise why not
    signature_problem: str | None

    # The Binary view (readers/binary.py), of this slice: dyld searches @rpath/ names in the
    # slice's LC_RPATH entries.
    format: ClassVar[BinaryFormat] = "Mach-O"

    @property
    def needs(self) -> tuple[str, ...]:
        return self.dylibs

    @property
    def looks_in(self) -> tuple[str, ...]:
        return self.rpaths


@dataclass(frozen=True)
class MachOInfo:
    slices: tuple[MachOSlice, ...]
    universal: bool

    @property
    def archs(self) -> tuple[str, ...]:
        return tuple(s.arch for s in self.slices)

    def slice_for(self, arch: str) -> MachOSlice | None:
        return next((s for s in self.slices if s.arch == arch), None)


class Forward:
    """A stream read front to back: an archive member, which cannot seek. ``seek`` moves
    forward only, reading and dropping what lies between (Mach-O keeps the load commands at
    the front and the code signature at the end of each slice, so nothing is read twice and
    nothing needs spooling to disk)."""

    def __init__(self, stream: BinaryIO, head: bytes = b"") -> None:
        self._stream, self._head, self._at = stream, head, 0

    def tell(self) -> int:
        return self._at

    def read(self, size: int) -> bytes:
        data = b""
        if self._at < len(self._head):
            data = self._head[self._at : self._at + size]
        if len(data) < size:
            data += self._stream.read(size - len(data))
        self._at += len(data)
        return data

    def seek(self, position: int) -> None:
        if position < self._at:
            raise ValueError(f"offset {position} lies before {self._at}, already read")
        while self._at < position:
            if not self.read(min(position - self._at, 1 << 20)):
                raise ValueError(f"offset {position} lies past the end of the file")


def read_macho(stream: BinaryIO, size: int) -> MachOInfo:
    """The slices of a thin or universal Mach-O file of ``size`` bytes, read front to back
    (``stream`` need not seek: see :class:`Forward`).

    Raises ValueError when the file is not a well-formed Mach-O file.
    """
    reader = stream if isinstance(stream, Forward) else Forward(stream)
    try:
        magic = reader.read(4)
        if magic in MACHO_FAT:
            return MachOInfo(tuple(_fat_slices(reader, magic)), universal=True)
        return MachOInfo((_read_slice(reader, 0, size, magic),), universal=False)
    except (struct.error, ValueError, KeyError, IndexError, EOFError, UnicodeError) as exc:
        raise ValueError(f"unreadable Mach-O ({exc})") from exc


def _fat_slices(reader: Forward, magic: bytes) -> list[MachOSlice]:
    count = struct.unpack(">I", reader.read(4))[0]
    arch_layout = mach_o.fat_arch64 if magic == b"\xca\xfe\xba\xbf" else mach_o.fat_arch
    entries = [
        arch_layout.from_str(reader.read(sizeof(arch_layout)), _endian_=">") for _ in range(count)
    ]
    found: dict[int, MachOSlice] = {}
    # Slices are read in the order they lie in the file, and listed in the header's.
    for index in sorted(range(count), key=lambda i: entries[i].offset):
        reader.seek(entries[index].offset)
        found[index] = _read_slice(
            reader, entries[index].offset, entries[index].size, reader.read(4)
        )
    return [found[index] for index in range(count)]


def _arch(cputype: int, cpusubtype: int) -> str:
    name = mach_o.CPU_TYPE_NAMES.get(cputype)
    if name == "ARM64":
        return "arm64e" if cpusubtype & _CPU_SUBTYPE_MASK == _CPU_SUBTYPE_ARM64E else "arm64"
    if name is None:
        return f"cputype {cputype}"
    return name if name in ("x86_64", "i386") else name.lower()


def version_string(packed: int) -> str:
    """A Mach-O version (xxxx.yy.zz in nibbles) as ``14.0`` or ``10.15.1``."""
    major, minor, patch = packed >> 16, (packed >> 8) & 0xFF, packed & 0xFF
    return f"{major}.{minor}" + (f".{patch}" if patch else "")


# The pages a CodeDirectory hashes are at most 64 KiB (page size 2^16); the head kept in
# memory covers the load commands and the page that ends them.
_LARGEST_PAGE = 1 << 16


def _read_slice(reader: Forward, offset: int, size: int, magic: bytes) -> MachOSlice:
    """The slice at ``offset``, whose first 4 bytes ``magic`` the reader has just read."""
    if magic not in MACHO_THIN:
        raise ValueError(f"no Mach-O header at offset {offset}")
    endian = ">" if magic in (b"\xfe\xed\xfa\xce", b"\xfe\xed\xfa\xcf") else "<"
    is_64 = magic in (b"\xfe\xed\xfa\xcf", b"\xcf\xfa\xed\xfe")
    layout = mach_o.mach_header_64 if is_64 else mach_o.mach_header
    header_size = sizeof(layout)
    head = magic + reader.read(header_size - 4)
    header = layout.from_str(head, _endian_=endian)
    if header_size + header.sizeofcmds > size:
        raise ValueError("load commands run past the end of the file")
    loaded = header_size + header.sizeofcmds
    head += reader.read(min(size, loaded + _LARGEST_PAGE) - len(head))
    commands = head[header_size:loaded]
    if len(commands) < header.sizeofcmds:
        raise ValueError("load commands run past the end of the file")
    install_name = None
    dylibs: list[str] = []
    rpaths: list[str] = []
    minos = None
    signature: tuple[int, int] | None = None
    at = 0
    for _ in range(header.ncmds):
        load = mach_o.load_command.from_str(commands[at : at + 8], _endian_=endian)
        if load.cmdsize < 8 or at + load.cmdsize > len(commands):
            raise ValueError(f"load command {load.cmd:#x} has an impossible size {load.cmdsize}")
        body = commands[at : at + load.cmdsize]
        kind = load.cmd
        if kind in DYLIB_COMMANDS or kind == mach_o.LC_ID_DYLIB:
            name = _string(body, mach_o.dylib_command, endian)
            if kind == mach_o.LC_ID_DYLIB:
                install_name = name
            else:
                dylibs.append(name)
        elif kind == mach_o.LC_RPATH:
            rpaths.append(_string(body, mach_o.rpath_command, endian))
        elif kind == mach_o.LC_BUILD_VERSION:
            command = mach_o.build_version_command.from_str(body[8:24], _endian_=endian)
            if command.platform == _PLATFORM_MACOS:
                minos = version_string(command.minos)
        elif kind == mach_o.LC_VERSION_MIN_MACOSX and minos is None:
            command = mach_o.version_min_command.from_str(body[8:16], _endian_=endian)
            minos = version_string(command.version)
        elif kind == mach_o.LC_CODE_SIGNATURE:
            command = mach_o.linkedit_data_command.from_str(body[8:16], _endian_=endian)
            signature = (command.dataoff, command.datasize)
        at += load.cmdsize
    return MachOSlice(
        arch=_arch(header.cputype, header.cpusubtype),
        filetype=mach_o.MH_FILETYPE_SHORTNAMES.get(header.filetype, str(header.filetype)),
        install_name=install_name,
        dylibs=tuple(dylibs),
        rpaths=tuple(rpaths),
        minos=minos,
        signature_problem=_signature_problem(reader, offset, size, signature, head, loaded),
    )


def _string(body: bytes, layout, endian: str) -> str:
    """The lc_str of a load command: its first field is the string's offset in the command."""
    (where,) = struct.unpack_from(endian + "I", body, 8)
    if not sizeof(mach_o.load_command) + sizeof(layout) - 4 <= where < len(body):
        raise ValueError(f"string offset {where} outside its load command")
    return body[where:].split(b"\0", 1)[0].decode("utf-8")


def _signature_problem(
    reader: Forward,
    offset: int,
    size: int,
    signature: tuple[int, int] | None,
    head: bytes,
    loaded: int,
) -> str | None:
    """None when the embedded signature's CodeDirectory hashes the pages holding the header
    and load commands as they are now; otherwise what is wrong.

    Tools that edit load commands after linking (install_name_tool, a bad patch) leave a
    signature whose page hashes no longer match, and the arm64 kernel kills such code as it
    would unsigned code. Only the pages with the load commands are hashed: that is where
    such edits land, and a 421 MB library costs one 16 KB read instead of all of it.
    """
    if signature is None:
        return "no LC_CODE_SIGNATURE"
    dataoff, datasize = signature
    if datasize < 12 or dataoff + datasize > size:
        return "LC_CODE_SIGNATURE points outside the file"
    if dataoff < len(head):
        blob = head[dataoff : dataoff + datasize]
        reader.seek(offset + len(head))
        blob += reader.read(max(0, dataoff + datasize - len(head)))
    else:
        reader.seek(offset + dataoff)
        blob = reader.read(datasize)
    magic, _length, count = struct.unpack_from(">III", blob)
    if magic != _CSMAGIC_EMBEDDED_SIGNATURE:
        return f"code signature blob has magic {magic:#x}, not an embedded signature"
    directory = None
    for index in range(count):
        slot, at = struct.unpack_from(">II", blob, 12 + 8 * index)
        if slot == _CSSLOT_CODEDIRECTORY:
            directory = at
            break
    if directory is None:
        return "the code signature holds no CodeDirectory"
    (
        cd_magic,
        _cd_length,
        _version,
        _flags,
        hash_offset,
        _ident,
        _special,
        code_slots,
        code_limit,
        hash_size,
        hash_type,
        _platform,
        page_log2,
    ) = struct.unpack_from(">IIIIIIIIIBBBB", blob, directory)
    if cd_magic != _CSMAGIC_CODEDIRECTORY:
        return "the code signature's CodeDirectory is damaged"
    if hash_type not in _HASHES:
        return f"the CodeDirectory uses hash type {hash_type}, which this check cannot verify"
    page = 1 << page_log2 if page_log2 else code_limit
    if code_limit != dataoff:
        return f"the signature covers {code_limit} bytes, but the file's code ends at {dataoff}"
    for number in range(min(code_slots, -(-loaded // page))):
        end = min((number + 1) * page, code_limit)
        if end > len(head):
            return f"the signature's pages of {page} bytes are larger than this check reads"
        data = head[number * page : end]
        digest = hashlib.new(_HASHES[hash_type], data).digest()[:hash_size]
        start = directory + hash_offset + number * hash_size
        if digest != blob[start : start + hash_size]:
            return (
                f"page {number} (header and load commands) no longer matches its signed hash: "
                "the file was changed after it was signed"
            )
    return None
