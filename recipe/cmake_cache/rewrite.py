"""The old interpreter's spellings in a cache value, and the new interpreter's for each.

Part of recipe/cmake_cache; standard library only. The rules are declared here as tables;
``Rewriter`` fills them in for one pair of interpreters and applies them in one
left-to-right pass: at each position the first matching rule wins (the old interpreter's
own paths, longest first, so site-packages wins over the stdlib dir that holds it; then its
prefix; then the version spellings) and a replaced span is never scanned again.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping, Sequence

from interpreters import OldPython, PythonFacts

#: Where an old path may start and end inside a value: a CMake list item, a quoted or
#: bracketed word, or a compiler flag (-I/x, -L/x), but never inside a longer path.
PATH_START = r"""(?:(?<![^;\[ "'=])|(?<=-I)|(?<=-L))"""
PATH_END = r"""(?![^/\\;\]\[ "'])"""

#: Which of the new interpreter's facts replaces each kind of path the cache records for
#: the old one (OldPython's field -> PythonFacts' field), in this order of precedence.
PATH_FACTS = (
    ("executables", "executable"),
    ("include_dirs", "include_dir"),
    ("libraries", "library"),
    ("install_dirs", ("stdlib", "stdarch", "sitelib", "sitearch")),
    ("numpy_includes", "numpy_include"),
    ("root_dirs", "base_prefix"),
)

# The templates below are filled in with str.format: {M}/{m} the old major/minor version,
# {T} the old ABI flag; {N}/{n}/{p} the new major/minor/micro version, {t} the new flag,
# {full}/{short} the new version as 3.13.1 and 3.13. The flag is "t" for a free-threaded
# Python and "" for one with the GIL.

#: Spellings that carry the ABI as well as the version, tried before the version alone
#: (after the old SOABI and extension suffix, taken whole): 3.14t's dirs python3.14t, SOABI
#: cpython-314t, the ABI tag of cp314-cp314t and the libraries python314t.lib/.dll.
ABI_SPELLINGS = (
    (r"(?i:(?<=python)){M}\.{m}{T}(?![\dt]|\.\d)", "{N}.{n}{t}"),
    (r"(?<=cpython-){M}{m}{T}(?![\dt])", "{N}{n}{t}"),
    (r"(?<=cp){M}{m}-cp{M}{m}{T}(?![\dt])", "{N}{n}-cp{N}{n}{t}"),
    (r"(?i:(?<=python)){M}{m}{T}(?=(?:_d)?\.(?:lib|dll)\b)", "{N}{n}{t}"),
)

#: The version alone, as CMake and Python spell it.
VERSION_SPELLINGS = (
    # 3.12.1, v3.12.N -> the new full version; then 3.12 alone
    (r"(?<![\d.]){M}\.{m}\.\d+(?!\d)", "{full}"),
    (r"(?<![\d.]){M}\.{m}(?!\d|\.\d)", "{short}"),
    # CMake lists: 3;12;1 and 3;12
    (r"(?<![\d;.]){M};{m};\d+(?!\d)", "{N};{n};{p}"),
    (r"(?<![\d;.]){M};{m}(?!\d|;\d)", "{N};{n}"),
    # Compact spellings: cpython-312, cp312, python312.lib, Python312, py312
    (r"(?<=cpython-){M}{m}(?!\d)", "{N}{n}"),
    (r"(?<=cp){M}{m}(?!\d)", "{N}{n}"),
    (r"(?i:(?<=python)){M}{m}(?!\d)", "{N}{n}"),
    (r"(?<=py){M}{m}(?!\d)", "{N}{n}"),
)

#: NumPy 2 moved its headers from numpy/core to numpy/_core: the new NumPy's layout.
NUMPY_CORE = r"(?<=numpy[\\/])_?core(?=[\\/]include)"


def slashed(path: str) -> str:
    return path.replace("\\", "/")


def in_style_of(old: str, new: str) -> str:
    """``new`` with the separators ``old`` uses: CMake writes C:/x, Python answers C:\\x."""
    if "\\" in old and "/" not in old:
        return new.replace("/", "\\")
    if "/" in old:
        return slashed(new)
    return new


def _prefix_of(executable: str) -> str:
    parent = os.path.dirname(slashed(executable))
    if os.path.basename(parent).lower() in ("bin", "scripts"):
        parent = os.path.dirname(parent)
    return parent


def _path_pairs(old: OldPython, new: PythonFacts) -> Iterator[tuple[str, str]]:
    """(old path, new path) for every path PATH_FACTS pairs."""
    for old_field, new_field in PATH_FACTS:
        olds = getattr(old, old_field)
        if isinstance(new_field, tuple):  # one new fact per position
            yield from zip(olds, (getattr(new, f) for f in new_field))
        else:
            yield from ((o, getattr(new, new_field) or "") for o in olds)


def _paths(old: OldPython, new: PythonFacts) -> dict[str, str]:
    paths: dict[str, str] = {}
    for old_path, new_path in _path_pairs(old, new):
        if old_path and new_path and not old_path.endswith("-NOTFOUND"):
            paths.setdefault(old_path, in_style_of(old_path, new_path))
            paths.setdefault(slashed(old_path), slashed(new_path))
    return paths


def _prefixes(old: OldPython, new: PythonFacts) -> dict[str, str]:
    """The interpreter's prefix hosts much more than Python (a conda prefix holds every
    library), so only Python-named entries follow a prefix change."""
    prefixes: dict[str, str] = {}
    for old_exe in old.executables:
        old_prefix = _prefix_of(old_exe)
        new_prefix = slashed(new.prefix) if new.prefix else _prefix_of(new.executable)
        if old_prefix and old_prefix != "/" and old_prefix != new_prefix:
            prefixes.setdefault(old_prefix, new_prefix)
            if ":" in old_prefix[:3]:  # a Windows drive: values may use either separator
                prefixes.setdefault(old_prefix.replace("/", "\\"), new_prefix.replace("/", "\\"))
    return prefixes


def _path_rules(table: Mapping[str, str]) -> list[tuple[str, str]]:
    return [
        (PATH_START + re.escape(p) + PATH_END, table[p])
        for p in sorted(table, key=len, reverse=True)
    ]


def _spellings(old: OldPython, new: PythonFacts) -> list[tuple[str, str]]:
    spellings: list[tuple[str, str]] = []
    if old.ext_suffix and new.ext_suffix:
        spellings.append((re.escape(old.ext_suffix) + r"(?![\w.-])", new.ext_suffix))
    if old.soabi and new.soabi:
        spellings.append((re.escape(old.soabi) + r"(?![\w-])", new.soabi))
    fields = {
        "M": old.version[0],
        "m": old.version[1],
        "T": "t" if old.gil_disabled else "",
        "N": new.version[0],
        "n": new.version[1],
        "p": new.version[2],
        "t": "t" if new.gil_disabled else "",
        "full": new.full,
        "short": new.short,
    }
    spellings += [
        (pattern.format(**fields), replacement.format(**fields))
        for pattern, replacement in (*ABI_SPELLINGS, *VERSION_SPELLINGS)
    ]
    if new.numpy_version:
        layout = "_core" if int(new.numpy_version.split(".")[0]) >= 2 else "core"
        spellings.append((NUMPY_CORE, layout))
    return spellings


class Rewriter:
    """Old-interpreter spellings -> new ones, for one pair of interpreters."""

    def __init__(self, old: OldPython, new: PythonFacts) -> None:
        paths = _path_rules(_paths(old, new))
        self._paths = _Rules(paths)
        self._python = _Rules(paths + _path_rules(_prefixes(old, new)) + _spellings(old, new))

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
