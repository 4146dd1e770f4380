"""Two builds of one package compared: byte for byte first, then, where they differ, what
differs, named so a reviewer can act on it.

- ``payload``: a file under the package's prefix whose bytes, mode or link differ, or that
  one side lacks (paths.json's list);
- ``metadata``: an info/ file; for the JSON ones (index.json, about.json, paths.json ...)
  each differing field, so conda-build's own provenance fields (about.json's
  ``root_pkgs``, ``conda_build_version``, ``channels``) are named, not rewritten;
- ``timestamps``: member times, owners or order, when the contents agree;
- ``archive``: the container itself (compression, zip metadata), when everything inside
  agrees.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tools.foundation.files import sha256_of

#: Fields named at most this many times per file; the rest are counted.
_SHOWN = 5


@dataclass(frozen=True)
class Member:
    digest: str  # sha256 of the content ("" for a folder or link)
    mode: int
    link: str
    mtime: int
    owner: tuple[int, int, str, str]


def _members(tar: tarfile.TarFile) -> tuple[dict[str, Member], dict[str, bytes], list[str]]:
    """Every member's facts, the info/ files' bytes, and the members' order."""
    found, info, order = {}, {}, []
    for member in tar:
        data = b""
        if member.isfile():
            stream = tar.extractfile(member)
            data = stream.read() if stream is not None else b""
        digest = hashlib.sha256(data).hexdigest() if member.isfile() else ""
        owner = (member.uid, member.gid, member.uname, member.gname)
        found[member.name] = Member(digest, member.mode, member.linkname, member.mtime, owner)
        order.append(member.name)
        if member.name.startswith("info/") and member.isfile():
            info[member.name] = data
    return found, info, order


def read_package(path: Path) -> tuple[dict[str, Member], dict[str, bytes], list[str]]:
    """All members of a .conda (both inner tars) or .tar.bz2, as :func:`_members` gives them."""
    if path.name.endswith(".tar.bz2"):
        with tarfile.open(path, "r|bz2") as tar:
            return _members(tar)
    from backports.zstd import ZstdFile

    found: dict[str, Member] = {}
    info: dict[str, bytes] = {}
    order: list[str] = []
    with zipfile.ZipFile(path) as archive:
        for entry in archive.infolist():
            if not entry.filename.endswith(".tar.zst"):
                continue
            with (
                archive.open(entry) as raw,
                ZstdFile(raw) as plain,
                tarfile.open(fileobj=plain, mode="r|") as tar,
            ):
                members, data, names = _members(tar)
            found.update(members)
            info.update(data)
            order += names
    return found, info, order


def _json_fields(name: str, ours: bytes, theirs: bytes) -> list[str]:
    """The top-level fields of two JSON documents that differ (deeper values shown short)."""
    try:
        left, right = json.loads(ours), json.loads(theirs)
    except ValueError:
        return [f"metadata {name}: content differs"]
    if not (isinstance(left, dict) and isinstance(right, dict)):
        return [f"metadata {name}: content differs"]
    found = []
    for key in sorted(set(left) | set(right)):
        if left.get(key) != right.get(key):
            found.append(
                f"metadata {name} {key}: {_short(left.get(key))} vs {_short(right.get(key))}"
            )
    return found or [f"metadata {name}: formatting differs (same fields)"]


def _short(value: object) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


def _text_lines(name: str, ours: bytes, theirs: bytes) -> list[str]:
    """The first differing line of two text files."""
    left, right = ours.decode(errors="replace"), theirs.decode(errors="replace")
    for number, (a, b) in enumerate(zip(left.splitlines(), right.splitlines()), 1):
        if a != b:
            return [f"metadata {name} line {number}: {a.strip()[:60]!r} vs {b.strip()[:60]!r}"]
    return [f"metadata {name}: one is longer"]


def differences(upload: Path, rebuilt: Path) -> list[str]:
    """What differs between two files of one package, ``upload`` first in each pair; empty
    when they are the same bytes."""
    if sha256_of(upload) == sha256_of(rebuilt):
        return []
    ours, our_info, our_order = read_package(upload)
    theirs, their_info, their_order = read_package(rebuilt)
    found: list[str] = []
    for name in sorted(set(ours) | set(theirs)):
        a, b = ours.get(name), theirs.get(name)
        kind = "metadata" if name.startswith("info/") else "payload"
        if a is None or b is None:
            found.append(f"{kind} {name}: only in the {'rebuild' if a is None else 'upload'}")
        elif (a.digest, a.mode, a.link) != (b.digest, b.mode, b.link):
            if kind == "payload":
                found.append(f"payload {name}: {_what(a, b)}")
            elif name.endswith(".json") and a.digest != b.digest:
                found += _json_fields(name, our_info[name], their_info[name])
            elif a.digest != b.digest:
                found += _text_lines(name, our_info[name], their_info[name])
            else:
                found.append(f"metadata {name}: {_what(a, b)}")
    if found:
        return _capped(found)
    times = sorted(n for n in ours if (ours[n].mtime, ours[n].owner) != (theirs[n].mtime,
                   theirs[n].owner))  # fmt: skip
    if times:
        first = times[0]
        return [
            f"timestamps: {len(times)} member(s) differ in time or owner, first {first} "
            f"({ours[first].mtime} vs {theirs[first].mtime})"
        ]
    if our_order != their_order:
        return ["timestamps: the members are in another order"]
    return ["archive: the same members, packed differently (compression or zip metadata)"]


def _what(a: Member, b: Member) -> str:
    if a.link != b.link:
        return f"link {a.link!r} vs {b.link!r}"
    if a.mode != b.mode:
        return f"mode {oct(a.mode)} vs {oct(b.mode)}"
    return f"content differs (sha256 {a.digest[:12]} vs {b.digest[:12]})"


def _capped(found: list[str]) -> list[str]:
    if len(found) <= _SHOWN * 4:
        return found
    return [*found[: _SHOWN * 4], f"... and {len(found) - _SHOWN * 4} more"]
