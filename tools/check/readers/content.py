"""What streaming a package's members finds: each binary read by its format's reader, build-
machine paths in text files, and the few text files the checks parse.

A member whose content a check needs is copied, alone, into the caller's private temporary
directory (ELF and PE files, which their readers must seek in), read front to back (Mach-O)
or scanned in memory (small text files).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from tools.check.archive import build_prefix_strings
from tools.check.formats import BinaryFormat, binary_format, foreign_format
from tools.check.readers.elf import ElfInfo, read_elf

if TYPE_CHECKING:  # their readers' libraries are imported only when such a file is met
    from tools.check.readers.macho import MachOInfo
    from tools.check.readers.pe import PeInfo

_HEAD = 8192
_TEXT_LIMIT = 32 * 1024 * 1024
_CHUNK = 1 << 20
_WHEEL_METADATA = re.compile(r"[^/]+\.dist-info/METADATA")


@dataclass
class Collector:
    """Accumulates what streaming a package's content has found."""

    workdir: Path
    keep_text: Callable[[str], bool]
    elves: dict[str, ElfInfo] = field(default_factory=dict)
    elf_errors: dict[str, str] = field(default_factory=dict)
    prefix_strings: dict[str, tuple[str, ...]] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    machos: dict[str, MachOInfo] = field(default_factory=dict)
    pes: dict[str, PeInfo] = field(default_factory=dict)
    binary_errors: dict[str, tuple[BinaryFormat, str]] = field(default_factory=dict)

    def consume(self, path: str, stream: BinaryIO, size: int) -> None:
        head = stream.read(_HEAD)
        kind = binary_format(head)
        if kind == "Mach-O":
            self._macho(path, stream, head, size)
        elif kind in ("ELF", "PE"):
            self._spool(path, head, stream)
        elif kind is not None:
            self.binary_errors[path] = (kind, foreign_format(kind))
        elif b"\0" not in head and size <= _TEXT_LIMIT:
            data = head + stream.read()
            hits = build_prefix_strings(data)
            if hits:
                self.prefix_strings[path] = hits
            if self.keep_text(path):
                self.texts[path] = data.decode("utf-8", "replace")

    def consume_file(self, path: str, real: Path) -> None:
        with real.open("rb") as stream:
            head = stream.read(_HEAD)
            kind = binary_format(head)
            if kind == "Mach-O":
                self._macho(path, stream, head, real.stat().st_size)
                return
            if kind in ("ELF", "PE"):
                stream.seek(0)
                self._parse(path, head, str(real), stream)
                return
        with real.open("rb") as stream:
            self.consume(path, stream, real.stat().st_size)

    def _macho(self, path: str, stream: BinaryIO, head: bytes, size: int) -> None:
        # Read front to back, never spooled: the load commands are at the front of each slice
        # and the signature at its end (tools/check/readers/macho.py).
        from tools.check.readers.macho import Forward, read_macho

        try:
            self.machos[path] = read_macho(Forward(stream, head), size)
        except ValueError as exc:
            self.binary_errors[path] = ("Mach-O", str(exc))

    def _spool(self, path: str, head: bytes, stream: BinaryIO) -> None:
        # The readers seek; an archive member is a forward-only stream, so it
        # is copied (alone) into the private work directory and removed again.
        fd, spool = tempfile.mkstemp(dir=self.workdir, suffix=".bin")
        try:
            with os.fdopen(fd, "w+b") as out:
                out.write(head)
                shutil.copyfileobj(stream, out, _CHUNK)
                out.flush()
                out.seek(0)
                self._parse(path, head, spool, out)
        finally:
            os.unlink(spool)

    def _parse(self, path: str, head: bytes, real: str, stream: BinaryIO) -> None:
        kind = binary_format(head)
        try:
            if kind == "ELF":
                self.elves[path] = read_elf(stream)
            else:
                from tools.check.readers.pe import read_pe

                self.pes[path] = read_pe(real, stream)
        except ValueError as exc:
            if kind == "ELF":
                self.elf_errors[path] = str(exc)
            else:
                self.binary_errors[path] = (kind, str(exc))

    def binaries(self) -> dict[str, object]:
        """The Package fields of what was read, other than ELF's."""
        return {"machos": self.machos, "pes": self.pes, "binary_errors": self.binary_errors}


def wants_text(path: str) -> bool:
    # A wheel's METADATA: its Requires-Dist provides libraries (requires_dist.py).
    return path.endswith("TorchConfig.cmake") or bool(_WHEEL_METADATA.fullmatch(path))
