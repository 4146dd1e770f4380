"""A finished batch as every review command reads it: a build_artifacts/ folder, a delegate's
upload (the packages in their subdir folders beside log_files.zip), or log_files.zip itself.

log_files.zip holds the logs, summary.json and SHA256SUMS.  It is read into a temporary
folder, member by member, and a member that is not a plain file name (an absolute path,
``..``, a folder, a link) is refused before anything is written.  Where a file lies both
loose and in the zip, both are kept: ``review verify`` compares them (a loose summary.json
beside an untouched zip must not silently win), the other commands read the loose one.
"""

from __future__ import annotations

import stat
import tempfile
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tools.foundation.errors import UserError
from tools.localbuild.records import artifacts as art

ZIP = "log_files.zip"
DOCUMENTS = ("summary.json", "SHA256SUMS")
SUMMARY = ("summary.json",)  # what the commands that read records alone need


@dataclass(frozen=True)
class Batch:
    """The files of one batch, wherever each came from."""

    packages_dir: Path  # holds the subdir folders (linux-64/...)
    view: Path  # summary.json, SHA256SUMS and the logs: packages_dir itself, or a folder
    # holding the zip's members with the subdir folders linked in
    loose: Mapping[str, Path]  # name -> the file beside the packages
    zipped: Mapping[str, Path]  # name -> the same name's member of log_files.zip, extracted
    archive: Path | None  # log_files.zip, when there is one

    @property
    def summary(self) -> Path:
        return self.view / "summary.json"

    @property
    def sums(self) -> Path:
        return self.view / "SHA256SUMS"

    @property
    def logs(self) -> Path:
        return self.view


def _safe_member(info: zipfile.ZipInfo, archive: Path) -> str:
    name = info.filename
    mode = info.external_attr >> 16
    plain = name and "/" not in name and "\\" not in name and name not in (".", "..")
    if not plain or ":" in name or stat.S_ISLNK(mode) or info.is_dir():
        raise UserError(
            f"{archive}: member {name!r} is not a plain file name (a path, '..', a folder or "
            "a link); refusing to extract anything from it"
        )
    return name


def _extract(archive: Path, into: Path) -> dict[str, Path]:
    try:
        with zipfile.ZipFile(archive) as zipped:
            members = [(_safe_member(i, archive), i) for i in zipped.infolist()]
            found = {}
            for name, info in members:
                with zipped.open(info) as source, (into / name).open("xb") as target:
                    target.write(source.read())
                found[name] = into / name
            return found
    except (zipfile.BadZipFile, FileExistsError) as exc:
        raise UserError(f"{archive}: not a readable zip ({exc})") from None


def _loose(base: Path) -> dict[str, Path]:
    names = [*(base / n for n in DOCUMENTS), *art.log_files(base)]
    return {p.name: p for p in names if p.is_file()}


def packages_dir(given: Path) -> Path:
    """Where the subdir folders of the batch ``given`` lie: beside its log_files.zip, in the
    folder itself, or in the build_artifacts/ of a checkout."""
    if given.is_file():
        return given.parent
    return given / "build_artifacts" if (given / "build_artifacts").is_dir() else given


@contextmanager
def open_batch(given: Path, *, command: str, needs: tuple[str, ...] = DOCUMENTS) -> Iterator[Batch]:
    """``given`` (a batch folder, a checkout holding build_artifacts/, or log_files.zip) as a
    :class:`Batch` holding ``needs``; the temporary folder lives as long as the ``with``
    block."""
    if not given.is_dir() and not (given.is_file() and given.suffix == ".zip"):
        raise UserError(f"{command} {given}: not a batch folder or its {ZIP}")
    base = packages_dir(given)
    archive = given if given.is_file() else base / ZIP if (base / ZIP).is_file() else None
    loose = _loose(base)
    with tempfile.TemporaryDirectory(prefix="review-") as tmp:
        unpacked = Path(tmp) / "zip"
        unpacked.mkdir()
        zipped = _extract(archive, unpacked) if archive is not None else {}
        _require({**zipped, **loose}, needs, given, command)
        if all(name in loose for name in zipped):
            yield Batch(base, base, loose, zipped, archive)  # the folder is its own view
            return
        view = Path(tmp) / "batch"
        view.mkdir()
        for name, path in {**zipped, **loose}.items():
            (view / name).symlink_to(path.resolve())
        for entry in base.iterdir():
            if entry.is_dir() and art.SUBDIR.match(entry.name):
                (view / entry.name).symlink_to(entry.resolve(), target_is_directory=True)
            elif entry.name.startswith("conda-forge-build-done-"):
                (view / entry.name).symlink_to(entry.resolve())
        yield Batch(base, view, loose, zipped, archive)


def _require(found: Mapping[str, Path], needs: tuple[str, ...], given: Path, command: str) -> None:
    for name in needs:
        if name not in found:
            raise UserError(
                f"{command} {given}: no {name}, neither there nor in {ZIP}; "
                "ask for the whole build_artifacts upload"
            )
