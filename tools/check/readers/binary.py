"""The one view of a binary the platform-neutral rules read, whichever reader made it.

ELF (tools/check/readers/elf.py), Mach-O (readers/macho.py, one view per slice) and PE
(readers/pe.py) files all say what they need (the libraries they link), where the loader
looks for them (the file's RUNPATH/RPATH or LC_RPATH entries) and for which machine they
were built. rules/linked.py holds "every linked library resolves" once over this view.
"""

from __future__ import annotations

from typing import Protocol

from tools.check.formats import BinaryFormat


class Binary(Protocol):
    @property
    def format(self) -> BinaryFormat:
        """ "ELF", "Mach-O" or "PE"."""
        ...

    @property
    def arch(self) -> str:
        """The machine, as its reader names it: EM_X86_64, arm64, AMD64 ..."""
        ...

    @property
    def needs(self) -> tuple[str, ...]:
        """The libraries the loader maps with it, as the file spells them (DT_NEEDED,
        LC_LOAD_DYLIB and its kin, imported and delay-loaded DLLs)."""
        ...

    @property
    def looks_in(self) -> tuple[str, ...]:
        """The search entries the file itself records, as written ($ORIGIN/..,
        @loader_path/..); () for PE, whose search order is the loader's, not the file's."""
        ...
