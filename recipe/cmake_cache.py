#!/usr/bin/env python
"""Read, edit and retarget a CMake build tree's CMakeCache.txt.

The recipe builds PyTorch's C++ core once and then rebuilds only the Python
bindings for each Python version (the "megabuild"), and it builds
libtorch_cuda_linalg with and without magma from one configured tree. Both
tricks need the cache of a configured tree changed in place. A textual
replace (``sed s/3.12/3.13/``) rewrites unrelated values that happen to
contain the version (``/opt/cmake-3.12.4/bin``, ``LIBFOO_VERSION=3.12.0``) and
misses Python entries spelled differently (``cp312``, ``3;12;1``,
``numpy/_core``). This helper parses the cache and touches only what it must.

Usage (standard library only; runs with the build environment's Python 3.10+)::

    python cmake_cache.py get CACHE NAME [--default VALUE]
    python cmake_cache.py set CACHE NAME[:TYPE]=VALUE ...
    python cmake_cache.py retarget-python CACHE --python EXE

On bad input it prints one line naming the file, line and problem, exits 2
and leaves the cache untouched. The first edit keeps the pristine file as
``CMakeCache.txt.orig``; every write is a temp file plus rename; repeating a
command changes nothing.

How retargeting decides what is Python-derived
----------------------------------------------
* By name: entries FindPython, FindPythonInterp/FindPythonLibs, pybind11 and
  NumPy lookups write (``Python_*``, ``Python3_*``, ``_Python3_*``,
  ``PYTHON_*``, ``pybind11_*``/``PYBIND11_*``, ``NUMPY_*``/``NumPy_*``,
  ``FIND_PACKAGE_MESSAGE_DETAILS_Python*``) and their ``-ADVANCED`` and
  ``-STRINGS`` property entries.
* By value: any other entry (CMake's own ``CMAKE_*`` bookkeeping excepted,
  since CMake itself may be installed in the old interpreter's site-packages)
  whose value is a path inside the old interpreter's include dir, library,
  stdlib or site-packages. Only those path prefixes are rewritten there.

The old interpreter's facts are read from the cache itself (under conda-build
the old environment is gone: each output gets a fresh host prefix at the same
path). The new interpreter's facts come from running it. Values are then
rewritten from facts: exact paths first, then the version spellings CMake and
Python use (``3.12.1``, ``v3.12.N``, ``3;12;1``, ``cpython-312-…``, ``cp312``,
``Python312``, ``numpy/core`` vs ``numpy/_core``). FindPython's MD5
signatures hash the old find state; they are dropped so the next configure
validates the new interpreter and records fresh ones.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
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


def _atomic_write(path: Path, data: bytes, mode: int) -> None:
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
            _atomic_write(pristine, old, mode)
        _atomic_write(path, new, mode)
    except OSError as exc:
        raise CacheError(f"cannot write: {exc.strerror or exc}", path) from None
    return True


# --------------------------------------------------------------------------
# Python facts
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class PythonFacts:
    """What a CMake configure records about one interpreter."""

    executable: str
    version: tuple[int, int, int]
    prefix: str = ""
    include_dir: str = ""
    library: str = ""
    stdlib: str = ""
    stdarch: str = ""
    sitelib: str = ""
    sitearch: str = ""
    soabi: str = ""
    sosabi: str = ""
    ext_suffix: str = ""
    abiflags: str = ""
    pointer_bits: int = 64
    numpy_include: str | None = None
    numpy_version: str | None = None

    @property
    def short(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"

    @property
    def full(self) -> str:
        return ".".join(map(str, self.version))


_FACTS_SCRIPT = r"""
import importlib.machinery, json, os, sys, sysconfig
var = sysconfig.get_config_var
paths = sysconfig.get_paths()
ext = var("EXT_SUFFIX") or ""
soabi = var("SOABI") or (ext.split(".")[1] if ext.count(".") >= 2 else "")
abiflags = getattr(sys, "abiflags", "") or ""
# FindPython's SOSABI: the stable-ABI suffix this interpreter loads (".abi3.so" -> "abi3").
sosabi = next((s[1:].rsplit(".", 1)[0] for s in importlib.machinery.EXTENSION_SUFFIXES
               if s.startswith(".abi")), "")
if os.name == "nt":
    library = os.path.join(sys.base_prefix, "libs", "python%d%d%s.lib"
                           % (sys.version_info[0], sys.version_info[1], abiflags))
else:
    libdir, ldlibrary = var("LIBDIR"), var("LDLIBRARY")
    library = os.path.join(libdir, ldlibrary) if libdir and ldlibrary else ""
try:
    import numpy
    numpy_include, numpy_version = numpy.get_include(), numpy.__version__
except Exception:
    numpy_include = numpy_version = None
json.dump({
    "version": list(sys.version_info[:3]),
    "prefix": sys.prefix,
    "include_dir": paths["include"],
    "library": library,
    "stdlib": paths["stdlib"],
    "stdarch": paths["platstdlib"],
    "sitelib": paths["purelib"],
    "sitearch": paths["platlib"],
    "soabi": soabi,
    "sosabi": sosabi,
    "ext_suffix": ext,
    "abiflags": abiflags,
    "pointer_bits": 64 if sys.maxsize > 2**32 else 32,
    "numpy_include": numpy_include,
    "numpy_version": numpy_version,
}, sys.stdout)
"""


def python_facts(executable: str | os.PathLike[str]) -> PythonFacts:
    """Ask ``executable`` about itself. The path is kept as given (not resolved):
    a venv's ``bin/python`` is a symlink whose target knows nothing of the venv."""
    exe = os.path.abspath(os.fspath(executable))
    try:
        proc = subprocess.run(
            [exe, "-c", _FACTS_SCRIPT], capture_output=True, text=True, timeout=120, check=False
        )
    except OSError as exc:
        raise CacheError(f"cannot run the interpreter: {exc.strerror or exc}", exe) from None
    except subprocess.TimeoutExpired:
        raise CacheError("the interpreter did not answer within 120 s", exe) from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise CacheError(f"the interpreter failed: {last}", exe)
    try:
        raw = json.loads(proc.stdout)
        return PythonFacts(executable=exe, version=tuple(raw.pop("version")), **raw)
    except (ValueError, TypeError, KeyError) as exc:
        raise CacheError(f"unexpected answer from the interpreter: {exc}", exe) from None


# --------------------------------------------------------------------------
# Retargeting
# --------------------------------------------------------------------------

_PYTHON_NAME = re.compile(
    r"^(?:_?Python\d?_|PYTHON_|PythonInterp_|PythonLibs_|PYTHONLIBS_|PYTHONINTERP_"
    r"|pybind11_|PYBIND11_|NUMPY_|NumPy_|Numpy_|TORCH_PYTHON_"
    r"|FIND_PACKAGE_MESSAGE_DETAILS_(?:Python|PYTHON|pybind11|NumPy|NUMPY))"
)
_SIGNATURE = re.compile(r"^_Python\d?_\w*SIGNATURE$")
_PROPERTIES = re.compile(r"^_(Python\d?)_INTERPRETER_PROPERTIES$")
_EXECUTABLE = re.compile(
    r"^(?:_?Python\d?_EXECUTABLE|PYTHON_EXECUTABLE"
    r"|PYBIND11_PYTHON_EXECUTABLE_LAST)$"
)
_INCLUDE = re.compile(r"^(?:_?Python\d?_INCLUDE_DIRS?|PYTHON_INCLUDE_(?:DIRS?|PATH))$")
_LIBRARY = re.compile(
    r"^(?:_?Python\d?_LIBRAR(?:Y|IES)(?:_RELEASE)?"
    r"|PYTHON_LIBRAR(?:Y|IES)(?:_RELEASE)?)$"
)
_LIBRARY_FILE = re.compile(r"(?i)python[\d.]*[a-z]?\.(?:so|dylib|a|lib|dll)(?:\.[\d.]+)?$")
_NUMPY_INCLUDE = re.compile(
    r"^(?:_?Python\d?_NumPy_INCLUDE_DIRS?|NUMPY_INCLUDE_DIRS?"
    r"|NumPy_INCLUDE_DIRS?|Python\d?_NumPyINCLUDE_DIR)$"
)
_VERSION_IN_TEXT = (
    re.compile(r"\[v(\d+)\.(\d+)\.(\d+)"),  # FIND_PACKAGE_MESSAGE_DETAILS
    re.compile(r"python(\d)\.(\d+)(?!\d)"),  # include dirs, libpython3.12.so
    re.compile(r"(?i)python(\d)(\d\d?)(?:t|d)?\.lib"),  # Windows import library
    re.compile(r"cpython-(\d)(\d\d?)"),
)


def is_python_name(name: str) -> bool:
    return bool(_PYTHON_NAME.match(name))


@dataclass(frozen=True)
class OldPython:
    """The interpreter a cache was configured for, as far as the cache tells."""

    version: tuple[int, ...]
    executables: tuple[str, ...]
    include_dirs: tuple[str, ...]
    libraries: tuple[str, ...]
    numpy_includes: tuple[str, ...]
    install_dirs: tuple[str, ...]  # stdlib, stdarch, sitelib, sitearch
    soabi: str = ""
    ext_suffix: str = ""


def _values(cache: Cache, pattern: re.Pattern[str]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for entry in cache.entries:
        if pattern.match(entry.name) and entry.value and not entry.value.endswith("-NOTFOUND"):
            for item in entry.value.split(";"):
                if item:
                    seen.setdefault(item, None)
    return tuple(seen)


def describe_old_python(cache: Cache) -> OldPython:
    python_entries = [e for e in cache.entries if is_python_name(e.name)]
    if not python_entries:
        raise CacheError(
            "has no Python entries (Python_*, PYTHON_*, pybind11_*); "
            "is this the cache of a build tree configured with Python?",
            cache.source,
        )
    version: tuple[int, ...] = ()
    install_dirs: tuple[str, ...] = ()
    soabi = ""
    for entry in python_entries:
        if _PROPERTIES.match(entry.name):
            fields = entry.value.split(";")
            if len(fields) >= 4 and all(f.isdigit() for f in fields[1:4]):
                version = tuple(int(f) for f in fields[1:4])
            if len(fields) >= 12:
                soabi = fields[6]
                install_dirs = tuple(f for f in fields[8:12] if f)
    if not version:
        for entry in python_entries:
            if re.fullmatch(
                r"_?Python\d?_VERSION|PYTHON_VERSION_STRING|PYBIND11_PYTHON_VERSION", entry.name
            ):
                numbers = re.findall(r"\d+", entry.value)
                if len(numbers) >= 2:
                    version = tuple(int(n) for n in numbers[:3])
                    break
    if not version:
        for pattern in _VERSION_IN_TEXT:
            for entry in python_entries:
                found = pattern.search(entry.value)
                if found:
                    version = tuple(int(g) for g in found.groups())
                    break
            if version:
                break
    if not version:
        raise CacheError(
            "has Python entries but none tells the Python version "
            "(no _Python_INTERPRETER_PROPERTIES, Python_VERSION or python3.X path)",
            cache.source,
        )
    extension = cache.get("PYTHON_MODULE_EXTENSION")  # pybind11's, e.g. .cpython-312-….so
    ext_suffix = extension.value if extension is not None else ""
    if not soabi:
        for entry in python_entries:
            if entry.name in ("Python_SOABI", "Python3_SOABI"):
                soabi = entry.value
        if not soabi and ext_suffix.count(".") >= 2:
            soabi = ext_suffix.split(".")[1]
    return OldPython(
        version=version,
        executables=_values(cache, _EXECUTABLE),
        include_dirs=_values(cache, _INCLUDE),
        # Only real library files: PyTorch's older CMake seeded PYTHON_LIBRARY with the
        # stdlib directory, which the path and version rules below handle.
        libraries=tuple(v for v in _values(cache, _LIBRARY) if _LIBRARY_FILE.search(v)),
        numpy_includes=_values(cache, _NUMPY_INCLUDE),
        install_dirs=install_dirs,
        soabi=soabi,
        ext_suffix=ext_suffix,
    )


def _slashed(path: str) -> str:
    return path.replace("\\", "/")


def in_style_of(old: str, new: str) -> str:
    """``new`` with the separators ``old`` uses: CMake writes C:/x, Python answers C:\\x."""
    if "\\" in old and "/" not in old:
        return new.replace("/", "\\")
    if "/" in old:
        return _slashed(new)
    return new


def _prefix_of(executable: str) -> str:
    parent = os.path.dirname(_slashed(executable))
    if os.path.basename(parent).lower() in ("bin", "scripts"):
        parent = os.path.dirname(parent)
    return parent


_PATH_START = r"""(?:(?<![^;\[ "'=])|(?<=-I)|(?<=-L))"""
_PATH_END = r"""(?![^/\\;\]\[ "'])"""


class _Rewriter:
    """Old-interpreter spellings -> new ones, applied in one left-to-right pass.

    Rules are tried in order at each position: the old interpreter's own paths
    (longest first, so site-packages wins over the stdlib dir that contains it),
    then its prefix, then version spellings. A replaced span is never rescanned.
    """

    def __init__(self, old: OldPython, new: PythonFacts) -> None:
        paths: dict[str, str] = {}

        def pair(old_path: str, new_path: str) -> None:
            if old_path and new_path and not old_path.endswith("-NOTFOUND"):
                paths.setdefault(old_path, in_style_of(old_path, new_path))
                paths.setdefault(_slashed(old_path), _slashed(new_path))

        for old_exe in old.executables:
            pair(old_exe, new.executable)
        for old_inc in old.include_dirs:
            pair(old_inc, new.include_dir)
        for old_lib in old.libraries:
            pair(old_lib, new.library)
        for old_dir, new_dir in zip(
            old.install_dirs, (new.stdlib, new.stdarch, new.sitelib, new.sitearch)
        ):
            pair(old_dir, new_dir)
        for old_np in old.numpy_includes:
            pair(old_np, new.numpy_include or "")

        # The interpreter's prefix hosts much more than Python (a conda prefix holds
        # every library), so only Python-named entries follow a prefix change.
        prefixes: dict[str, str] = {}
        for old_exe in old.executables:
            old_prefix = _prefix_of(old_exe)
            new_prefix = _slashed(new.prefix) if new.prefix else _prefix_of(new.executable)
            if old_prefix and old_prefix != "/" and old_prefix != new_prefix:
                prefixes.setdefault(old_prefix, new_prefix)
                if ":" in old_prefix[:3]:  # a Windows drive: values may use either separator
                    prefixes.setdefault(
                        old_prefix.replace("/", "\\"), new_prefix.replace("/", "\\")
                    )

        def path_rules(table: Mapping[str, str]) -> list[tuple[str, str]]:
            return [
                (_PATH_START + re.escape(p) + _PATH_END, table[p])
                for p in sorted(table, key=len, reverse=True)
            ]

        major, minor = old.version[0], old.version[1]
        nmaj, nmin = new.version[0], new.version[1]
        spellings: list[tuple[str, str]] = []
        if old.ext_suffix and new.ext_suffix:
            spellings.append((re.escape(old.ext_suffix) + r"(?![\w.-])", new.ext_suffix))
        if old.soabi and new.soabi:
            spellings.append((re.escape(old.soabi) + r"(?![\w-])", new.soabi))
        spellings += [
            # 3.12.1, v3.12.N -> the new full version; then 3.12 alone
            (rf"(?<![\d.]){major}\.{minor}\.\d+(?!\d)", new.full),
            (rf"(?<![\d.]){major}\.{minor}(?!\d|\.\d)", new.short),
            # CMake lists: 3;12;1 and 3;12
            (rf"(?<![\d;.]){major};{minor};\d+(?!\d)", f"{nmaj};{nmin};{new.version[2]}"),
            (rf"(?<![\d;.]){major};{minor}(?!\d|;\d)", f"{nmaj};{nmin}"),
            # Compact spellings: cpython-312, cp312, python312.lib, Python312, py312
            (rf"(?<=cpython-){major}{minor}(?!\d)", f"{nmaj}{nmin}"),
            (rf"(?<=cp){major}{minor}(?!\d)", f"{nmaj}{nmin}"),
            (rf"(?i:(?<=python)){major}{minor}(?!\d)", f"{nmaj}{nmin}"),
            (rf"(?<=py){major}{minor}(?!\d)", f"{nmaj}{nmin}"),
        ]
        if new.numpy_version:
            # NumPy 2 moved its headers from numpy/core to numpy/_core.
            layout = "_core" if int(new.numpy_version.split(".")[0]) >= 2 else "core"
            spellings.append((r"(?<=numpy[\\/])_?core(?=[\\/]include)", layout))

        self._paths = _Rules(path_rules(paths))
        self._python = _Rules(path_rules(paths) + path_rules(prefixes) + spellings)

    def python_entry(self, value: str) -> str:
        return self._python.apply(value)

    def path_only(self, value: str) -> str:
        return self._paths.apply(value)

    def mentions_old_paths(self, value: str) -> bool:
        return self._paths.matches(value)


class _Rules:
    """Alternation of (regex, replacement) rules; the first rule matching at the
    leftmost position wins."""

    def __init__(self, rules: Sequence[tuple[str, str]]) -> None:
        self._replacements = [replacement for _, replacement in rules]
        self._regex = (
            re.compile("|".join(f"(?P<r{i}>{pattern})" for i, (pattern, _) in enumerate(rules)))
            if rules
            else None
        )

    def apply(self, value: str) -> str:
        if self._regex is None:
            return value
        return self._regex.sub(lambda m: self._replacements[int(m.lastgroup[1:])], value)

    def matches(self, value: str) -> bool:
        return self._regex is not None and self._regex.search(value) is not None


def _new_properties(old_value: str, new: PythonFacts) -> str | None:
    """Rebuild FindPython's 12-field property list; None drops an unknown layout."""
    fields = old_value.split(";")
    if len(fields) != 12:
        return None  # another CMake's layout: FindPython recomputes a dropped entry
    no_flags = "<none>" if fields[5] == "<none>" else ""
    windows = "\\" in new.stdlib
    dirs = [
        _slashed(d) if windows else d for d in (new.stdlib, new.stdarch, new.sitelib, new.sitearch)
    ]
    return ";".join(
        [
            fields[0],
            *map(str, new.version),
            str(new.pointer_bits),
            new.abiflags or no_flags,
            new.soabi,
            new.sosabi,
            *dirs,
        ]
    )


@dataclass(frozen=True)
class Retargeted:
    cache: Cache
    old_version: str
    new_version: str
    rewritten: tuple[str, ...]
    dropped: tuple[str, ...]


def retarget(cache: Cache, new: PythonFacts) -> Retargeted:
    """Point every Python-derived entry of ``cache`` at the interpreter ``new``."""
    old = describe_old_python(cache)
    if old.numpy_includes and not new.numpy_include:
        raise CacheError(
            f"records NumPy headers ({old.numpy_includes[0]}) but "
            f"{new.executable} cannot import numpy; install numpy in its "
            "environment",
            cache.source,
        )
    rewriter = _Rewriter(old, new)
    rewritten: list[str] = []
    dropped: list[str] = []

    def change(entry: Entry) -> Entry | None:
        owner = entry.property_of or entry.name
        if is_python_name(owner):
            if _SIGNATURE.match(entry.name):
                dropped.append(entry.name)
                return None
            if _PROPERTIES.match(entry.name):
                value = _new_properties(entry.value, new)
                if value is None:
                    dropped.append(entry.name)
                    return None
            elif _EXECUTABLE.match(entry.name):
                value = in_style_of(entry.value, new.executable)
            else:
                value = rewriter.python_entry(entry.value)
        elif not entry.name.startswith("CMAKE_") and rewriter.mentions_old_paths(entry.value):
            value = rewriter.path_only(entry.value)
        else:
            return entry
        if value != entry.value:
            rewritten.append(entry.name)
            return replace(entry, value=value)
        return entry

    result = cache.map_entries(change)
    # Without a user-set <P>_EXECUTABLE, FindPython re-validates its internal
    # _<P>_EXECUTABLE against the signature dropped above and, failing that,
    # searches PATH afresh, which may find another interpreter. Pin it.
    for entry in result.entries:
        found = re.fullmatch(r"_(Python\d?)_EXECUTABLE", entry.name)
        if found and entry.type == "INTERNAL" and result.get(found[1] + "_EXECUTABLE") is None:
            result = result.set(
                found[1] + "_EXECUTABLE", in_style_of(entry.value, new.executable), "FILEPATH"
            )
            rewritten.append(found[1] + "_EXECUTABLE")
    old_version = ".".join(map(str, old.version))
    return Retargeted(result, old_version, new.full, tuple(rewritten), tuple(dropped))


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


def _parse_assignment(text: str) -> tuple[str, str | None, str]:
    if "=" not in text:
        raise CacheError(f"{text!r} is not NAME[:TYPE]=VALUE", "command line")
    key, value = text.split("=", 1)
    name, type_ = key, None
    if ":" in key:
        head, tail = key.rsplit(":", 1)
        if tail.upper() in CACHE_TYPES:
            name, type_ = head, tail.upper()
        elif tail and tail.isupper():
            raise CacheError(
                f"unknown type {tail!r} in {text!r} (use one of {', '.join(sorted(CACHE_TYPES))})",
                "command line",
            )
    if not name:
        raise CacheError(f"{text!r} has no entry name", "command line")
    return name, type_, value


def _cmd_get(args: argparse.Namespace) -> int:
    entry = load(args.cache).get(args.name)
    if entry is None:
        if args.default is None:
            raise CacheError(f"has no entry {args.name!r}", args.cache)
        print(args.default)
        return 0
    print(entry.value)
    return 0


def _cmd_set(args: argparse.Namespace) -> int:
    assignments = [_parse_assignment(a) for a in args.assignments]
    cache = load(args.cache)
    for name, type_, value in assignments:
        cache = cache.set(name, value, type_)
    changed = save(cache, args.cache)
    names = ", ".join(f"{n}={v}" for n, _, v in assignments)
    print(f"{args.cache}: {'set' if changed else 'already'} {names}")
    return 0


def _cmd_retarget(args: argparse.Namespace) -> int:
    cache = load(args.cache)
    describe_old_python(cache)  # refuse a Python-less cache before running anything
    try:
        facts = python_facts(args.python)
    except CacheError as exc:
        raise CacheError(f"cannot retarget to {exc.source}: {exc.problem}", args.cache) from None
    result = retarget(cache, facts)
    changed = save(result.cache, args.cache)
    if changed:
        print(
            f"{args.cache}: Python {result.old_version} -> {result.new_version}: "
            f"rewrote {len(result.rewritten)} entries, dropped {len(result.dropped)} "
            f"stale signatures"
        )
    else:
        print(f"{args.cache}: already targets Python {result.new_version} at {args.python}")
    return 0


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # One line, like every other error of this tool (argparse prints the usage too).
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="cmake_cache.py", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    get = sub.add_parser("get", help="print the value of one entry")
    get.add_argument("cache")
    get.add_argument("name")
    get.add_argument(
        "--default", metavar="VALUE", help="print VALUE instead of failing when the entry is absent"
    )
    get.set_defaults(run=_cmd_get)
    set_ = sub.add_parser("set", help="set (or add) entries: NAME[:TYPE]=VALUE ...")
    set_.add_argument("cache")
    set_.add_argument("assignments", nargs="+", metavar="NAME[:TYPE]=VALUE")
    set_.set_defaults(run=_cmd_set)
    ret = sub.add_parser(
        "retarget-python", help="point Python-derived entries at another interpreter"
    )
    ret.add_argument("cache")
    ret.add_argument("--python", required=True, metavar="EXE")
    ret.set_defaults(run=_cmd_retarget)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except CacheError as exc:
        print(f"cmake_cache.py: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
