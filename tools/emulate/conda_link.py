"""Linking a conda package into a prefix without conda: extract it (refusing members that
would land outside), rewrite its prefix placeholder as conda does (binary strings padded to
their length), place a noarch: python package's files for the chroot's Python, and read
what the linked packages declare (their Python, their requirements)."""

from __future__ import annotations

import json
import os
import re
import shutil
import tarfile
from importlib.metadata import PathDistribution
from pathlib import Path, PurePosixPath

from packaging.requirements import Requirement as PipRequirement

from tools.check.archive import DAMAGED, tar_kind, unsafe_reason
from tools.foundation.errors import UserError


def relocate(data: bytes, placeholder: str, prefix: str, mode: str) -> bytes:
    """Replace conda-build's prefix placeholder the way conda does when linking.

    Text files simply get the new prefix.  In binary files each placeholder
    sits in a NUL-terminated string whose length must not change, so the
    string is rewritten with the shorter prefix and padded with NULs.
    """
    old, new = placeholder.encode(), prefix.encode()
    if mode != "binary":
        return data.replace(old, new)
    if len(new) > len(old):
        raise UserError(f"prefix {prefix} is longer than the package's placeholder")

    def shorten(match: re.Match[bytes]) -> bytes:
        original = match.group(0)[:-1]
        rewritten = original.replace(old, new)
        return rewritten + b"\0" * (len(original) - len(rewritten) + 1)

    return re.sub(re.escape(old) + rb"[^\0]*\0", shorten, data)


def noarch_python_target(path: str, python: str) -> str:
    """Where conda puts a noarch: python package's file for this Python."""
    if path.startswith("site-packages/"):
        return f"lib/python{python}/{path}"
    if path.startswith("python-scripts/"):
        return "bin/" + path.removeprefix("python-scripts/")
    return path


class _Refused(Exception):
    """A member or ``paths.json`` entry that would land outside where it belongs."""


def _refuse_unsafe_members(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo:
    """tarfile extraction filter: the checker's rule for members, then the standard library's
    data filter, which also follows the links extracted so far."""
    kind = tar_kind(member)
    if kind is None:
        raise _Refused(f"member {member.name!r} is not a regular file, directory or link")
    reason = unsafe_reason(
        member.name, kind, member.linkname if member.issym() or member.islnk() else None
    )
    if reason:
        raise _Refused(reason)
    try:
        return tarfile.data_filter(member, dest)
    except tarfile.FilterError as exc:
        raise _Refused(f"member {member.name!r}: {exc}") from None


def _extract(package: Path, unpacked: Path) -> None:
    from conda_package_streaming.package_streaming import stream_conda_component

    components = ("pkg", "info") if package.name.endswith(".conda") else ("pkg",)
    for component in components:
        for tar, _ in stream_conda_component(str(package), component=component):
            tar.extractall(unpacked, filter=_refuse_unsafe_members)
            break


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath((root, path)) == root


def _entries(unpacked: Path) -> list[dict]:
    paths_json = unpacked / "info" / "paths.json"
    if paths_json.is_file():
        data = json.loads(paths_json.read_text())
        entries = data.get("paths", []) if isinstance(data, dict) else None
    else:  # old .tar.bz2 packages list their files only
        files = unpacked / "info" / "files"
        lines = files.read_text().splitlines() if files.is_file() else []
        entries = [{"_path": line} for line in lines if line]
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("_path"), str) for e in entries
    ):
        raise ValueError("info/paths.json: every entry needs a _path string")
    return entries


def link_conda_package(
    package: Path, prefix_on_host: Path, prefix_inside: PurePosixPath, scratch: Path, *, python: str
) -> None:
    """Extract one package and place its files into the prefix, relocated.

    Nothing lands outside the prefix: members and ``paths.json`` entries that are absolute,
    climb with ``..`` or link out of the package are refused (the rule ``check`` applies),
    and every write is checked against the prefix after following the links already placed,
    so a symlink an earlier entry created cannot carry a later one out.  A refused package
    is one UserError; whatever it had placed is removed with its environment.
    """
    unpacked = scratch / package.name
    try:
        _extract(package, unpacked)
        index = json.loads((unpacked / "info" / "index.json").read_text())
        noarch_python = isinstance(index, dict) and index.get("noarch") == "python"
        entries = _entries(unpacked)
        prefix_on_host.mkdir(parents=True, exist_ok=True)
        root = os.path.realpath(prefix_on_host)
        for entry in entries:
            _link_entry(entry, unpacked, Path(root), prefix_inside, noarch_python, python)
    except _Refused as exc:
        raise UserError(
            f"{package.name}: refused, {exc}; nothing was written outside {prefix_inside}"
        ) from None
    except DAMAGED as exc:
        raise UserError(f"{package.name}: not a usable conda package ({exc})") from None
    finally:
        shutil.rmtree(unpacked, ignore_errors=True)


def _link_entry(
    entry: dict,
    unpacked: Path,
    root: Path,
    prefix_inside: PurePosixPath,
    noarch_python: bool,
    python: str,
) -> None:
    name = entry["_path"]
    relative = noarch_python_target(name, python) if noarch_python else name
    source, target = unpacked / name, root / relative
    link = os.readlink(source) if source.is_symlink() else None
    for path in {name, relative}:
        reason = unsafe_reason(path, "symlink" if link is not None else "file", link)
        if reason:
            raise _Refused(f"paths.json entry: {reason}")
    # Follow what earlier entries placed: the directory written into must be in the prefix.
    if not _inside(os.path.realpath(target.parent), str(root)):
        raise _Refused(
            f"paths.json entry {name!r} would be written through a link out of the prefix"
        )
    if entry.get("path_type") == "directory":
        target.mkdir(parents=True, exist_ok=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.exists():
        raise _Refused(f"paths.json entry {name!r} is a file where a directory already is")
    if link is not None:
        target.symlink_to(link)
        if not _inside(os.path.realpath(target), str(root)):
            target.unlink()
            raise _Refused(f"symlink {name!r} -> {link!r} leads out of the prefix")
    elif not source.is_file():
        raise _Refused(f"paths.json entry {name!r} is not a file in the package")
    elif entry.get("prefix_placeholder"):
        data = relocate(
            source.read_bytes(),
            str(entry["prefix_placeholder"]),
            str(prefix_inside),
            str(entry.get("file_mode", "text")),
        )
        target.write_bytes(data)
        shutil.copymode(source, target)
    else:
        shutil.copy2(source, target)


def site_packages_pythons(prefix: Path) -> set[str]:
    return {p.parent.name.removeprefix("python") for p in prefix.glob("lib/python3*/site-packages")}


def declared_requirements(prefix: Path) -> list[str]:
    """Requires-Dist of the Python distributions the conda packages brought."""
    found = []
    for dist_info in sorted(prefix.glob("lib/python3*/site-packages/*.dist-info")):
        for spec in PathDistribution(dist_info).requires or ():
            requirement = PipRequirement(spec)
            # Optional extras are the user's business, not the package's.
            if requirement.marker is not None and "extra" in str(requirement.marker):
                continue
            found.append(spec)
    return found
