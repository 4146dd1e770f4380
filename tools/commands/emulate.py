"""``python -m tools emulate``: test linux-aarch64 / ppc64le packages under QEMU, per CPU
setting."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from tools.emulate.arch import ARCHES, get_arch
from tools.foundation.errors import UserError

HELP = "run packages' tests for aarch64/ppc64le under QEMU, once per CPU setting"

EPILOG = """\
Needs root and the Debian packages qemu-user-static and debootstrap.  Build tools'
output goes to stderr; stdout holds the report alone (--json: the document).

exit status: 0 the tests passed under every CPU setting; 1 a test failed under at least
one; 2 bad input, a missing host tool or a failed setup step; 130 interrupted.
"""


def configure(parser: argparse.ArgumentParser) -> None:
    # Written out because argparse shows the REMAINDER positional as a bare "...".
    parser.usage = (
        f"%(prog)s [-h] --arch {{{','.join(sorted(ARCHES))}}} [--cpu SETTING]... "
        "[--rootfs DIR] [--keep] [--json] [--suite NAME] [--mirror URL] "
        "[--index-url URL] [--timeout SECONDS] "
        "PACKAGES_OR_WHEELS... [-- TEST COMMAND...]"
    )
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EPILOG
    parser.add_argument(
        "--arch", required=True, choices=sorted(ARCHES), help="architecture to emulate"
    )
    parser.add_argument(
        "--cpu",
        action="append",
        metavar="SETTING",
        dest="cpus",
        help="a QEMU_CPU value to test under (repeatable; default: "
        "aarch64 SVE off/128/256/512, ppc64le power9 and power10)",
    )
    parser.add_argument(
        "--rootfs",
        metavar="DIR",
        help="where the emulated Debian root filesystem is built once and "
        "cached (default: ~/.cache/pytorch-feedstock/emulate/"
        "rootfs-<arch>-<suite>)",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the installed environment inside the rootfs; the next run "
        "with the same inputs reuses it",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--suite",
        default=None,
        metavar="NAME",
        help="Debian suite of the rootfs (default: bookworm, Python 3.11)",
    )
    parser.add_argument(
        "--mirror",
        default=None,
        metavar="URL",
        help="Debian mirror for debootstrap (default: http://deb.debian.org/debian)",
    )
    parser.add_argument(
        "--index-url",
        default=None,
        metavar="URL",
        help="package index for pip inside the chroot (default: PyPI)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="limit for installing and for each test run (default: 3600)",
    )
    parser.add_argument(
        "items",
        nargs=argparse.REMAINDER,
        metavar="PACKAGES_OR_WHEELS",
        help="wheels, .conda/.tar.bz2 packages or pip requirements, then "
        "optionally -- and the test command (default: import torch, "
        "print its CPU capability, check a matmul against numpy)",
    )


def split_items(values: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...] | None]:
    """Packages before ``--``, the test command after it (None when absent or empty)."""
    if "--" in values:
        cut = values.index("--")
        packages, command = tuple(values[:cut]), tuple(values[cut + 1 :])
    else:
        packages, command = tuple(values), ()
    misplaced = [value for value in packages if value.startswith("-")]
    if misplaced:
        raise UserError(
            f"{misplaced[0]}: options go before the packages, and the test command after --"
        )
    if not packages:
        raise UserError("nothing to install: give wheels, conda packages or pip requirements")
    return packages, command or None


def options_from_args(args: argparse.Namespace, env: Mapping[str, str] | None = None):
    from tools.emulate import install, rootfs
    from tools.emulate.emulation import Options

    arch = get_arch(args.arch)
    packages, command = split_items(args.items)
    cpus = tuple(args.cpus) if args.cpus else arch.default_cpus
    for cpu in cpus:
        if not cpu or any(ch.isspace() for ch in cpu):
            raise UserError(f"--cpu {cpu!r}: a QEMU_CPU value has no spaces, e.g. max,sve=off")
    suite = args.suite or rootfs.DEFAULT_SUITE
    rootfs_dir = (
        Path(args.rootfs).absolute()
        if args.rootfs
        else rootfs.default_dir(arch, suite, os.environ if env is None else env)
    )
    if any(ch.isspace() or ch in "'\"\\" for ch in str(rootfs_dir)):
        raise UserError(
            f"--rootfs {rootfs_dir}: debootstrap cannot build in a path with "
            "spaces or quotes; pick another directory"
        )
    if args.timeout <= 0:
        raise UserError(f"--timeout {args.timeout:g}: must be positive")
    return Options(
        arch=arch,
        cpus=cpus,
        rootfs=rootfs_dir,
        items=packages,
        command=command,
        keep=args.keep,
        suite=suite,
        mirror=args.mirror or rootfs.DEFAULT_MIRROR,
        index_url=args.index_url or install.DEFAULT_INDEX_URL,
        timeout=args.timeout,
    )


@contextlib.contextmanager
def _children_write_to_stderr() -> Iterator[None]:
    """Keep stdout for the report alone: debootstrap, pip and the tests log to stderr."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def run(args: argparse.Namespace) -> int:
    from tools.emulate import emulation, report
    from tools.foundation.errors import ProblemsFound

    options = options_from_args(args)
    with _children_write_to_stderr():
        result = emulation.run(options)
    print(report.to_json(result) if args.json else report.format_table(result))
    if not result.passed:
        failed = sum(not r.passed for r in result.results)
        raise ProblemsFound(
            f"the test failed under {failed} of {len(result.results)} QEMU CPU setting(s)"
            if result.results
            else "no QEMU CPU setting ran the test"
        )
    return 0
