"""What the machine must provide before anything foreign can run.

Every check names the fix in one line: root, the Debian packages
qemu-user-static and debootstrap, and binfmt_misc with QEMU registered.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tools.emulate.arch import Arch
from tools.foundation import proc
from tools.foundation.errors import CommandError, ToolError

BINFMT_MISC = Path("/proc/sys/fs/binfmt_misc")
# Where Debian's qemu-user-static ships one ready-made registration line per
# architecture (the format of /proc/sys/fs/binfmt_misc/register).
BINFMT_D = Path("/usr/lib/binfmt.d")
# debootstrap and chroot live in sbin, which a non-login root shell may lack.
SBIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class HostError(ToolError):
    """The machine cannot emulate yet; the message says what to install or do."""


@dataclass(frozen=True)
class BinfmtEntry:
    enabled: bool
    interpreter: str
    flags: str

    @property
    def fixes_binary(self) -> bool:
        # F: the kernel opens the interpreter at registration, so it works
        # inside a chroot that has no QEMU of its own.
        return "F" in self.flags


def parse_binfmt_entry(text: str) -> BinfmtEntry:
    """Read /proc/sys/fs/binfmt_misc/<name>."""
    enabled = False
    interpreter = flags = ""
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if line.strip() == "enabled":
            enabled = True
        elif key == "interpreter":
            interpreter = value.strip()
        elif key == "flags:":
            flags = value.strip()
    return BinfmtEntry(enabled=enabled, interpreter=interpreter, flags=flags)


def require_root(euid: int | None = None) -> None:
    if (os.geteuid() if euid is None else euid) != 0:
        raise HostError(
            "emulate needs root (it mounts, chroots and registers QEMU with binfmt_misc); "
            "run it with sudo"
        )


def qemu_registration(arch: Arch, binfmt_d: Path = BINFMT_D) -> str:
    """The register line Debian's qemu-user-static ships for ``arch``."""
    conf = binfmt_d / f"{arch.qemu}.conf"
    missing = f"{arch.qemu}-static is not installed; apt-get install qemu-user-static"
    if not conf.is_file():
        raise HostError(f"{missing} (no {conf})")
    line = next((ln.strip() for ln in conf.read_text().splitlines() if ln.startswith(":")), "")
    fields = line.split(":")
    if len(fields) < 8:
        raise HostError(f"{conf}: not a binfmt_misc registration line; reinstall qemu-user-static")
    if not Path(fields[6]).exists():
        raise HostError(f"{missing} ({fields[6]} is absent)")
    return line


def require_debootstrap(path: str = SBIN_PATH) -> str:
    found = shutil.which("debootstrap", path=path)
    if found is None:
        raise HostError("debootstrap is not installed; apt-get install debootstrap")
    return found


def _mount_binfmt_misc(target: Path) -> None:
    proc.call(
        "mount", "-t", "binfmt_misc", "binfmt_misc", target, capture=True, env={"PATH": SBIN_PATH}
    )


def ensure_binfmt(
    arch: Arch,
    *,
    binfmt_misc: Path = BINFMT_MISC,
    binfmt_d: Path = BINFMT_D,
    mount: Callable[[Path], None] = _mount_binfmt_misc,
) -> BinfmtEntry:
    """Mount binfmt_misc if needed and register QEMU for ``arch`` unless already there.

    Both stay in place afterwards, as systemd-binfmt or update-binfmts would
    leave them: they are machine configuration, not part of one run.
    """
    registration = qemu_registration(arch, binfmt_d)
    register = binfmt_misc / "register"
    if not register.exists():
        try:
            mount(binfmt_misc)
        except CommandError as exc:
            raise HostError(
                f"cannot mount binfmt_misc on {binfmt_misc} ({exc}); the kernel needs "
                "binfmt_misc support, and a container must run privileged"
            ) from None
        if not register.exists():
            raise HostError(
                f"mounted binfmt_misc but {register} is absent; is {binfmt_misc} "
                "really binfmt_misc?"
            )
    entry_path = binfmt_misc / arch.qemu
    if not entry_path.exists():
        try:
            register.write_text(registration + "\n")
        except OSError as exc:
            raise HostError(f"cannot register {arch.qemu} in {register}: {exc.strerror}") from None
    entry = parse_binfmt_entry(entry_path.read_text())
    if not entry.fixes_binary:
        raise HostError(
            f"{entry_path} is registered without the F flag, so QEMU is not found inside a "
            f"chroot; remove it (echo -1 > {entry_path}) and run emulate again"
        )
    if not entry.enabled:
        entry_path.write_text("1\n")
        entry = parse_binfmt_entry(entry_path.read_text())
    return entry
