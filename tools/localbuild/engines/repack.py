"""The embedded engine's packages made reproducible: a repack after rattler-build.

Two builds of one config at one commit, in the same work root (workroot.py), give the same
payload; what still differs is what rattler-build takes from the clock or from a hash map:
every archive member's mtime (the build's start; py-rattler-build ignores SOURCE_DATE_EPOCH),
index.json's ``timestamp`` and the order of its ``depends``, rendered_recipe.yaml's
``timestamp``. The repack rewrites exactly those, keeping every other byte's meaning:

- members in the engine's order, each with the one time ``epoch`` (the commit's), uid/gid 0
  and empty owner names, in GNU tar format;
- each inner tar compressed as one zstd frame without checksum at the engine's level (as
  rattler-build writes them; ``zstd -16 --no-check`` reproduces its ``pkg-*.tar.zst``);
- the .conda zip stored, 0644, made on Unix (create_system 3), at ``epoch``;
- index.json with ``timestamp`` = ``epoch`` in milliseconds and sorted depends/constrains;
- rendered_recipe.yaml's build ``timestamp`` = ``epoch``;
- ``restore``: info/ members given back their text (the recipe as committed, where the
  engine built from a staged copy pointing at the local source archive) and ``replace``:
  strings replaced in info/recipe/ (that archive's ``file://`` URL by the recipe's own URL),
  so no path of the builder's machine is left in info/.

paths.json hashes the payload only, so rewriting info/ members keeps the package valid.
"""

from __future__ import annotations

import datetime
import io
import json
import os
import re
import shutil
import tarfile
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from tools.files import atomic_replace

INDEX = "info/index.json"
RENDERED = "info/recipe/rendered_recipe.yaml"
#: rattler-build's default level for .conda (`--package-format conda`), and bzip2's for .tar.bz2.
DEFAULT_ZSTD_LEVEL = 16
_CHUNK = 1 << 20
#: The build timestamp rattler-build writes under build_configuration (RFC 3339, nanoseconds).
_RENDERED_TIMESTAMP = re.compile(rb"^(  timestamp: )\d{4}-\d\d-\d\dT\S+$", re.M)


def iso(epoch: int) -> str:
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )


def normalised_index(data: bytes, epoch: int) -> bytes:
    """index.json at ``epoch`` with its depends and constrains sorted (the engine lists them
    in a hash map's order: libblas/liblapack/libcblas came in 4 orders over 6 builds)."""
    index = json.loads(data)
    index["timestamp"] = epoch * 1000
    for key in ("depends", "constrains"):
        if isinstance(index.get(key), list):
            index[key] = sorted(index[key])
    return (json.dumps(index, indent=2, sort_keys=True) + "\n").encode()


def normalised_rendered(data: bytes, epoch: int) -> bytes:
    """rendered_recipe.yaml with the build's time at ``epoch`` and, in the order of the
    engine's hash maps, the run requirements (and run exports) of each dependency section and
    the library-to-package map sorted. Read and written round trip, so nothing else moves."""
    from ruamel.yaml import YAML

    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 1 << 20  # never fold a long line
    yaml.indent(mapping=2, sequence=2, offset=0)  # rattler-build's own layout
    yaml.representer.add_representer(
        type(None), lambda r, _: r.represent_scalar("tag:yaml.org,2002:null", "null")
    )
    data = _RENDERED_TIMESTAMP.sub(lambda m: m.group(1) + iso(epoch).encode(), data)
    document = yaml.load(data.decode())
    if not isinstance(document, dict):
        return data
    for section in ("finalized_dependencies", "finalized_cache_dependencies"):
        run = (document.get(section) or {}).get("run")
        if isinstance(run, dict):
            _sort_lists(run)
    names = (document.get("staging_library_name_map") or {}).get("library_to_package")
    if isinstance(names, dict):
        for key in sorted(names):
            names.move_to_end(key)
    out = io.StringIO()
    yaml.dump(document, out)
    return out.getvalue().encode()


def _sort_lists(node: dict) -> None:
    for value in node.values():
        if isinstance(value, list):
            value.sort(key=lambda item: json.dumps(item, sort_keys=True, default=str))
        elif isinstance(value, dict):
            _sort_lists(value)


def _member_bytes(
    name: str,
    data: bytes,
    epoch: int,
    restore: Mapping[str, bytes],
    replace: Sequence[tuple[str, str]],
) -> bytes:
    if name in restore:
        data = restore[name]
    elif name.startswith("info/recipe/"):
        for old, new in replace:
            data = data.replace(old.encode(), new.encode())
    if name == INDEX:
        return normalised_index(data, epoch)
    if name == RENDERED:
        return normalised_rendered(data, epoch)
    return data


def _normalised_tar(
    source: tarfile.TarFile,
    out: io.BufferedIOBase,
    epoch: int,
    restore: Mapping[str, bytes],
    replace: Sequence[tuple[str, str]],
) -> None:
    """``source``'s members, in its order, written to ``out`` normalised (module docstring)."""
    with tarfile.open(fileobj=out, mode="w|", format=tarfile.GNU_FORMAT) as target:
        for member in source:
            info = tarfile.TarInfo(member.name)
            info.type, info.mode, info.linkname = member.type, member.mode, member.linkname
            info.mtime, info.uid, info.gid, info.uname, info.gname = epoch, 0, 0, "", ""
            if not member.isfile():
                target.addfile(info)
                continue
            stream = source.extractfile(member)
            assert stream is not None  # a regular file always has a stream
            rewrites = member.name in (INDEX, RENDERED) or member.name in restore
            if rewrites or (replace and member.name.startswith("info/recipe/")):
                data = _member_bytes(member.name, stream.read(), epoch, restore, replace)
                info.size = len(data)
                target.addfile(info, io.BytesIO(data))
            else:
                info.size = member.size
                target.addfile(info, stream)


def _compress(tar: Path, out: Path, level: int) -> None:
    """``tar`` as one zstd frame without checksum. Workers >= 1 always: zstd's multi-threaded
    output does not depend on how many there are, so two machines agree."""
    from backports.zstd import CompressionParameter, ZstdCompressor

    options = {
        CompressionParameter.compression_level: level,
        CompressionParameter.checksum_flag: 0,
        CompressionParameter.nb_workers: max(1, min(os.cpu_count() or 1, 8)),
    }
    compressor = ZstdCompressor(options=options)
    with tar.open("rb") as source, out.open("wb") as target:
        while chunk := source.read(_CHUNK):
            target.write(compressor.compress(chunk))
        target.write(compressor.flush())


def _zip_time(epoch: int) -> tuple[int, int, int, int, int, int]:
    stamp = datetime.datetime.fromtimestamp(max(epoch, 315532800), datetime.timezone.utc)
    return stamp.timetuple()[:6]  # a zip cannot hold a time before 1980


def _repack_conda(
    package: Path,
    target: Path,
    scratch: Path,
    epoch: int,
    level: int,
    restore: Mapping[str, bytes],
    replace: Sequence[tuple[str, str]],
) -> None:
    from backports.zstd import ZstdFile

    with zipfile.ZipFile(package) as source, zipfile.ZipFile(target, "w") as out:
        for member in source.infolist():
            info = zipfile.ZipInfo(member.filename, date_time=_zip_time(epoch))
            info.compress_type = zipfile.ZIP_STORED
            info.create_system = 3
            info.external_attr = 0o100644 << 16
            if not member.filename.endswith(".tar.zst"):
                out.writestr(info, source.read(member))
                continue
            tar, packed = scratch / "member.tar", scratch / "member.tar.zst"
            with (
                source.open(member) as raw,
                ZstdFile(raw) as plain,
                tar.open("wb") as tar_out,
                tarfile.open(fileobj=plain, mode="r|") as inner,
            ):
                _normalised_tar(inner, tar_out, epoch, restore, replace)
            _compress(tar, packed, level)
            size = packed.stat().st_size
            with packed.open("rb") as data, out.open(info, "w", force_zip64=size > 1 << 31) as dst:
                shutil.copyfileobj(data, dst, _CHUNK)


def _repack_bz2(
    package: Path,
    target: Path,
    scratch: Path,
    epoch: int,
    restore: Mapping[str, bytes],
    replace: Sequence[tuple[str, str]],
) -> None:
    import bz2

    tar = scratch / "package.tar"
    with tarfile.open(package, "r|bz2") as inner, tar.open("wb") as tar_out:
        _normalised_tar(inner, tar_out, epoch, restore, replace)
    compressor = bz2.BZ2Compressor(9)
    with tar.open("rb") as source, target.open("wb") as out:
        while chunk := source.read(_CHUNK):
            out.write(compressor.compress(chunk))
        out.write(compressor.flush())


def repack(
    package: Path,
    *,
    epoch: int,
    level: int = DEFAULT_ZSTD_LEVEL,
    restore: Mapping[str, bytes] | None = None,
    replace: Sequence[tuple[str, str]] = (),
) -> None:
    """Rewrite ``package`` (.conda or .tar.bz2) in place, normalised (module docstring); the
    new file replaces the old in one rename."""
    restore = restore or {}
    with (
        tempfile.TemporaryDirectory(prefix="repack-", dir=package.parent) as scratch,
        atomic_replace(package) as partial,
    ):
        if package.name.endswith(".conda"):
            _repack_conda(package, partial, Path(scratch), epoch, level, restore, replace)
        elif package.name.endswith(".tar.bz2"):
            _repack_bz2(package, partial, Path(scratch), epoch, restore, replace)
        else:
            raise ValueError(f"{package}: not a .conda or .tar.bz2 package")


def zstd_level(package_format: str | None) -> int:
    """The level in rattler-build's ``--package-format conda:N`` (its default without one)."""
    _, _, level = (package_format or "").partition(":")
    return int(level) if level.isdigit() else DEFAULT_ZSTD_LEVEL
