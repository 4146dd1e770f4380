"""The licence files both recipes list (``about: license_file``), checked against the
new archive: conda-build and rattler-build stop on a listed file the source lacks, hours into
a build. The licence files the source's own pyproject.toml declares (``[project]
license-files``, PEP 639 globs) that the recipes do not list are named beside: new vendored
code, or a listed file's new name."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class Licences:
    missing: tuple[str, ...]  # listed, absent from the archive
    unlisted: tuple[str, ...]  # declared by upstream's pyproject.toml, not listed


def check(listed: Sequence[str], present: set[str], project: dict) -> Licences:
    """``listed``: the recipes' licence files; ``present``: every path in the archive;
    ``project``: the archive's ``[project]`` table."""
    missing = tuple(path for path in listed if path not in present)
    patterns = project.get("license-files") or []
    if not isinstance(patterns, list):  # PEP 621's old {file = ...} table: no globs to expand
        patterns = []
    declared = declared_files(patterns, present)
    unlisted = tuple(path for path in declared if path not in set(listed))
    return Licences(missing, unlisted)


def declared_files(patterns: Iterable[str], present: Iterable[str]) -> list[str]:
    """The archive's files that the ``license-files`` globs match, sorted."""
    matchers = [_glob(str(p)) for p in patterns]
    return sorted(path for path in present if any(m.fullmatch(path) for m in matchers))


@lru_cache(maxsize=64)
def _glob(pattern: str) -> re.Pattern[str]:
    """PEP 639's glob as a regex over '/'-separated paths: ``**`` spans directories (none
    too), ``*`` and ``?`` stay within one, ``[...]`` is a class.  (Python 3.13's
    glob.translate does this; the toolkit runs on 3.10.)"""
    out = []
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out.append("(?:[^/]+/)*")
            index += 3
        elif pattern.startswith("**", index):
            out.append(".*")
            index += 2
        elif pattern[index] == "*":
            out.append("[^/]*")
            index += 1
        elif pattern[index] == "?":
            out.append("[^/]")
            index += 1
        elif pattern[index] == "[" and "]" in pattern[index + 1 :]:
            end = pattern.index("]", index + 1)
            out.append(f"[{pattern[index + 1 : end].replace(chr(92), chr(92) * 2)}]")
            index = end + 1
        else:
            out.append(re.escape(pattern[index]))
            index += 1
    return re.compile("".join(out))
