"""CMakeCache.txt as data: parse, edit and write it back, byte for byte where untouched.

Part of recipe/cmake_cache (its command line: __main__.py); standard library only. Untouched
lines keep their exact bytes (surrogateescape); the first edit keeps ``CMakeCache.txt.orig``;
every write is a temp file plus rename.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

CACHE_TYPES = frozenset(
    {"BOOL", "FILEPATH", "PATH", "STRING", "INTERNAL", "STATIC", "UNINITIALIZED"}
)
PROPERTY_SUFFIXES = ("-ADVANCED", "-MODIFIED", "-STRINGS")
INTERNAL_BANNER = "# INTERNAL cache entries"


class CacheError(Exception):
    """A problem the user can fix; rendered as ``FILE[:LINE]: problem``."""

    def __init__(
        self, problem: str, source: str | os.PathLike[str] | None = None, line: int | None = None
    ) -> None:
        super().__init__(problem)
        self.problem = problem
        self.source = None if source is None else str(source)
        self.line = line

    def __str__(self) -> str:
        where = self.source or "<cache>"
        if self.line is not None:
            where = f"{where}:{self.line}"
        return f"{where}: {self.problem}"


# --------------------------------------------------------------------------
# Parsing and rendering
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    name: str
    type: str | None  # None for the untyped `NAME=VALUE` form
    value: str
    quoted_name: bool = False

    @property
    def property_of(self) -> str | None:
        """``X`` for ``X-ADVANCED``/``X-STRINGS``/``X-MODIFIED`` entries."""
        if self.type == "INTERNAL":
            for suffix in PROPERTY_SUFFIXES:
                if self.name.endswith(suffix):
                    return self.name[: -len(suffix)]
        return None


@dataclass(frozen=True)
class Line:
    number: int
    text: str  # without the line ending; kept verbatim unless the entry changes
    eol: str
    entry: Entry | None = None


_QUOTED = re.compile(r'"(?P<name>[^"]*)":(?P<type>[^=]*)=(?P<value>.*)\Z', re.S)
_TYPED = re.compile(r"(?P<name>[^=:]*):(?P<type>[^=]*)=(?P<value>.*)\Z", re.S)
_UNTYPED = re.compile(r"(?P<name>[^=]*)=(?P<value>.*)\Z", re.S)


def _unquote_value(raw: str) -> str:
    # CMake strips trailing blanks and one pair of single quotes, which it adds
    # itself around values with leading or trailing blanks.
    value = raw.rstrip(" \t\r")
    if len(value) >= 2 and value[0] == "'" and value[-1] == "'":
        value = value[1:-1]
    return value


def _parse_entry(text: str, source: str, number: int) -> Entry:
    body = text.lstrip(" \t")
    match = _QUOTED.match(body)
    quoted = match is not None
    if match is None:
        match = _TYPED.match(body)
    if match is not None:
        type_ = match["type"].strip()
        if type_ not in CACHE_TYPES:
            raise CacheError(f"unknown cache entry type {type_!r} in {body[:60]!r}", source, number)
        name = match["name"]
    else:
        match = _UNTYPED.match(body)
        if match is None:
            raise CacheError(
                f"not a cache entry (expected NAME:TYPE=VALUE): {body[:60]!r}", source, number
            )
        type_, name = None, match["name"]
    if not name.strip():
        raise CacheError(f"cache entry without a name: {body[:60]!r}", source, number)
    return Entry(name, type_, _unquote_value(match["value"]), quoted)


def parse(text: str, source: str = "CMakeCache.txt") -> Cache:
    lines: list[Line] = []
    for number, physical in enumerate(text.splitlines(keepends=True), start=1):
        if physical.endswith("\r\n"):
            body, eol = physical[:-2], "\r\n"
        elif physical.endswith(("\n", "\r")):
            body, eol = physical[:-1], physical[-1]
        else:
            body, eol = physical, ""
        stripped = body.lstrip(" \t")
        if not stripped.strip() or stripped.startswith(("#", "//")):
            lines.append(Line(number, body, eol))
        else:
            lines.append(Line(number, body, eol, _parse_entry(body, source, number)))
    return Cache(source, tuple(lines))


def _render_entry(entry: Entry) -> str:
    quote = entry.quoted_name or ":" in entry.name or "=" in entry.name
    name = f'"{entry.name}"' if quote else entry.name
    value = entry.value
    if value != value.strip(" \t") or (value.startswith("'") and value.endswith("'")):
        value = f"'{value}'"
    if entry.type is None:
        return f"{name}={value}"
    return f"{name}:{entry.type}={value}"


@dataclass(frozen=True)
class Cache:
    source: str
    lines: tuple[Line, ...]

    @property
    def entries(self) -> tuple[Entry, ...]:
        return tuple(line.entry for line in self.lines if line.entry is not None)

    def get(self, name: str) -> Entry | None:
        found = None
        for entry in self.entries:  # like CMake, a later duplicate wins
            if entry.name == name:
                found = entry
        return found

    def render(self) -> str:
        return "".join(line.text + line.eol for line in self.lines)

    @property
    def eol(self) -> str:
        endings = [line.eol for line in self.lines if line.eol]
        return max(set(endings), key=endings.count) if endings else "\n"

    def map_entries(self, change: Callable[[Entry], Entry | None]) -> Cache:
        """Apply ``change`` to every entry; ``None`` drops the entry and its help text."""
        out: list[Line] = []
        for line in self.lines:
            if line.entry is None:
                out.append(line)
                continue
            new = change(line.entry)
            if new is None:
                while out and out[-1].entry is None and out[-1].text.lstrip().startswith("//"):
                    out.pop()
                continue
            if new != line.entry:
                line = replace(line, text=_render_entry(new), entry=new)
            out.append(line)
        return replace(self, lines=tuple(out))

    def set(self, name: str, value: str, type_: str | None = None) -> Cache:
        if self.get(name) is not None:
            return self.map_entries(
                lambda e: replace(e, value=value, type=type_ or e.type) if e.name == name else e
            )
        entry = Entry(name, type_ or "UNINITIALIZED", value)
        eol = self.eol
        new_lines = [
            Line(0, "//Set by cmake_cache.py", eol),
            Line(0, _render_entry(entry), eol),
            Line(0, "", eol),
        ]
        lines = list(self.lines)
        if lines and not lines[-1].eol:
            lines[-1] = replace(lines[-1], eol=eol)
        at = len(lines)
        if entry.type != "INTERNAL":
            # Keep user-visible entries in the EXTERNAL section, as CMake writes them.
            for index, line in enumerate(lines):
                if line.entry is None and line.text.strip() == INTERNAL_BANNER:
                    at = (
                        index - 1
                        if index and set(lines[index - 1].text.strip()) == {"#"}
                        else index
                    )
                    break
        lines[at:at] = new_lines
        return replace(self, lines=tuple(lines))


# --------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------


def load(path: str | os.PathLike[str]) -> Cache:
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CacheError("no such file; configure the build tree first", path) from None
    except OSError as exc:
        raise CacheError(f"cannot read: {exc.strerror}", path) from None
    # surrogateescape round-trips any byte, so untouched lines stay byte-identical.
    return parse(data.decode("utf-8", "surrogateescape"), str(path))


def _check_writable(path: Path) -> None:
    mode = path.stat().st_mode
    # root passes os.access on anything; honour the file's own write bits too.
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(path, os.W_OK):
        raise CacheError(
            f"is read-only (mode {stat.S_IMODE(mode):04o}); make it writable "
            "or point at a writable build tree",
            path,
        )


def atomic_write(path: Path, data: bytes, mode: int) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, stat.S_IMODE(mode))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save(cache: Cache, path: str | os.PathLike[str]) -> bool:
    """Write ``cache`` to ``path`` if it differs; keep ``<path>.orig`` on the first edit."""
    path = Path(path)
    new = cache.render().encode("utf-8", "surrogateescape")
    try:
        old = path.read_bytes()
        if new == old:
            return False
        _check_writable(path)
        mode = path.stat().st_mode
        pristine = path.with_name(path.name + ".orig")
        if not pristine.exists():
            atomic_write(pristine, old, mode)
        atomic_write(path, new, mode)
    except OSError as exc:
        raise CacheError(f"cannot write: {exc.strerror or exc}", path) from None
    return True
