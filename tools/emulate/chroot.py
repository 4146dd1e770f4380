"""A chroot session: the rootfs with /proc, a private /dev, a minimal /sys, DNS and CAs.

Nothing of the host's /dev or /sys is bound in.  /dev is a fresh tmpfs with
the handful of nodes programs expect, so no mount can propagate back to the
host.  /sys holds only the CPU lists: PyTorch's cpuinfo reads the host's CPU
cache files when /sys is the real one and crashes under QEMU; with
possible/present/online alone it falls back to defaults.
"""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from tools.emulate import mounts
from tools.emulate.host import SBIN_PATH, HostError
from tools.emulate.rootfs import Rootfs
from tools.foundation import proc
from tools.foundation.files import atomic_write_text

HOST_CPU_LISTS = Path("/sys/devices/system/cpu")
CPU_LIST_FILES = ("possible", "present", "online")
CA_BUNDLE_CANDIDATES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt")
# Where the host's CA bundle is copied, as the chroot sees it.
CA_BUNDLE = PurePosixPath("/etc/ssl/certs/emulate-host-ca.pem")
PROXY_VARS = ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")

# (name, major, minor) of the character devices a test may open.
DEVICES = (
    ("null", 1, 3),
    ("zero", 1, 5),
    ("full", 1, 7),
    ("random", 1, 8),
    ("urandom", 1, 9),
    ("tty", 5, 0),
)
DEVICE_LINKS = (
    ("fd", "/proc/self/fd"),
    ("stdin", "/proc/self/fd/0"),
    ("stdout", "/proc/self/fd/1"),
    ("stderr", "/proc/self/fd/2"),
)


def host_ca_bundle(env: Mapping[str, str]) -> Path:
    """The CA bundle the host's own pip trusts (PIP_CERT and friends first)."""
    for name in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
        if env.get(name) and Path(env[name]).is_file():
            return Path(env[name])
    for candidate in CA_BUNDLE_CANDIDATES:
        if Path(candidate).is_file():
            return Path(candidate)
    raise HostError(
        "no CA bundle on this machine for pip inside the chroot; "
        "apt-get install ca-certificates or set PIP_CERT"
    )


def base_env(path: Sequence[str] = (), host_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """A clean environment for the chroot: nothing of the host's leaks in but proxies."""
    host_env = os.environ if host_env is None else host_env
    env = {
        "PATH": ":".join([*path, SBIN_PATH]),
        "HOME": "/root",
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp",
        "SSL_CERT_FILE": str(CA_BUNDLE),
    }
    env.update({name: host_env[name] for name in PROXY_VARS if host_env.get(name)})
    return env


def _populate_dev(dev: Path) -> None:
    for name, major, minor in DEVICES:
        os.mknod(dev / name, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
        os.chmod(dev / name, 0o666)  # mknod honours the umask
    for name, target in DEVICE_LINKS:
        (dev / name).symlink_to(target)
    for name in ("shm", "pts"):
        (dev / name).mkdir()
    os.chmod(dev / "shm", 0o1777)


def _populate_sys(sys_dir: Path, host_cpu: Path = HOST_CPU_LISTS) -> None:
    cpu = sys_dir / "devices" / "system" / "cpu"
    cpu.mkdir(parents=True)
    fallback = f"0-{max((os.cpu_count() or 1) - 1, 0)}\n"
    for name in CPU_LIST_FILES:
        source = host_cpu / name
        (cpu / name).write_text(source.read_text() if source.is_file() else fallback)


@dataclass(frozen=True)
class Chroot:
    rootfs: Rootfs
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return self.rootfs.path

    def host_path(self, inside: PurePosixPath | str) -> Path:
        """Where a path inside the chroot lies on the host."""
        return self.root / PurePosixPath(inside).relative_to("/")

    def run(
        self,
        *argv: str | PurePosixPath,
        env: Mapping[str, str] | None = None,
        capture: bool = False,
        check: bool = True,
        timeout: float | None = None,
    ) -> subprocess.CompletedProcess[str]:
        return proc.call(
            "chroot",
            self.root,
            *argv,
            env={**self.env, **(env or {})},
            capture=capture,
            check=check,
            timeout=timeout,
        )


@contextlib.contextmanager
def session(rootfs: Rootfs, *, host_env: Mapping[str, str] | None = None) -> Iterator[Chroot]:
    host_env = os.environ if host_env is None else host_env
    root = rootfs.path
    mounts.sweep(root)
    with mounts.MountStack() as stack:
        stack.mount(
            root / "proc", fstype="proc", source="proc", options=("nosuid", "nodev", "noexec")
        )
        stack.mount(
            root / "dev",
            fstype="tmpfs",
            source="emulate-dev",
            options=("mode=0755", "nosuid", "size=65536k"),
        )
        _populate_dev(root / "dev")
        stack.mount(
            root / "sys",
            fstype="tmpfs",
            source="emulate-sys",
            options=("mode=0755", "nosuid", "nodev", "noexec", "size=1024k"),
        )
        _populate_sys(root / "sys")
        # pip needs name resolution and the host's CAs (which may include a
        # proxy's); both can change between runs, so copy them every time.
        if Path("/etc/resolv.conf").is_file():
            atomic_write_text(root / "etc" / "resolv.conf", Path("/etc/resolv.conf").read_text())
        ca = Chroot(rootfs).host_path(CA_BUNDLE)
        atomic_write_text(ca, host_ca_bundle(host_env).read_text())
        yield Chroot(rootfs, env=base_env(host_env=host_env))
