"""The records the checks read: a package (conda, wheel or installed prefix) and its members,
with what its binaries' readers found; and the rules a member must follow to be read at all.

tools/check/readers/packages.py fills them in, streaming each archive.
"""

from __future__ import annotations

import posixpath
import re
import tarfile
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from tools.check.formats import BinaryFormat
from tools.check.readers.elf import ElfInfo

if TYPE_CHECKING:  # their readers' libraries are imported only when such a file is met
    from tools.check.readers.macho import MachOInfo
    from tools.check.readers.pe import PeInfo


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
    # Mach-O (macOS) and PE (Windows) files: tools/check/readers/macho.py, tools/check/readers/pe.py
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
