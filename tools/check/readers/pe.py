"""What the Windows checks need from one PE file (DLL, .pyd, .exe), read with pefile.

pefile maps the file and, with ``fast_load``, parses only the headers; the import and
delay-import directories are then parsed for their DLL names alone (``import_dllnames_only``):
1 ms for the 2.15.0 wheel's 310 MB torch_cpu.dll. tools/check/readers/macho.py says why pefile and
macholib rather than lief.

CUDA device code: nvcc puts the fatbin in a section named ``.nv_fatbin`` in ELF files; a PE
image keeps only 8 characters of a section name, so Windows' CUDA DLLs hold it in
``.nv_fatb``, and tools/check/readers/fatbin.py reads it there as it does in a ``.so``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import BinaryIO, ClassVar

import pefile

from tools.check.formats import BinaryFormat
from tools.check.readers.fatbin import DeviceCode, read_fatbin

FATBIN_SECTION = b".nv_fatb"
_IMPORT_DIRECTORIES = [
    pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_IMPORT"],
    pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_DELAY_IMPORT"],
]
_IMAGE_FILE_DLL = 0x2000


@dataclass(frozen=True)
class PeInfo:
    machine: str  # "AMD64", "I386", "ARM64" ...
    is_dll: bool
    imports: tuple[str, ...]  # DLL names, as the import table spells them
    delay_imports: tuple[str, ...] = ()
    device_code: tuple[DeviceCode, ...] = ()

    @property
    def all_imports(self) -> tuple[str, ...]:
        return self.imports + self.delay_imports

    # The Binary view (readers/binary.py). A PE file records no search path: Windows looks
    # in the importer's folder, then PATH and the added DLL directories (rules/pe.py).
    format: ClassVar[BinaryFormat] = "PE"
    looks_in: ClassVar[tuple[str, ...]] = ()

    @property
    def arch(self) -> str:
        return self.machine

    @property
    def needs(self) -> tuple[str, ...]:
        return self.all_imports


def read_pe(path: str, stream: BinaryIO) -> PeInfo:
    """The machine, imports and device code of the PE file at ``path`` (``stream`` is the
    same file, open for the fatbin's reads).

    Raises ValueError when the file is not a well-formed PE image.
    """
    try:
        image = pefile.PE(path, fast_load=True)
    except (pefile.PEFormatError, OSError) as exc:
        raise ValueError(f"unreadable PE ({exc})") from exc
    try:
        image.parse_data_directories(directories=_IMPORT_DIRECTORIES, import_dllnames_only=True)
        machine = pefile.MACHINE_TYPE.get(image.FILE_HEADER.Machine)
        device_code: tuple[DeviceCode, ...] = ()
        for section in image.sections:
            if section.Name.rstrip(b"\0") == FATBIN_SECTION and section.SizeOfRawData:
                size = min(section.SizeOfRawData, section.Misc_VirtualSize or section.SizeOfRawData)
                device_code = read_fatbin(stream, section.PointerToRawData, size)
        return PeInfo(
            machine=machine.removeprefix("IMAGE_FILE_MACHINE_")
            if machine
            else f"machine {image.FILE_HEADER.Machine:#x}",
            is_dll=bool(image.FILE_HEADER.Characteristics & _IMAGE_FILE_DLL),
            imports=_names(getattr(image, "DIRECTORY_ENTRY_IMPORT", ())),
            delay_imports=_names(getattr(image, "DIRECTORY_ENTRY_DELAY_IMPORT", ())),
            device_code=device_code,
        )
    except (pefile.PEFormatError, struct.error, AttributeError, UnicodeError) as exc:
        raise ValueError(f"unreadable PE ({exc})") from exc
    finally:
        image.close()


def _names(entries) -> tuple[str, ...]:
    return tuple(entry.dll.decode("ascii") for entry in entries if entry.dll)
