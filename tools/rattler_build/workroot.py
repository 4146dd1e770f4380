"""The one folder the embedded engine builds in, whatever folder the clone is in.

rattler-build puts its work folders, host prefix and build prefix under its output folder,
and the absolute path of each ends up in the payload: in the GNU build-id of every ELF file
(and ``.dynstr``, sized by the path before the RPATH became ``$ORIGIN``), in the ``.pyc``
files (their path is the padded host prefix, which is not listed for prefix replacement)
and so in RECORD. Two clones at different paths therefore built different packages. The
container builds at fixed paths (/home/conda/feedstock_root); the embedded engine builds in
:data:`WORK_ROOT`, the same path on every machine of one OS, and hands the packages to the
output folder afterwards (rattler-build resolves a symlink to its real path, so a link
would not do). A lock beside it keeps two builds from sharing it: the second waits.

The folder is the engine's alone: it is emptied before each build and after a successful
one; the work folders a user asked to keep (``--keep-build``: ``bld/`` and the staging
output's ``build_cache/``) move to the output folder, and a failed build's stay where they
are until the next build (moving tens of GB across file systems to show a log would not do).
It is under /var/tmp, which is on disk (a /tmp of tmpfs would hold a PyTorch build in RAM).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

#: Short, and fixed per OS (a per-user or $TMPDIR path would differ between machines).
WORK_ROOT = Path("C:/" if os.name == "nt" else "/var/tmp") / "pytorch-feedstock-build"
PACKAGE_SUFFIXES = (".conda", ".tar.bz2")
#: The work folders ``--keep-build`` keeps: every output's, and the staging output's.
KEPT = ("bld", "build_cache")
#: A folder channel (``-c``) is staged as WORK_ROOT/channel-N (N: its place among the
#: channels), so its URL, which rattler-build counts in the package hash (channel_sources)
#: and records in rendered_recipe.yaml, is the same on every machine wherever the folder is.
STAGED_CHANNEL = "channel-"
#: What the repack writes in info/recipe/ for that staged folder's URL: the URL of a package
#: from it reads ``local-channel-N/SUBDIR/FILE`` (its sha256 and md5 beside it pin it), with
#: no path of the builder's machine; review/rebuild.py reads it back.
CHANNEL_LABEL = "local-channel-"
#: And for the work root's own URL, the channel of the packages built before this one (a
#: pytorch output's host environment holds the libtorch just built): ``local-output/``.
OUTPUT_LABEL = "local-output/"


@contextlib.contextmanager
def _locked(lock: Path, say: Callable[[str], None]) -> Iterator[None]:
    if sys.platform == "win32":
        import msvcrt

        with lock.open("a+b") as handle:
            msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)  # retries, then raises
            try:
                yield
            finally:
                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
        return
    import fcntl

    with lock.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"waiting for another build to finish with {lock.with_suffix('')}")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def held(root: Path = WORK_ROOT, say: Callable[[str], None] = print) -> Iterator[Path]:
    """``root``, empty and this build's alone until the block ends (the caller clears it
    after a success: :func:`clear`)."""
    root.parent.mkdir(parents=True, exist_ok=True)
    with _locked(root.with_name(root.name + ".lock"), say):
        clear(root)
        root.mkdir()
        yield root


def clear(root: Path) -> None:
    if root.is_symlink() or root.is_file():
        root.unlink()
    elif root.exists():
        shutil.rmtree(root)


def stage_channel(folder: Path, root: Path, place: int) -> Path:
    """``folder``'s subdir folders (packages and repodata.json) hard-linked, or copied across
    file systems, into ``root``/channel-``place``; the user's folder is only read."""
    staged = root / f"{STAGED_CHANNEL}{place}"
    for item in folder.glob("*/*"):
        if item.is_file() and (
            item.name.endswith(PACKAGE_SUFFIXES) or item.name.startswith("repodata")
        ):
            target = staged / item.parent.name / item.name
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(item, target)
            except OSError:  # another file system
                shutil.copy2(item, target)
    (staged / "noarch").mkdir(parents=True, exist_ok=True)
    return staged


def built_packages(root: Path) -> list[Path]:
    """The packages in ``root``'s subdir folders (linux-64/, noarch/), as rattler-build wrote
    them."""
    return sorted(p for p in root.glob("*/*") if p.name.endswith(PACKAGE_SUFFIXES))


def _move(source: Path, target: Path) -> None:
    """``source`` to ``target``, replacing a file there or merging into a folder there."""
    if source.is_dir() and not source.is_symlink() and target.is_dir():
        for child in source.iterdir():
            _move(child, target / child.name)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    shutil.move(str(source), str(target))


def deliver(root: Path, output: Path, *, keep_build: bool) -> list[Path]:
    """The packages of ``root`` (and with ``keep_build`` its work folders) moved into
    ``output``, whose subdir folders are indexed as rattler-build indexed its output folder (a
    channel of the packages); rattler-build's log of its folders appended to ``output``'s.
    Returns the packages' new paths."""
    delivered = []
    for package in built_packages(root):
        target = output / package.parent.name / package.name
        _move(package, target)
        delivered.append(target)
    log = root / "rattler-build-log.txt"
    if log.is_file():
        with (output / log.name).open("a") as appended:
            appended.write(log.read_text())
    for name in KEPT if keep_build else ():
        if (root / name).exists():
            _move(root / name, output / name)
    if delivered:
        import asyncio

        from rattler.index import index_fs

        (output / "noarch").mkdir(parents=True, exist_ok=True)
        asyncio.run(index_fs(output))
    return delivered
