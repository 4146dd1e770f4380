"""What a build of the miniature left behind, as the tests read it: Ninja's log (which
commands ran, which objects were compiled how often) and the ELF dynamic section of a built
library (what it links, whether it binds eagerly)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile


def ninja_log(build_dir: Path) -> dict[str, tuple[str, ...]]:
    """The latest .ninja_log record (start, end, mtime, command hash) of every output.

    Ninja appends a record per command it runs and sometimes compacts the file to the
    latest record per output, so comparing two snapshots of this mapping (not line
    counts) tells which commands ran in between.
    """
    records: dict[str, tuple[str, ...]] = {}
    for line in (build_dir / ".ninja_log").read_text().splitlines():
        if not line.startswith("#"):
            start, end, mtime, output, command_hash = line.split("\t")
            records[output] = (start, end, mtime, command_hash)
    return records


def ran_between(
    before: Mapping[str, tuple[str, ...]], after: Mapping[str, tuple[str, ...]]
) -> set[str]:
    """File names of the outputs whose commands Ninja ran between two snapshots."""
    return {Path(output).name for output, record in after.items() if before.get(output) != record}


#: Ninja rewrites its log keeping only the latest record per output once it holds more
#: than this many records (and three times as many as outputs): kMinCompactionEntryCount
#: in ninja's src/build_log.cc. Below it, every command Ninja ran has its own record.
NINJA_COMPACTION_THRESHOLD = 100


@dataclass(frozen=True)
class Compile:
    """One compiler run from .ninja_log: the object of ``source`` for CMake target ``target``."""

    target: str
    source: str

    @property
    def object_name(self) -> str:
        return Path(self.source).name + ".o"


def compiles(build_dir: Path) -> list[Compile]:
    """Every compiler run .ninja_log records, in order, repeats included.

    CMake's Ninja generator names objects CMakeFiles/<target>.dir/<source>.o; the same
    source compiled for two targets, or twice for one, gives two records.
    """
    records = [
        line.split("\t")[3]
        for line in (build_dir / ".ninja_log").read_text().splitlines()
        if not line.startswith("#")
    ]
    if len(records) > NINJA_COMPACTION_THRESHOLD:
        raise AssertionError(
            f"{build_dir}/.ninja_log holds {len(records)} records: Ninja may have compacted it, "
            "so it cannot tell how often each object was compiled"
        )
    found = []
    for output in records:
        parts = Path(output).parts
        if parts[:1] == ("CMakeFiles",) and parts[1].endswith(".dir") and output.endswith(".o"):
            found.append(Compile(parts[1].removesuffix(".dir"), "/".join(parts[2:])[:-2]))
    return found


@dataclass(frozen=True)
class CompileCount:
    """How often each source was compiled, and which of the repeats belong to linalg."""

    once: tuple[str, ...]
    repeated: tuple[str, ...]
    repeated_outside_linalg: tuple[str, ...]


def count_compiles(records: Iterable[Compile], linalg_prefix: str) -> CompileCount:
    """Sources compiled once and more than once; a source is linalg when every target
    that compiled it is named ``linalg_prefix``*, like torch_cuda_linalg{,_nomagma}."""
    targets: dict[str, list[str]] = {}
    for record in records:
        targets.setdefault(record.source, []).append(record.target)
    once = sorted(s for s, t in targets.items() if len(t) == 1)
    repeated = sorted(s for s, t in targets.items() if len(t) > 1)
    outside = [s for s in repeated if not all(t.startswith(linalg_prefix) for t in targets[s])]
    return CompileCount(tuple(once), tuple(repeated), tuple(outside))


def _dynamic(path: Path) -> list[tuple[str, object]]:
    with path.open("rb") as handle:
        elf = ELFFile(handle)
        tags = []
        for section in elf.iter_sections():
            if isinstance(section, DynamicSection):
                for tag in section.iter_tags():
                    value = getattr(tag, "needed", None) or tag.entry.d_val
                    tags.append((tag.entry.d_tag, value))
        return tags


def needed(path: Path) -> set[str]:
    return {value for tag, value in _dynamic(path) if tag == "DT_NEEDED"}


def binds_now(path: Path) -> bool:
    """True when the object asks the loader to resolve every symbol at load time."""
    for tag, value in _dynamic(path):
        if tag == "DT_BIND_NOW":
            return True
        if tag == "DT_FLAGS" and int(value) & 0x8:  # DF_BIND_NOW
            return True
        if tag == "DT_FLAGS_1" and int(value) & 0x1:  # DF_1_NOW
            return True
    return False
