"""What the checks need from one ELF file, read with pyelftools.

Only the ELF header, the section headers and a handful of allocated sections
(.dynamic, .dynsym/.dynstr, .gnu.version_r; of .nv_fatbin only its headers) are
read; pyelftools seeks to them, so a 430 MB libtorch_cpu.so costs a few megabytes of
reads, not the whole file. The symbol scan runs over .dynsym (the exported
interface), which is what the C++ ABI checks are about.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, ClassVar

from elftools.common.exceptions import ELFError
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerNeedSection
from elftools.elf.sections import SymbolTableSection

from tools.check.formats import BinaryFormat
from tools.check.readers.fatbin import SECTION as FATBIN_SECTION
from tools.check.readers.fatbin import DeviceCode, read_fatbin

# Mangled names of entities in PyTorch's own namespaces (c10::, at::,
# torch::, caffe2::), optionally behind cv/ref qualifiers of a member function.
_TORCH_NAMESPACE = re.compile(r"^_ZN[KVrRO]*(?:3c10|2at|5torch|6caffe2)")
# std::__cxx11::basic_string / std::__cxx11::list: the C++11 ABI spellings.
_CXX11_TYPES = re.compile(r"St7__cxx11(?:12basic_string|4list)")
# Ss = std::string, Sb = std::basic_string, St4list = std::list: the old ABI.
_OLD_ABI_TYPES = re.compile(r"Ss|Sb|St4list")
# Entities of namespace std (and its abbreviations Ss/Sa/Sb/Si/So/Sd), plus the
# C++ runtime's own entry points: defined strongly only by libstdc++/libsupc++.
_STD_DEFINITION = re.compile(
    r"^(?:_ZN[KVrRO]*St|_ZN[KVrRO]*S[sabiod]|_ZSt|_ZT[VIS]St|_ZT[VIS]N[KVrRO]*St"
    r"|__cxa_|__gxx_personality)"
)
# A std:: symbol that mentions torch's namespaces is torch's own overload or
# specialisation (std::to_string(torch::jit::...), std::hash<c10::...>).
_MENTIONS_TORCH = re.compile(r"(?<![0-9])(?:3c10|2at|5torch|6caffe2)")

_SAMPLE = 5


@dataclass(frozen=True)
class ElfInfo:
    machine: str
    soname: str | None
    needed: tuple[str, ...]
    runpath: tuple[str, ...]
    rpath: tuple[str, ...]
    # (library, versions required from it), e.g. ("libc.so.6", ("GLIBC_2.17", …))
    version_needs: tuple[tuple[str, tuple[str, ...]], ...]
    cxx11_symbols: int
    old_abi_symbols: int
    std_definitions: int
    std_definition_sample: tuple[str, ...]
    # CUDA device code in .nv_fatbin (tools/check/readers/fatbin.py); () for host-only files
    device_code: tuple[DeviceCode, ...] = ()
    # Sources of native-AOT kernels (pytorch#194243) whose paths .rodata holds, as
    # "native_aot/topk/aot_topk_cuda.cpp"; read only in files with device code
    native_aot: tuple[str, ...] = ()
    # CPython's refcounting entry points it imports (tools/check/rules/python_abi.py): which Python
    # ABI, free-threaded or with the GIL, its code was compiled for
    python_refcount: tuple[str, ...] = ()

    @property
    def required_versions(self) -> tuple[str, ...]:
        return tuple(v for _, versions in self.version_needs for v in versions)

    # The Binary view (readers/binary.py): the loader reads DT_RUNPATH and, only where a
    # file has none, DT_RPATH.
    format: ClassVar[BinaryFormat] = "ELF"

    @property
    def arch(self) -> str:
        return self.machine

    @property
    def needs(self) -> tuple[str, ...]:
        return self.needed

    @property
    def looks_in(self) -> tuple[str, ...]:
        return self.runpath or self.rpath


def _split_path_list(value: str) -> tuple[str, ...]:
    return tuple(entry for entry in value.split(":") if entry)


def read_elf(stream: BinaryIO) -> ElfInfo:
    """Parse the dynamic-linking facts of one ELF file (seekable binary stream).

    Raises ValueError when the file is not a well-formed ELF object.
    """
    try:
        return _read(ELFFile(stream))
    except (ELFError, ValueError, KeyError, IndexError, EOFError) as exc:
        raise ValueError(f"unreadable ELF ({exc})") from exc
    except Exception as exc:  # construct's StreamError and friends on truncated files
        if type(exc).__module__.startswith("construct"):
            raise ValueError(f"unreadable ELF ({exc})") from exc
        raise


_STB_GLOBAL = 1
_SHN_UNDEF = 0


def _symbols(elf: ELFFile, section: SymbolTableSection) -> Iterator[tuple[str, bool]]:
    """(name, is a global definition) of the C++ and runtime symbols in ``section``.

    pyelftools locates the section and its string table; the fixed-size
    entries are then unpacked with struct, because building a construct
    Container per symbol costs ~5 s on libtorch_cpu.so's 75 000 symbols.
    """
    order = "<" if elf.little_endian else ">"
    # Elf64_Sym: name, info, other, shndx, value, size;
    # Elf32_Sym: name, value, size, info, other, shndx
    if elf.elfclass == 64:
        layout, name_at, info_at, shndx_at = order + "IBBHQQ", 0, 1, 3
    else:
        layout, name_at, info_at, shndx_at = order + "IIIBBH", 0, 3, 5
    strings = elf.get_section(section["sh_link"]).data()
    data = section.data()
    usable = len(data) - len(data) % struct.calcsize(layout)
    for entry in struct.iter_unpack(layout, data[:usable]):
        offset = entry[name_at]
        # Only mangled C++ names (_Z…) and the runtime's __cxa_/__gxx_ entry points matter.
        if strings[offset : offset + 2] not in (b"_Z", b"__"):
            continue
        end = strings.find(b"\0", offset)
        name = strings[offset : end if end >= 0 else None].decode("utf-8", "replace")
        yield name, entry[shndx_at] != _SHN_UNDEF and entry[info_at] >> 4 == _STB_GLOBAL


def _read(elf: ELFFile) -> ElfInfo:
    soname = None
    needed: list[str] = []
    runpath: tuple[str, ...] = ()
    rpath: tuple[str, ...] = ()
    version_needs: list[tuple[str, tuple[str, ...]]] = []
    cxx11 = old_abi = std_defs = 0
    sample: list[str] = []
    device_code: tuple[DeviceCode, ...] = ()
    refcount: tuple[str, ...] = ()
    for section in elf.iter_sections():
        if section.name == FATBIN_SECTION and section["sh_type"] != "SHT_NOBITS":
            device_code = read_fatbin(elf.stream, section["sh_offset"], section["sh_size"])
        elif isinstance(section, DynamicSection) and section.name == ".dynamic":
            for tag in section.iter_tags():
                kind = tag.entry.d_tag
                if kind == "DT_NEEDED":
                    needed.append(tag.needed)
                elif kind == "DT_SONAME":
                    soname = tag.soname
                elif kind == "DT_RUNPATH":
                    runpath = _split_path_list(tag.runpath)
                elif kind == "DT_RPATH":
                    rpath = _split_path_list(tag.rpath)
        elif isinstance(section, GNUVerNeedSection):
            for verneed, auxiliaries in section.iter_versions():
                version_needs.append((verneed.name, tuple(aux.name for aux in auxiliaries)))
        elif isinstance(section, SymbolTableSection) and section.name == ".dynsym":
            refcount = _python_refcount(elf, section)
            for name, global_definition in _symbols(elf, section):
                if _TORCH_NAMESPACE.match(name):
                    if _CXX11_TYPES.search(name):
                        cxx11 += 1
                    elif _OLD_ABI_TYPES.search(name):
                        old_abi += 1
                if (
                    global_definition
                    and _STD_DEFINITION.match(name)
                    and not _MENTIONS_TORCH.search(name)
                ):
                    std_defs += 1
                    if len(sample) < _SAMPLE:
                        sample.append(name)
    native_aot: tuple[str, ...] = ()
    rodata = elf.get_section_by_name(".rodata")
    if device_code and rodata is not None and rodata["sh_type"] != "SHT_NOBITS":
        native_aot = _native_aot_sources(elf.stream, rodata["sh_offset"], rodata["sh_size"])
    return ElfInfo(
        machine=elf["e_machine"],
        soname=soname,
        needed=tuple(needed),
        runpath=runpath,
        rpath=rpath,
        version_needs=tuple(version_needs),
        cxx11_symbols=cxx11,
        old_abi_symbols=old_abi,
        std_definitions=std_defs,
        std_definition_sample=tuple(sample),
        device_code=device_code,
        native_aot=native_aot,
        python_refcount=refcount,
    )


_REFCOUNT = (b"_Py_DecRefShared", b"_Py_MergeZeroLocalRefcount", b"_Py_Dealloc")


def _python_refcount(elf: ELFFile, section: SymbolTableSection) -> tuple[str, ...]:
    """The CPython refcounting functions ``section`` imports (undefined there), of
    ``_REFCOUNT``: a quick scan of the string table first, as most libraries name none."""
    strings = elf.get_section(section["sh_link"]).data()
    if b"_Py_" not in strings:
        return ()
    wanted = {name for name in _REFCOUNT if name + b"\0" in strings}
    if not wanted:
        return ()
    order = "<" if elf.little_endian else ">"
    layout, shndx_at = (order + "IBBHQQ", 3) if elf.elfclass == 64 else (order + "IIIBBH", 5)
    data = section.data()
    usable = len(data) - len(data) % struct.calcsize(layout)
    found = set()
    for entry in struct.iter_unpack(layout, data[:usable]):
        offset = entry[0]
        if entry[shndx_at] == _SHN_UNDEF and strings[offset : offset + 4] == b"_Py_":
            name = strings[offset : strings.find(b"\0", offset)]
            if name in wanted:
                found.add(name.decode())
    return tuple(sorted(found))


# The 2.15.0 wheel's libtorch_cuda.so holds
# "/__w/pytorch/pytorch/build/native_aot/topk/aot_topk_cuda.cpp" in .rodata (the kernels'
# error messages name their generated source).
_NATIVE_AOT_SOURCE = re.compile(rb"native_aot/[\x21-\x7e]+\.(?:cpp|cu)\b")


def _native_aot_sources(stream: BinaryIO, offset: int, size: int) -> tuple[str, ...]:
    stream.seek(offset)
    found = {m.group().decode("ascii") for m in _NATIVE_AOT_SOURCE.finditer(stream.read(size))}
    return tuple(sorted(found))
