"""Everything build-locally reads or writes in build_artifacts/.

Files are written to a temporary name and renamed, so an interrupted run never
leaves a half-written summary, checksum list or zip.  Nothing here deletes
outside build_artifacts/; packages are never deleted at all.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from tools.foundation.errors import UserError
from tools.foundation.files import atomic_replace, atomic_write_text, load_json_text, sha256_of

PACKAGE_SUFFIXES = (".conda", ".tar.bz2")
# conda-build's channel layout under its root-dir: one folder per subdir.
SUBDIR = re.compile(r"^(noarch|linux-[a-z0-9]+|osx-[a-z0-9]+|win-[a-z0-9]+)$")
# conda-build's per-build folders: <package>_<milliseconds since the epoch>.
WORK_DIR = re.compile(r"^.+_\d{10,}$")
SUMMARY_VERSION = 1


def marker_path(artifacts: Path, config: str) -> Path:
    return artifacts / f"conda-forge-build-done-{config}"


def log_path(artifacts: Path, config: str) -> Path:
    return artifacts / f"{config}-log.txt"


@dataclass(frozen=True)
class Package:
    path: str  # relative to build_artifacts, e.g. linux-64/libtorch-2.13.0-....conda
    sha256: str
    size: int

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "sha256": self.sha256, "size": self.size}


Snapshot = Mapping[str, tuple[int, int]]


def package_files(artifacts: Path) -> list[Path]:
    if not artifacts.is_dir():
        return []
    found = []
    for subdir in sorted(artifacts.iterdir()):
        if subdir.is_dir() and SUBDIR.match(subdir.name):
            found.extend(
                sorted(
                    p for p in subdir.iterdir() if p.is_file() and p.name.endswith(PACKAGE_SUFFIXES)
                )
            )
    return found


def snapshot(artifacts: Path) -> dict[str, tuple[int, int]]:
    """Size and mtime of every package, to tell which ones a config produced."""
    result = {}
    for path in package_files(artifacts):
        stat = path.stat()
        result[path.relative_to(artifacts).as_posix()] = (stat.st_size, stat.st_mtime_ns)
    return result


def produced(before: Snapshot, after: Snapshot) -> list[str]:
    return sorted(name for name, meta in after.items() if before.get(name) != meta)


def describe_packages(artifacts: Path, names: Iterable[str]) -> tuple[Package, ...]:
    packages = []
    for name in names:
        path = artifacts / name
        if path.is_file():
            packages.append(Package(name, sha256_of(path), path.stat().st_size))
    return tuple(packages)


def write_sha256sums(artifacts: Path) -> Path:
    """``sha256sum -c`` format, paths relative to build_artifacts (``<subdir>/<file>``).

    Every package in the channel folders is listed, including ones built by earlier
    (resumed) runs: that is the set a CFEP-03 copy request names.
    """
    lines = [
        f"{sha256_of(p)}  {p.relative_to(artifacts).as_posix()}\n" for p in package_files(artifacts)
    ]
    target = artifacts / "SHA256SUMS"
    atomic_write_text(target, "".join(lines))
    return target


def log_files(artifacts: Path) -> list[Path]:
    return sorted(p for p in artifacts.glob("*-log.txt") if p.is_file())


def write_log_zip(artifacts: Path) -> Path:
    target = artifacts / "log_files.zip"
    with (
        atomic_replace(target) as tmp,
        zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive,
    ):
        for log in log_files(artifacts):
            archive.write(log, arcname=log.name)
        for extra in ("summary.json", "SHA256SUMS"):
            if (artifacts / extra).is_file():
                archive.write(artifacts / extra, arcname=extra)
    return target


def set_aside_old_log(artifacts: Path, config: str) -> Path | None:
    """Keep the log of an earlier attempt under old-logs/ instead of overwriting it."""
    log = log_path(artifacts, config)
    if not log.exists():
        return None
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(log.stat().st_mtime))
    target = artifacts / "old-logs" / f"{config}-log-{stamp}.txt"
    target.parent.mkdir(exist_ok=True)
    os.replace(log, target)
    return target


def work_dirs(artifacts: Path) -> set[str]:
    if not artifacts.is_dir():
        return set()
    return {p.name for p in artifacts.iterdir() if p.is_dir() and WORK_DIR.match(p.name)}


# meta.yaml's top-level ``package: name:``, when it is spelled out (not a jinja expression).
_PACKAGE_NAME = re.compile(
    r"^package:[ \t]*\n(?:[ \t]+#.*\n)*[ \t]+name:[ \t]*([A-Za-z0-9_.-]+)[ \t]*$", re.MULTILINE
)


def recipe_package_name(recipe_dir: Path) -> str | None:
    """The name conda-build gives this recipe's work folders, or None when it cannot be read."""
    try:
        text = (recipe_dir / "meta.yaml").read_text(encoding="utf-8")
    except OSError:
        return None
    match = _PACKAGE_NAME.search(text)
    return match.group(1) if match else None


def own_work_dirs(names: Iterable[str], package: str, start: float, end: float) -> set[str]:
    """The work folders of this recipe's conda-build that started between ``start`` and ``end``.

    conda-build names each build's folder ``<package>_<millisecond it started>``, so a folder
    that merely appeared while a config built (another recipe's conda-build sharing
    build_artifacts/) is told apart from the config's own by its name, not by when it showed up.
    """
    owned = set()
    for name in names:
        head, _, stamp = name.rpartition("_")
        if WORK_DIR.match(name) and head == package and start <= int(stamp) / 1000 <= end:
            owned.add(name)
    return owned


def remove_work_dirs(artifacts: Path, names: Iterable[str]) -> list[str]:
    """Delete conda-build work folders by name; only direct children of build_artifacts."""
    removed = []
    for name in sorted(names):
        path = artifacts / name
        if (
            WORK_DIR.match(name)
            and path.parent == artifacts
            and path.is_dir()
            and not path.is_symlink()
        ):
            shutil.rmtree(path)
            removed.append(name)
    return removed


def read_summary(artifacts: Path) -> dict[str, dict[str, object]]:
    """Per-config records from an earlier summary.json, or {} when there is none or it is
    unreadable."""
    try:
        data = json.loads((artifacts / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    configs = data.get("configs") if isinstance(data, dict) else None
    return (
        {k: v for k, v in configs.items() if isinstance(v, dict)}
        if isinstance(configs, dict)
        else {}
    )


def load_summary(path: Path, *, named: str, hint: str) -> dict[str, object]:
    """A summary.json the user handed us: its document, or one line naming ``named``.

    ``read_summary`` is the lenient reader for our own earlier run; this one is for files a
    user points at (``review merge``, ``--durations``), where a bad file is their mistake to fix.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{named}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{named}: not UTF-8 text (byte {exc.start}); {hint}") from None
    document = load_json_text(text, named, hint=hint)
    configs = document.get("configs") if isinstance(document, dict) else None
    if not isinstance(configs, dict):
        raise UserError(f'{named}: no "configs" mapping; {hint}')
    return document


def write_summary(artifacts: Path, document: Mapping[str, object]) -> Path:
    target = artifacts / "summary.json"
    atomic_write_text(target, json.dumps(document, indent=2, sort_keys=False) + "\n")
    return target


def summary_document(
    *,
    feedstock: str,
    started: str,
    finished: str,
    this_run: Iterable[str],
    configs: Mapping[str, Mapping[str, object]],
) -> dict[str, object]:
    """summary.json's shape, the same for a local batch and for a merge of several machines."""
    return {
        "version": SUMMARY_VERSION,
        "feedstock": feedstock,
        "started": started,
        "finished": finished,
        "this_run": list(this_run),
        "configs": dict(configs),
    }


@dataclass(frozen=True)
class BatchFiles:
    summary: Path
    sha256sums: Path
    log_zip: Path


def write_batch_files(artifacts: Path, document: Mapping[str, object]) -> BatchFiles:
    """summary.json, then SHA256SUMS over every package, then log_files.zip holding both.

    A local batch and ``review merge`` both end here, so their files cannot drift apart.
    """
    summary = write_summary(artifacts, document)
    sums = write_sha256sums(artifacts)
    return BatchFiles(summary, sums, write_log_zip(artifacts))
