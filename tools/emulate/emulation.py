"""The whole run: check the host, make the rootfs, install, test each CPU setting."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tools.emulate import chroot, host, install, mounts, rootfs, runner
from tools.emulate.arch import Arch
from tools.emulate.report import Report
from tools.emulate.rootfs import DEFAULT_MIRROR, DEFAULT_SUITE
from tools.foundation import log


@dataclass(frozen=True)
class Options:
    arch: Arch
    cpus: tuple[str, ...]
    rootfs: Path
    items: tuple[str, ...]
    command: tuple[str, ...] | None  # None: the default torch test
    keep: bool = False
    suite: str = DEFAULT_SUITE
    mirror: str = DEFAULT_MIRROR
    index_url: str = install.DEFAULT_INDEX_URL
    timeout: float | None = None

    @property
    def test_command(self) -> tuple[str, ...]:
        return self.command or runner.DEFAULT_COMMAND

    @property
    def extra_requirements(self) -> tuple[str, ...]:
        return () if self.command else runner.DEFAULT_COMMAND_NEEDS


def run(options: Options) -> Report:
    # Bad input is reported before the machine is touched.
    items = [install.classify(value, options.arch) for value in options.items]
    host.require_root()
    host.ensure_binfmt(options.arch)
    # From here on every exit path unwinds through the context managers, so
    # debootstrap's and our own mounts are undone on SIGTERM and SIGHUP too.
    with mounts.terminate_as_interrupt(), rootfs.locked(options.rootfs):
        tree = rootfs.ensure(
            options.rootfs, options.arch, suite=options.suite, mirror=options.mirror
        )
        with chroot.session(tree) as session:
            env = install.install(
                session,
                items,
                index_url=options.index_url,
                extra=options.extra_requirements,
                timeout=options.timeout,
            )
            try:
                results = tuple(_run_settings(session, env, options))
            finally:
                if options.keep:
                    log.warn(f"kept {session.host_path(env.root)} for the next run")
                else:
                    install.remove(session, env)
    return Report(
        arch=options.arch.name, rootfs=tree.path, command=options.test_command, results=results
    )


def _run_settings(
    session: chroot.Chroot, env: install.Environment, options: Options
) -> Iterator[runner.SettingResult]:
    for cpu in options.cpus:
        with log.step(f"test with QEMU_CPU={cpu}"):
            yield runner.run_setting(
                session, env, cpu, options.test_command, timeout=options.timeout
            )
