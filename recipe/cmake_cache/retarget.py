"""Point every Python-derived entry of a cache at another interpreter.

Part of recipe/cmake_cache; standard library only. Python-named entries are rebuilt from
the new interpreter's facts (rewrite.py's rules); any other entry is touched only where its
value holds a path of the old interpreter's; every other byte stays as it was. FindPython's
MD5 signatures hash the old find state: they are dropped, so the next configure validates the
new interpreter and records fresh ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from cache_file import Cache, CacheError, Entry
from interpreters import (
    EXECUTABLE_NAME,
    PROPERTIES_NAME,
    SIGNATURE_NAME,
    PythonFacts,
    describe_old_python,
    is_python_name,
)
from rewrite import Rewriter, in_style_of, slashed

#: CMake's own entries are left alone (CMake itself may live in the old interpreter's
#: site-packages), except these search paths: scikit-build-core puts the old
#: interpreter's site-packages (and, on an old CMake, its FindPython backport) there.
SEARCH_PATHS = frozenset({"CMAKE_PREFIX_PATH", "CMAKE_MODULE_PATH"})


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
        slashed(d) if windows else d for d in (new.stdlib, new.stdarch, new.sitelib, new.sitearch)
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
    rewriter = Rewriter(old, new)
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
