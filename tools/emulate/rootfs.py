"""The emulated Debian root filesystem: built once with debootstrap, then reused.

A finished rootfs carries a stamp file naming its architecture, suite and
Python; a build that did not finish lives under ``<dir>.partial`` and is
discarded by the next build, so a half-built tree is never used.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tools.emulate import mounts
from tools.emulate.arch import Arch
from tools.emulate.host import SBIN_PATH, require_debootstrap
from tools.foundation import log, proc
from tools.foundation.errors import UserError

STAMP = ".emulate-rootfs.json"
DEFAULT_SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
# minbase plus an interpreter that can make venvs (python3-venv brings
# ensurepip's pip wheel).  No ca-certificates: every session copies in the
# host's bundle (which may hold a proxy's CA Debian's lacks) and points
# SSL_CERT_FILE and PIP_CERT at it, and configuring the package under
# emulation costs half a minute.
PACKAGES = ("python3", "python3-venv")


@dataclass(frozen=True)
class Rootfs:
    path: Path
    arch: str
    suite: str
    python: str  # "3.11": what the rootfs's python3 is

    def to_stamp(self) -> str:
        return (
            json.dumps({"arch": self.arch, "suite": self.suite, "python": self.python}, indent=2)
            + "\n"
        )


def default_dir(arch: Arch, suite: str, env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    cache = Path(env.get("XDG_CACHE_HOME") or Path(env.get("HOME", "/root")) / ".cache")
    return cache / "pytorch-feedstock" / "emulate" / f"rootfs-{arch.debian}-{suite}"


def load(path: Path, arch: Arch, suite: str) -> Rootfs | None:
    """The finished rootfs at ``path``, or None when nothing is there yet."""
    if not path.exists() or (path.is_dir() and not any(path.iterdir())):
        return None
    stamp = path / STAMP
    if not stamp.is_file():
        raise UserError(
            f"--rootfs {path}: exists but was not built by emulate (no {STAMP}); "
            "pass an empty or missing directory"
        )
    try:
        data = json.loads(stamp.read_text())
        found = Rootfs(path=path, arch=data["arch"], suite=data["suite"], python=data["python"])
    except (ValueError, KeyError, TypeError):
        raise UserError(f"{stamp}: unreadable; delete {path} to rebuild it") from None
    if (found.arch, found.suite) != (arch.name, suite):
        raise UserError(
            f"--rootfs {path}: holds {found.arch} {found.suite}, not {arch.name} {suite}; "
            "pass another directory"
        )
    return found


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """One emulate run per rootfs at a time: runs share its /proc, /dev and /sys."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = path.with_name(path.name + ".lock")
    with open(lock_path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warn(f"another emulate run is using {path}; waiting for it")
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _discard(path: Path) -> None:
    # Unmount first: removing a tree with a live /proc or /dev mount inside
    # would reach into the host's.
    mounts.sweep(path)
    shutil.rmtree(path)


def build(
    path: Path, arch: Arch, *, suite: str = DEFAULT_SUITE, mirror: str = DEFAULT_MIRROR
) -> Rootfs:
    """debootstrap's first stage on the host, the second under QEMU inside the tree."""
    debootstrap = require_debootstrap()
    partial = path.with_name(path.name + ".partial")
    if partial.exists():
        log.warn(f"discarding {partial}, an unfinished build")
        _discard(partial)
    env = {"PATH": SBIN_PATH, "LANG": "C.UTF-8"}
    try:
        with log.step(f"debootstrap {arch.debian} {suite}, first stage"):
            proc.call(
                debootstrap,
                f"--arch={arch.debian}",
                "--foreign",
                "--variant=minbase",
                "--include=" + ",".join(PACKAGES),
                suite,
                partial,
                mirror,
                env=env,
            )
        with log.step(f"debootstrap {arch.debian} {suite}, second stage (emulated)"):
            proc.call("chroot", partial, "/debootstrap/debootstrap", "--second-stage", env=env)
        python = proc.call(
            "chroot",
            partial,
            "python3",
            "-c",
            "import sys; print('%d.%d' % sys.version_info[:2])",
            env=env,
            capture=True,
        ).stdout.strip()
    finally:
        # debootstrap mounts /proc and /sys inside the tree itself and only
        # undoes that when it exits normally.
        if partial.exists():
            mounts.sweep(partial, left_by="the interrupted debootstrap")
    rootfs = Rootfs(path=path, arch=arch.name, suite=suite, python=python)
    (partial / STAMP).write_text(rootfs.to_stamp())
    partial.rename(path)
    return rootfs


def ensure(
    path: Path, arch: Arch, *, suite: str = DEFAULT_SUITE, mirror: str = DEFAULT_MIRROR
) -> Rootfs:
    found = load(path, arch, suite)
    if found is not None:
        return found
    return build(path, arch, suite=suite, mirror=mirror)
