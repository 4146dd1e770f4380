"""A read-only view of the files several packages would install into one prefix.

Lookups follow symlinks inside the view and never touch the disk, so a link
that points outside the packages simply does not resolve.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass

from tools.check.archive import Member, Package

_MAX_LINKS = 40


@dataclass(frozen=True)
class Entry:
    package: Package
    member: Member


class Tree:
    def __init__(self, packages: Iterable[Package]) -> None:
        self._entries: dict[str, Entry] = {}
        self._by_name: dict[str, list[str]] = {}
        self._by_folded: dict[str, list[str]] = {}
        for package in packages:
            for member in package.members:
                if member.kind == "dir":
                    continue
                self._entries.setdefault(member.path, Entry(package, member))
                name = posixpath.basename(member.path)
                self._by_name.setdefault(name, []).append(member.path)
                self._by_folded.setdefault(name.lower(), []).append(member.path)

    def get(self, path: str) -> Entry | None:
        return self._entries.get(path)

    def resolve(self, path: str) -> str | None:
        """The path of the file ``path`` ends at after following links, or None."""
        path = posixpath.normpath(path)
        for _ in range(_MAX_LINKS):
            entry = self._entries.get(path)
            if entry is None:
                return None
            if entry.member.kind != "symlink":
                return path
            target = entry.member.target or ""
            if target.startswith("/"):
                return None
            path = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
            if path.startswith("../") or path == "..":
                return None
        return None

    def named(self, basename: str) -> list[str]:
        """Every path in the view whose last component is ``basename``."""
        return list(self._by_name.get(basename, ()))

    def named_nocase(self, basename: str) -> list[str]:
        """Every path whose last component is ``basename`` in any case (Windows' file names)."""
        return list(self._by_folded.get(basename.lower(), ()))
