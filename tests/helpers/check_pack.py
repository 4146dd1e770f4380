"""Packing a folder into a real .conda (conda-package-handling), and a hostile one, for
tests/e2e/test_check_real_packages.py and tests/e2e/test_check_real_command.py."""

from __future__ import annotations

import hashlib
import json
import shutil
import tarfile
from pathlib import Path

from conda_package_handling import api as cph

VERSION = "2.13.0"
SUFFIX = "h0c0ffee_2"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def pack(
    prefix: Path,
    out_dir: Path,
    index: dict,
    run_exports: dict | None = None,
    placeholders: dict[str, str] | None = None,
) -> Path:
    """Write info/ for the files under ``prefix`` and pack a .conda with conda-package-handling."""
    placeholders = placeholders or {}
    files = sorted(
        p.relative_to(prefix).as_posix()
        for p in prefix.rglob("*")
        if (p.is_file() or p.is_symlink())
        and not p.relative_to(prefix).as_posix().startswith("info/")
    )
    paths = []
    for rel in files:
        real = prefix / rel
        entry = {"_path": rel, "path_type": "softlink" if real.is_symlink() else "hardlink"}
        if not real.is_symlink():
            entry.update(sha256=_sha256(real), size_in_bytes=real.stat().st_size)
        if rel in placeholders:
            entry.update(prefix_placeholder=placeholders[rel], file_mode="text")
        paths.append(entry)
    info = prefix / "info"
    info.mkdir(exist_ok=True)
    index = {
        "arch": "x86_64",
        "platform": "linux",
        "subdir": "linux-64",
        "license": "BSD-3-Clause",
        "timestamp": 1700000000000,
        "version": VERSION,
        "constrains": [],
        **index,
    }
    (info / "index.json").write_text(json.dumps(index, indent=2))
    (info / "paths.json").write_text(json.dumps({"paths": paths, "paths_version": 1}, indent=2))
    (info / "files").write_text("\n".join(files) + "\n")
    if run_exports is not None:
        (info / "run_exports.json").write_text(json.dumps(run_exports))
    info_files = sorted(p.relative_to(prefix).as_posix() for p in info.iterdir())
    stem = f"{index['name']}-{index['version']}-{index['build']}"
    out_dir.mkdir(parents=True, exist_ok=True)
    cph.create(
        str(prefix),
        files + info_files,
        f"{stem}.conda",
        str(out_dir),
        compression_level=1,
        compression_threads=2,
    )
    return out_dir / f"{stem}.conda"


def _link(at: Path, target: str) -> None:
    at.parent.mkdir(parents=True, exist_ok=True)
    if at.exists() or at.is_symlink():
        if at.is_dir() and not at.is_symlink():
            shutil.rmtree(at)
        else:
            at.unlink()
    at.symlink_to(target)


def _pack_hostile(out: Path) -> Path:
    """A .conda whose pkg tarball holds a '..' member, an absolute one and an escaping link."""
    from conda_package_streaming.create import conda_builder

    out.mkdir(parents=True, exist_ok=True)
    stem = f"hostile-1.0-{SUFFIX}"

    def add(tar, name: str, data: bytes = b"", link: str | None = None) -> None:
        info = tarfile.TarInfo(name)
        if link is not None:
            info.type, info.linkname = tarfile.SYMTYPE, link
            tar.addfile(info)
        else:
            info.size = len(data)
            import io

            tar.addfile(info, io.BytesIO(data))

    with conda_builder(stem, out, compression_level=1) as tar:
        add(
            tar,
            "info/index.json",
            json.dumps(
                {
                    "name": "hostile",
                    "version": "1.0",
                    "build": SUFFIX,
                    "build_number": 2,
                    "subdir": "linux-64",
                    "depends": [],
                }
            ).encode(),
        )
        add(tar, "lib/ok.txt", b"harmless\n")
        add(tar, "../escaped-by-dotdot.txt", b"should never be written\n")
        add(tar, "/tmp/absolute-member.txt", b"should never be written\n")
        add(tar, "lib/passwd", link="../../../etc/passwd")
    return out / f"{stem}.conda"
