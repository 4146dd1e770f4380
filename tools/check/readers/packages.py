"""Read conda packages, upstream wheels and installed prefixes into records
(tools/check/archive.py).

Archives are streamed with conda-package-streaming and never unpacked (readers/content.py
says what is kept of each member). Member names and link targets are validated as they
stream by; an unsafe member is recorded, never written and never followed.
"""

from __future__ import annotations

import json
import os
import re
import zipfile
from collections.abc import Mapping
from pathlib import Path

from conda_package_streaming.package_streaming import stream_conda_component

from tools.check.archive import (
    DAMAGED,
    TORCH_PACKAGES,
    Member,
    MemberKind,
    Package,
    tar_kind,
    unsafe_reason,
)
from tools.check.formats import wheel_platforms
from tools.check.readers.content import Collector, wants_text
from tools.foundation.errors import UserError

# ---------------------------------------------------------------- conda packages


def _load_json(raw: bytes, where: str) -> object:
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise UserError(f"{where}: not valid JSON ({exc})") from exc


def read_conda(path: Path, workdir: Path) -> Package:
    """Stream a .conda or .tar.bz2 package."""
    collector = Collector(workdir, wants_text)
    members: list[Member] = []
    unsafe: list[tuple[str, str]] = []
    info: dict[str, bytes] = {}
    components = ("info", "pkg") if path.name.endswith(".conda") else ("pkg",)
    try:
        for component in components:
            for tar, entry in stream_conda_component(str(path), component=component):
                _take_member(tar, entry, members, unsafe, info, collector)
    except DAMAGED as exc:
        raise UserError(
            f"{path}: not a readable conda package ({exc}); rebuild or re-download it"
        ) from exc
    if "info/index.json" not in info:
        raise UserError(f"{path}: no info/index.json; is this a conda package?")
    index = _load_json(info["info/index.json"], f"{path}:info/index.json")
    if not isinstance(index, dict) or not index.get("name"):
        raise UserError(f"{path}:info/index.json: no package name")
    run_exports = None
    if "info/run_exports.json" in info:
        raw = _load_json(info["info/run_exports.json"], f"{path}:info/run_exports.json")
        run_exports = {k: tuple(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
    placeholders = {}
    if "info/paths.json" in info:
        paths = _load_json(info["info/paths.json"], f"{path}:info/paths.json")
        for entry in paths.get("paths", []) if isinstance(paths, dict) else []:
            if entry.get("prefix_placeholder") and entry.get("file_mode", "text") == "text":
                placeholders[entry["_path"]] = entry["prefix_placeholder"]
    return Package(
        source=path,
        kind="conda",
        name=str(index["name"]),
        version=str(index.get("version", "")),
        build=str(index.get("build", "")),
        subdir=str(index.get("subdir", "")),
        depends=tuple(index.get("depends", ())),
        constrains=tuple(index.get("constrains", ())),
        run_exports=run_exports,
        members=tuple(m for m in members if not m.path.startswith("info/")),
        unsafe=tuple(unsafe),
        elves=collector.elves,
        elf_errors=collector.elf_errors,
        **collector.binaries(),
        prefix_strings={
            k: v for k, v in collector.prefix_strings.items() if not k.startswith("info/")
        },
        placeholders=placeholders,
        texts=collector.texts,
    )


def _take_member(tar, entry, members, unsafe, info, collector) -> None:
    kind = tar_kind(entry)
    name = entry.name
    target = entry.linkname if kind in ("symlink", "hardlink") else None
    if kind is None:
        unsafe.append((name, "not a regular file, directory or link (device, fifo…)"))
        return
    reason = unsafe_reason(name, kind, target)
    if reason:
        unsafe.append((name, reason))
        return
    members.append(Member(name, kind, entry.size, target))
    if kind != "file":
        return
    stream = tar.extractfile(entry)
    if stream is None:
        return
    if name.startswith("info/"):
        if name in ("info/index.json", "info/run_exports.json", "info/paths.json"):
            info[name] = stream.read()
        return
    collector.consume(name, stream, entry.size)


# ---------------------------------------------------------------- wheels

_WHEEL_NAME = re.compile(
    r"^(?P<name>[^-]+)-(?P<version>[^-]+)(?:-\d[^-]*)?-[^-]+-[^-]+-(?P<plat>[^-]+)\.whl$"
)


def read_wheel(path: Path, workdir: Path) -> Package:
    """Read an upstream wheel, for comparison with the conda packages."""
    match = _WHEEL_NAME.match(path.name)
    if not match:
        raise UserError(f"{path}: not a wheel file name (name-version-...-platform.whl)")
    collector = Collector(workdir, wants_text)
    members: list[Member] = []
    unsafe: list[tuple[str, str]] = []
    try:
        with zipfile.ZipFile(path) as archive:
            for entry in archive.infolist():
                mode = entry.external_attr >> 16
                is_link = (mode & 0o170000) == 0o120000
                kind: MemberKind = "dir" if entry.is_dir() else "symlink" if is_link else "file"
                name = entry.filename.rstrip("/")
                target = archive.read(entry).decode() if is_link else None
                reason = unsafe_reason(name, kind, target)
                if reason:
                    unsafe.append((name, reason))
                    continue
                members.append(Member(name, kind, entry.file_size, target))
                if kind == "file":
                    with archive.open(entry) as stream:
                        collector.consume(name, stream, entry.file_size)
    except DAMAGED as exc:
        raise UserError(f"{path}: not a readable wheel ({exc}); re-download it") from exc
    platform = match["plat"]
    platforms = wheel_platforms(platform)
    return Package(
        source=path,
        kind="wheel",
        name=match["name"].replace("_", "-").lower(),
        version=match["version"],
        build="",
        subdir=platforms[0] if platforms else platform,
        platforms=platforms,
        members=tuple(members),
        unsafe=tuple(unsafe),
        elves=collector.elves,
        elf_errors=collector.elf_errors,
        **collector.binaries(),
        prefix_strings=collector.prefix_strings,
        texts=collector.texts,
    )


# ---------------------------------------------------------------- installed prefixes


def read_prefix(prefix: Path, workdir: Path) -> list[Package]:
    """One record per conda-meta/*.json; only this feedstock's packages are analysed."""
    records = sorted((prefix / "conda-meta").glob("*.json"))
    if not records:
        raise UserError(f"{prefix}: conda-meta/ holds no package records; is this a conda prefix?")
    packages = []
    for record_path in records:
        record = _load_json(record_path.read_bytes(), str(record_path))
        if not isinstance(record, dict) or "name" not in record:
            continue
        packages.append(_prefix_package(prefix, record, workdir))
    if not any(p.analysed for p in packages):
        raise UserError(
            f"{prefix}: none of this feedstock's packages ({', '.join(sorted(TORCH_PACKAGES))}) "
            "is installed here; nothing to check"
        )
    return packages


def _prefix_package(prefix: Path, record: Mapping, workdir: Path) -> Package:
    name = str(record["name"])
    analyse = name in TORCH_PACKAGES
    collector = Collector(workdir, wants_text)
    members: list[Member] = []
    placeholders: dict[str, str] = {}
    for entry in (record.get("paths_data") or {}).get("paths", []):
        if entry.get("prefix_placeholder") and entry.get("file_mode", "text") == "text":
            placeholders[entry["_path"]] = entry["prefix_placeholder"]
    missing: list[str] = []
    for rel in record.get("files", ()):
        real = prefix / rel
        if real.is_symlink():
            members.append(Member(rel, "symlink", 0, os.readlink(real)))
        elif real.is_file():
            members.append(Member(rel, "file", real.stat().st_size))
            if analyse:
                collector.consume_file(rel, real)
        elif not real.exists():
            missing.append(rel)
    return Package(
        source=prefix,
        kind="prefix",
        name=name,
        version=str(record.get("version", "")),
        build=str(record.get("build", "")),
        subdir=str(record.get("subdir", "")),
        depends=tuple(record.get("depends", ())),
        constrains=tuple(record.get("constrains", ())),
        members=tuple(members),
        elves=collector.elves,
        elf_errors=collector.elf_errors,
        **collector.binaries(),
        prefix_strings=collector.prefix_strings,
        placeholders=placeholders,
        texts=collector.texts,
        analysed=analyse,
        missing=tuple(missing),
    )
