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
  strings replaced in info/recipe/ (that archive's ``file://`` URL by the recipe's own URL;
  the ``file://`` URLs of the staged folder channels and of the work root, where the
  resolved packages came from, by the labels of engines/workroot.py, the sha256 and md5
  beside each still pinning it), so no path of the builder's machine is left in info/.

paths.json hashes the payload only, so rewriting info/ members keeps the package valid.
"""

from __future__ import annotations

import datetime
import hashlib
import io
import json
import os
import re
import shutil
import tarfile
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tools.foundation.files import atomic_replace

INDEX = "info/index.json"
RENDERED = "info/recipe/rendered_recipe.yaml"
#: rattler-build's default level for .conda (`--package-format conda`), and bzip2's for .tar.bz2.
DEFAULT_ZSTD_LEVEL = 16
_CHUNK = 1 << 20
#: The build timestamp rattler-build writes under build_configuration (RFC 3339, nanoseconds).
_RENDERED_TIMESTAMP = re.compile(rb"^(  timestamp: )\d{4}-\d\d-\d\dT\S+$", re.M)


@dataclass(frozen=True)
class Rewrites:
    """What the repack changes besides times and owners (module docstring); ``siblings``:
    the final records (md5, sha256, size, timestamp) of the packages built with this one, by
    file name, for the records of them that rendered_recipe.yaml holds."""

    epoch: int
    restore: Mapping[str, bytes] = field(default_factory=dict)
    replace: Sequence[tuple[str, str]] = ()
    siblings: Mapping[str, Mapping[str, object]] = field(default_factory=dict)


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


def normalised_rendered(
    data: bytes, epoch: int, siblings: Mapping[str, Mapping[str, object]] | None = None
) -> bytes:
    """rendered_recipe.yaml with the build's time at ``epoch``; in the order of the engine's
    hash maps, the run requirements (and run exports) of each dependency section and the
    library-to-package map sorted; and the records of packages of the same build (a pytorch
    output's host environment holds libtorch) given their repacked facts (``siblings``), as
    rattler-build recorded them before the repack. Read and written round trip, so nothing
    else moves."""
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
        # The solver lists an environment's packages in an order of its own that can change
        # between two solves of the same packages (numpy before or after python): a record of
        # what resolved, kept in file-name order.
        for env in ("build", "host"):
            resolved = ((document.get(section) or {}).get(env) or {}).get("resolved")
            if isinstance(resolved, list):
                resolved[:] = sorted(resolved, key=_record_key)
    _update_siblings(document, siblings or {})
    names = (document.get("staging_library_name_map") or {}).get("library_to_package")
    if isinstance(names, dict):
        for key in sorted(names):
            names.move_to_end(key)
    out = io.StringIO()
    yaml.dump(document, out)
    return out.getvalue().encode()


def _record_key(record: object) -> tuple[str, str]:
    if isinstance(record, dict):
        return str(record.get("name", "")), str(record.get("fn", ""))
    return "", json.dumps(record, sort_keys=True, default=str)


def _update_siblings(node: object, siblings: Mapping[str, Mapping[str, object]]) -> None:
    if isinstance(node, list):
        for item in node:
            _update_siblings(item, siblings)
    elif isinstance(node, dict):
        if node.get("fn") in siblings:
            node.update(siblings[node["fn"]])
            for key in ("depends", "constrains"):
                if isinstance(node.get(key), list):
                    node[key][:] = sorted(node[key])
        for value in node.values():
            _update_siblings(value, siblings)


def _sort_lists(node: dict) -> None:
    for value in node.values():
        if isinstance(value, list):
            # Items move, comments (a trailing blank line) stay at their places.
            value[:] = sorted(value, key=lambda item: json.dumps(item, sort_keys=True, default=str))
        elif isinstance(value, dict):
            _sort_lists(value)


def _member_bytes(name: str, data: bytes, rewrites: Rewrites) -> bytes:
    if name in rewrites.restore:
        data = rewrites.restore[name]
    elif name.startswith("info/recipe/"):
        for old, new in rewrites.replace:
            data = data.replace(old.encode(), new.encode())
    if name == INDEX:
        return normalised_index(data, rewrites.epoch)
    if name == RENDERED:
        return normalised_rendered(data, rewrites.epoch, rewrites.siblings)
    return data


def _normalised_tar(source: tarfile.TarFile, out: io.BufferedIOBase, rewrites: Rewrites) -> None:
    """``source``'s members, in its order, written to ``out`` normalised (module docstring)."""
    with tarfile.open(fileobj=out, mode="w|", format=tarfile.GNU_FORMAT) as target:
        for member in source:
            info = tarfile.TarInfo(member.name)
            info.type, info.mode, info.linkname = member.type, member.mode, member.linkname
            info.mtime, info.uid, info.gid, info.uname, info.gname = rewrites.epoch, 0, 0, "", ""
            if not member.isfile():
                target.addfile(info)
                continue
            stream = source.extractfile(member)
            assert stream is not None  # a regular file always has a stream
            changed = member.name in (INDEX, RENDERED) or member.name in rewrites.restore
            if changed or (rewrites.replace and member.name.startswith("info/recipe/")):
                data = _member_bytes(member.name, stream.read(), rewrites)
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
    package: Path, target: Path, scratch: Path, level: int, rewrites: Rewrites
) -> None:
    from backports.zstd import ZstdFile

    with zipfile.ZipFile(package) as source, zipfile.ZipFile(target, "w") as out:
        for member in source.infolist():
            info = zipfile.ZipInfo(member.filename, date_time=_zip_time(rewrites.epoch))
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
                _normalised_tar(inner, tar_out, rewrites)
            _compress(tar, packed, level)
            size = packed.stat().st_size
            with packed.open("rb") as data, out.open(info, "w", force_zip64=size > 1 << 31) as dst:
                shutil.copyfileobj(data, dst, _CHUNK)


def _repack_bz2(package: Path, target: Path, scratch: Path, rewrites: Rewrites) -> None:
    import bz2

    tar = scratch / "package.tar"
    with tarfile.open(package, "r|bz2") as inner, tar.open("wb") as tar_out:
        _normalised_tar(inner, tar_out, rewrites)
    compressor = bz2.BZ2Compressor(9)
    with tar.open("rb") as source, target.open("wb") as out:
        while chunk := source.read(_CHUNK):
            out.write(compressor.compress(chunk))
        out.write(compressor.flush())


def repack(package: Path, rewrites: Rewrites, level: int = DEFAULT_ZSTD_LEVEL) -> None:
    """Rewrite ``package`` (.conda or .tar.bz2) in place, normalised (module docstring); the
    new file replaces the old in one rename."""
    with (
        tempfile.TemporaryDirectory(prefix="repack-", dir=package.parent) as scratch,
        atomic_replace(package) as partial,
    ):
        if package.name.endswith(".conda"):
            _repack_conda(package, partial, Path(scratch), level, rewrites)
        elif package.name.endswith(".tar.bz2"):
            _repack_bz2(package, partial, Path(scratch), rewrites)
        else:
            raise ValueError(f"{package}: not a .conda or .tar.bz2 package")


def repack_all(packages: Sequence[Path], rewrites: Rewrites, level: int) -> None:
    """Every package of one build repacked, each after the packages its rendered recipe
    records (its build and host environments hold them), so their records carry the
    repacked facts."""
    pending = {p.name: p for p in packages}
    needs = {name: _recorded(path, set(pending) - {name}) for name, path in pending.items()}
    done: dict[str, Mapping[str, object]] = {}
    while pending:
        ready = [n for n in sorted(pending) if needs[n] <= set(done)] or sorted(pending)[:1]
        for name in ready:
            package = pending.pop(name)
            repack(package, Rewrites(**{**rewrites.__dict__, "siblings": dict(done)}), level)
            done[name] = _facts(package, rewrites.epoch)


def _recorded(package: Path, names: set[str]) -> set[str]:
    """Which of ``names`` the package's rendered_recipe.yaml records."""
    from conda_package_streaming.package_streaming import CondaComponent, stream_conda_component

    with package.open("rb") as stream:
        for tar, member in stream_conda_component(package.name, stream, CondaComponent.info):
            if member.name == RENDERED:
                text = tar.extractfile(member).read().decode(errors="replace")
                return {n for n in names if f"fn: {n}" in text}
    return set()


def _facts(package: Path, epoch: int) -> dict[str, object]:
    data = package.read_bytes()
    return {
        "md5": hashlib.md5(data).hexdigest(),
        "sha256": hashlib.sha256(data).hexdigest(),
        "size": len(data),
        "timestamp": epoch * 1000,
    }


def zstd_level(package_format: str | None) -> int:
    """The level in rattler-build's ``--package-format conda:N`` (its default without one)."""
    _, _, level = (package_format or "").partition(":")
    return int(level) if level.isdigit() else DEFAULT_ZSTD_LEVEL
