"""Read conda packages, upstream wheels and installed prefixes into records.

Archives are streamed with conda-package-streaming and never unpacked: a member
whose content a check needs is copied, alone, into the caller's private
temporary directory (ELF files, which pyelftools must seek in) or scanned in
memory (small text files).  Member names and link targets are validated as they
stream by; an unsafe member is recorded, never written and never followed.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import shutil
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Literal

from conda_package_streaming.package_streaming import stream_conda_component

from tools.check.elf import ElfInfo, read_elf
from tools.check.findings import Finding, failed, member_path, passed
from tools.check.formats import BinaryFormat, binary_format, foreign_format, wheel_platforms
from tools.foundation.errors import UserError

if TYPE_CHECKING:  # their readers' libraries are imported only when such a file is met
    from tools.check.macho import MachOInfo
    from tools.check.pe import PeInfo


def _zstd_error() -> tuple[type[Exception], ...]:
    """The exception a damaged zstd stream raises, from the module conda-package-streaming uses."""
    for module in ("compression.zstd", "backports.zstd"):
        try:
            return (__import__(module, fromlist=["ZstdError"]).ZstdError,)
        except ImportError:
            continue
    return ()


# What reading a damaged archive raises, from its container (zip, tar) down to its
# compression (deflate, bzip2 and lzma raise OSError, zstd its own error).
DAMAGED = (
    OSError,
    EOFError,
    tarfile.TarError,
    zipfile.BadZipFile,
    zlib.error,
    NotImplementedError,  # zipfile: a damaged header naming an unknown version or compression
    LookupError,
    ValueError,
    *_zstd_error(),
)

MemberKind = Literal["file", "symlink", "hardlink", "dir"]
SourceKind = Literal["conda", "wheel", "prefix"]

PACKAGE_SUFFIXES = (".conda", ".tar.bz2")
# Packages of this feedstock; in an installed prefix only these are analysed
# (the rest of the environment is only listed, to resolve libraries against).
TORCH_PACKAGES = frozenset(
    {"libtorch", "libtorch-cuda-linalg", "pytorch", "pytorch-cpu", "pytorch-gpu", "pytorch-tests"}
)

_HEAD = 8192
_TEXT_LIMIT = 32 * 1024 * 1024
_CHUNK = 1 << 20
# Paths that exist only on a build machine: conda-build's work, build and host
# prefixes (the host one is a 255-character placeholder), and conda-forge's
# docker mount point.
BUILD_PREFIX_MARKERS = (
    b"_h_env_placehold",
    b"_build_env",
    b"/conda-bld/",
    b"/feedstock_root/",
    b"/build_artifacts/",
)
# The whole path around a marker: everything up to quotes, whitespace or separators.
_PATH_AROUND = re.compile(rb"[^\s\"'`;:=,()<>]+")


def build_prefix_strings(data: bytes) -> tuple[str, ...]:
    """The build-machine paths in ``data`` (most files have none: test that first, cheaply)."""
    if not any(marker in data for marker in BUILD_PREFIX_MARKERS):
        return ()
    found = set()
    for token in _PATH_AROUND.findall(data):
        if any(marker in token for marker in BUILD_PREFIX_MARKERS):
            found.add(token.decode("utf-8", "replace"))
    return tuple(sorted(found))


@dataclass(frozen=True)
class Member:
    path: str
    kind: MemberKind
    size: int = 0
    target: str | None = None  # as stored: relative for symlinks, a member name for hard links


@dataclass(frozen=True)
class Package:
    source: Path
    kind: SourceKind
    name: str
    version: str
    build: str
    subdir: str
    depends: tuple[str, ...] = ()
    constrains: tuple[str, ...] = ()
    run_exports: Mapping[str, tuple[str, ...]] | None = None  # None: no info/run_exports.json
    members: tuple[Member, ...] = ()
    unsafe: tuple[tuple[str, str], ...] = ()  # (member name, why)
    elves: Mapping[str, ElfInfo] = field(default_factory=dict)
    elf_errors: Mapping[str, str] = field(default_factory=dict)
    # Mach-O (macOS) and PE (Windows) files: tools/check/macho.py, tools/check/pe.py
    machos: Mapping[str, MachOInfo] = field(default_factory=dict)
    pes: Mapping[str, PeInfo] = field(default_factory=dict)
    # member -> (format, why it could not be read): Mach-O and PE files that did not parse,
    # and binaries of a format no check reads (tools/check/formats.py)
    binary_errors: Mapping[str, tuple[BinaryFormat, str]] = field(default_factory=dict)
    # package subdirs a wheel's platform tag fits (a universal2 wheel: osx-64 and osx-arm64)
    platforms: tuple[str, ...] = ()
    # member -> build-machine paths found in it (text files only)
    prefix_strings: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # member -> placeholder conda records for install-time relocation (text mode)
    placeholders: Mapping[str, str] = field(default_factory=dict)
    texts: Mapping[str, str] = field(default_factory=dict)  # small files the checks parse
    analysed: bool = True  # False: only listed (prefix packages outside this feedstock)
    missing: tuple[str, ...] = ()  # files a prefix's conda-meta record lists that are absent

    @property
    def label(self) -> str:
        if self.kind == "prefix":
            return f"{self.source}[{self.name}]"
        return self.source.name


# ---------------------------------------------------------------- member safety


def unsafe_reason(name: str, kind: MemberKind, target: str | None) -> str | None:
    """Why a member must not be trusted, or None when it stays inside the package."""
    if not name or name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return f"absolute member path {name!r}"
    if ".." in name.split("/"):
        return f"member path {name!r} climbs out of the package with '..'"
    if kind == "symlink":
        if target is None or target.startswith("/"):
            return f"symlink to absolute path {target!r}"
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
        if resolved == ".." or resolved.startswith("../"):
            return f"symlink to {target!r} escapes the package"
    if kind == "hardlink" and (not target or target.startswith("/") or ".." in target.split("/")):
        return f"hard link to {target!r} outside the package"
    return None


def tar_kind(info: tarfile.TarInfo) -> MemberKind | None:
    if info.isreg():
        return "file"
    if info.issym():
        return "symlink"
    if info.islnk():
        return "hardlink"
    if info.isdir():
        return "dir"
    return None


# ---------------------------------------------------------------- content analysis


@dataclass
class _Collector:
    """Accumulates what streaming a package's content has found."""

    workdir: Path
    keep_text: Callable[[str], bool]
    elves: dict[str, ElfInfo] = field(default_factory=dict)
    elf_errors: dict[str, str] = field(default_factory=dict)
    prefix_strings: dict[str, tuple[str, ...]] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    machos: dict[str, MachOInfo] = field(default_factory=dict)
    pes: dict[str, PeInfo] = field(default_factory=dict)
    binary_errors: dict[str, tuple[BinaryFormat, str]] = field(default_factory=dict)

    def consume(self, path: str, stream: BinaryIO, size: int) -> None:
        head = stream.read(_HEAD)
        kind = binary_format(head)
        if kind == "Mach-O":
            self._macho(path, stream, head, size)
        elif kind in ("ELF", "PE"):
            self._spool(path, head, stream)
        elif kind is not None:
            self.binary_errors[path] = (kind, foreign_format(kind))
        elif b"\0" not in head and size <= _TEXT_LIMIT:
            data = head + stream.read()
            hits = build_prefix_strings(data)
            if hits:
                self.prefix_strings[path] = hits
            if self.keep_text(path):
                self.texts[path] = data.decode("utf-8", "replace")

    def consume_file(self, path: str, real: Path) -> None:
        with real.open("rb") as stream:
            head = stream.read(_HEAD)
            kind = binary_format(head)
            if kind == "Mach-O":
                self._macho(path, stream, head, real.stat().st_size)
                return
            if kind in ("ELF", "PE"):
                stream.seek(0)
                self._parse(path, head, str(real), stream)
                return
        with real.open("rb") as stream:
            self.consume(path, stream, real.stat().st_size)

    def _macho(self, path: str, stream: BinaryIO, head: bytes, size: int) -> None:
        # Read front to back, never spooled: the load commands are at the front of each slice
        # and the signature at its end (tools/check/macho.py).
        from tools.check.macho import Forward, read_macho

        try:
            self.machos[path] = read_macho(Forward(stream, head), size)
        except ValueError as exc:
            self.binary_errors[path] = ("Mach-O", str(exc))

    def _spool(self, path: str, head: bytes, stream: BinaryIO) -> None:
        # The readers seek; an archive member is a forward-only stream, so it
        # is copied (alone) into the private work directory and removed again.
        fd, spool = tempfile.mkstemp(dir=self.workdir, suffix=".bin")
        try:
            with os.fdopen(fd, "w+b") as out:
                out.write(head)
                shutil.copyfileobj(stream, out, _CHUNK)
                out.flush()
                out.seek(0)
                self._parse(path, head, spool, out)
        finally:
            os.unlink(spool)

    def _parse(self, path: str, head: bytes, real: str, stream: BinaryIO) -> None:
        kind = binary_format(head)
        try:
            if kind == "ELF":
                self.elves[path] = read_elf(stream)
            else:
                from tools.check.pe import read_pe

                self.pes[path] = read_pe(real, stream)
        except ValueError as exc:
            if kind == "ELF":
                self.elf_errors[path] = str(exc)
            else:
                self.binary_errors[path] = (kind, str(exc))

    def binaries(self) -> dict[str, object]:
        """The Package fields of what was read, other than ELF's."""
        return {"machos": self.machos, "pes": self.pes, "binary_errors": self.binary_errors}


def _wants_text(path: str) -> bool:
    # A wheel's METADATA: its Requires-Dist provides libraries (requires_dist.py).
    return path.endswith("TorchConfig.cmake") or bool(_WHEEL_METADATA.fullmatch(path))


# ---------------------------------------------------------------- conda packages


def _load_json(raw: bytes, where: str) -> object:
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise UserError(f"{where}: not valid JSON ({exc})") from exc


def read_conda(path: Path, workdir: Path) -> Package:
    """Stream a .conda or .tar.bz2 package."""
    collector = _Collector(workdir, _wants_text)
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

_WHEEL_METADATA = re.compile(r"[^/]+\.dist-info/METADATA")

_WHEEL_NAME = re.compile(
    r"^(?P<name>[^-]+)-(?P<version>[^-]+)(?:-\d[^-]*)?-[^-]+-[^-]+-(?P<plat>[^-]+)\.whl$"
)


def read_wheel(path: Path, workdir: Path) -> Package:
    """Read an upstream wheel, for comparison with the conda packages."""
    match = _WHEEL_NAME.match(path.name)
    if not match:
        raise UserError(f"{path}: not a wheel file name (name-version-...-platform.whl)")
    collector = _Collector(workdir, _wants_text)
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
    collector = _Collector(workdir, _wants_text)
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


def check_members(packages: Iterable[Package]) -> list[Finding]:
    """Unsafe members (absolute, '..', escaping links) are failures; they were never written.

    In a prefix, the files a package's conda-meta record lists must all be there: a check of
    what is missing would otherwise pass by having nothing to look at.
    """
    findings = []
    for package in packages:
        if package.kind == "prefix":
            if package.analysed:
                findings.append(_prefix_files(package))
            continue
        for name, reason in package.unsafe:
            findings.append(failed("archive.member", member_path(package.label, name), reason))
        if not package.unsafe:
            findings.append(
                passed(
                    "archive.member",
                    package.label,
                    f"{len(package.members)} members, all inside the package",
                )
            )
    return findings


def _prefix_files(package: Package) -> Finding:
    record = f"conda-meta record of {package.name}"
    if package.missing:
        first = ", ".join(package.missing[:3]) + (" ..." if len(package.missing) > 3 else "")
        return failed(
            "prefix.files",
            package.label,
            f"{len(package.missing)} of {len(package.members) + len(package.missing)} files "
            f"the {record} lists are missing ({first}); reinstall {package.name}",
        )
    if not package.members:
        return failed("prefix.files", package.label, f"the {record} lists no files")
    return passed(
        "prefix.files",
        package.label,
        f"all {len(package.members)} files the {record} lists are present",
    )
