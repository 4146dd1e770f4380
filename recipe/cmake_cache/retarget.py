"""Point every Python-derived entry of a cache at another interpreter.

Part of recipe/cmake_cache.py; standard library only. Python-named entries are rebuilt from
the new interpreter's facts; any other entry is touched only where its value holds a path
of the old interpreter's; every other byte stays as it was.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from cmake_cache_file import Cache, CacheError, Entry
from cmake_cache_python import (
    EXECUTABLE_NAME,
    PROPERTIES_NAME,
    SIGNATURE_NAME,
    OldPython,
    PythonFacts,
    describe_old_python,
    is_python_name,
)

#: CMake's own entries are left alone (CMake itself may live in the old interpreter's
#: site-packages), except these search paths: scikit-build-core puts the old
#: interpreter's site-packages (and, on an old CMake, its FindPython backport) there.
SEARCH_PATHS = frozenset({"CMAKE_PREFIX_PATH", "CMAKE_MODULE_PATH"})


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
        for old_root in old.root_dirs:
            pair(old_root, new.base_prefix)

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
        # The ABI flag of a free-threaded Python, where a spelling carries the ABI rather
        # than the version alone: 3.14t's SOABI cpython-314t, its dirs python3.14t, its
        # libraries libpython3.14t.so and python314t.lib, the ABI tag of cp314-cp314t.
        old_t, new_t = ("t" if old.gil_disabled else ""), ("t" if new.gil_disabled else "")
        spellings: list[tuple[str, str]] = []
        if old.ext_suffix and new.ext_suffix:
            spellings.append((re.escape(old.ext_suffix) + r"(?![\w.-])", new.ext_suffix))
        if old.soabi and new.soabi:
            spellings.append((re.escape(old.soabi) + r"(?![\w-])", new.soabi))
        spellings += [
            (rf"(?i:(?<=python)){major}\.{minor}{old_t}(?![\dt]|\.\d)", f"{nmaj}.{nmin}{new_t}"),
            (rf"(?<=cpython-){major}{minor}{old_t}(?![\dt])", f"{nmaj}{nmin}{new_t}"),
            (
                rf"(?<=cp){major}{minor}-cp{major}{minor}{old_t}(?![\dt])",
                f"{nmaj}{nmin}-cp{nmaj}{nmin}{new_t}",
            ),
            (
                rf"(?i:(?<=python)){major}{minor}{old_t}(?=(?:_d)?\.(?:lib|dll)\b)",
                f"{nmaj}{nmin}{new_t}",
            ),
        ]
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
    # An empty ABIFLAGS is spelled as the old list spells it; after a free-threaded t, as
    # FindPython spells it today.
    no_flags = "" if fields[5] == "" else "<none>"
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
            # Cross-compiling, FindPython records no SOABI (it does not ask the
            # interpreter); the retarget must not invent one either.
            new.soabi if fields[6] else "",
            new.sosabi,
            *dirs,
        ]
    )


#: The ABI a user asks FindPython for: debug;pymalloc;unicode[;free-threaded] (CMake >= 3.30).
FIND_ABI_NAME = re.compile(r"^Python\d?_FIND_ABI$")


def _new_find_abi(old_value: str, new: PythonFacts) -> str:
    """A fourth element that asks for one threading ABI asks for the new interpreter's: ON
    for a free-threaded one, OFF for one with the GIL (FindPython would reject it)."""
    fields = old_value.split(";")
    if len(fields) == 4 and fields[3].upper() in ("ON", "OFF"):
        fields[3] = "ON" if new.gil_disabled else "OFF"
    return ";".join(fields)


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
            if SIGNATURE_NAME.match(entry.name):
                dropped.append(entry.name)
                return None
            if PROPERTIES_NAME.match(entry.name):
                value = _new_properties(entry.value, new)
                if value is None:
                    dropped.append(entry.name)
                    return None
            elif EXECUTABLE_NAME.match(entry.name):
                value = in_style_of(entry.value, new.executable)
            elif FIND_ABI_NAME.match(entry.name):
                value = _new_find_abi(entry.value, new)
            else:
                value = rewriter.python_entry(entry.value)
        elif (
            entry.name in SEARCH_PATHS or not entry.name.startswith("CMAKE_")
        ) and rewriter.mentions_old_paths(entry.value):
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
    if result.get("CMAKE_SYSTEM_NAME") is not None:
        result = _pin_cross_headers(result, new, rewritten)
    old_version = ".".join(map(str, old.version))
    return Retargeted(result, old_version, new.full, tuple(rewritten), tuple(dropped))


def _pin_cross_headers(cache: Cache, new: PythonFacts, rewritten: list[str]) -> Cache:
    """Give a cross-compiling cache's FindPython the new interpreter's headers.

    A CMAKE_SYSTEM_NAME set by the user makes CMake cross-compile (CMAKE_CROSSCOMPILING),
    and then FindPython (policy CMP0190 OLD, or no emulator) does not ask the interpreter
    where its development files are: it looks for a pythonX.Y-config tool under
    <P>_ROOT_DIR, VIRTUAL_ENV/CONDA_PREFIX and PATH, whichever Python that belongs to
    (FindPython/Support.cmake, "if python interpreter is found, use it to look-up for
    artifacts", skipped when CMAKE_CROSSCOMPILING). The signatures dropped above make
    the next configure search again, so it finds the first Python's headers, rejects them
    for the new interpreter's version, and Development.Module goes missing. The
    documented artifact hint <P>_INCLUDE_DIR makes the search take the new interpreter's.
    https://gitlab.kitware.com/cmake/cmake/-/blob/v4.4.5/Modules/FindPython/Support.cmake
    """
    for entry in cache.entries:
        found = re.fullmatch(r"_(Python\d?)_INCLUDE_DIR", entry.name)
        hint = found[1] + "_INCLUDE_DIR" if found else ""
        if found and entry.type == "INTERNAL" and cache.get(hint) is None and new.include_dir:
            cache = cache.set(hint, in_style_of(entry.value, new.include_dir), "PATH")
            rewritten.append(hint)
    return cache
