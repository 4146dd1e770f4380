"""``python -m tools smoke``: the GPU smoke test of a build's packages."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "install a build's pytorch packages with py-rattler and run real GPU kernels in them"

EPILOG = """\
PATH is the folder a build left its packages in (build_artifacts/, with linux-64/).
pytorch (and libtorch-cuda-linalg where it was built) is solved from it and --channel
(the dependencies' channels, conda-forge by default) for this machine's virtual packages,
and installed into a fresh prefix (--prefix, else a temporary folder); then the kernel
test runs there: recipe/check_torch.py --gpu-only (elementwise, cuBLAS and cuSOLVER
kernels against the CPU), or --kernel-test FILE, called with --gpu-only --cuda VERSION.
Without a GPU (no driver, no device) it prints one `skip` line; without a driver the
packages are solved as if one for the build's CUDA version were present.

exit status: 0 the kernels ran and agreed, or skipped for want of a GPU; 1 a kernel test
failed (its output says which); 2 bad input (no pytorch in PATH, no solution).
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("artifacts", type=Path, metavar="PATH")
    parser.add_argument(
        "--channel",
        action="append",
        default=[],
        help="a channel for the dependencies (URL, name or folder; repeatable)",
    )
    parser.add_argument("--python", help="the Python to install pytorch for, e.g. 3.12")
    parser.add_argument("--cuda", help="the CUDA version (default: pytorch's build string)")
    parser.add_argument("--kernel-test", type=Path, help="the kernel test to run (a file)")
    parser.add_argument("--prefix", type=Path, help="install here (must not exist)")


def run(args: argparse.Namespace) -> int:
    import os
    import sys
    import tempfile

    from tools.foundation.errors import ProblemsFound, UserError
    from tools.foundation.proc import call
    from tools.foundation.repo import find_root
    from tools.smoke.gpu import install, kernel_command

    test = args.kernel_test or find_root() / "recipe" / "check_torch.py"
    if not test.is_file():
        raise UserError(f"--kernel-test {test}: no such file")
    if args.prefix is not None and args.prefix.exists():
        raise UserError(f"--prefix {args.prefix} exists; name a new folder")
    channels = args.channel or ["conda-forge"]
    with tempfile.TemporaryDirectory(prefix="gpu-smoke-") as scratch:
        prefix = args.prefix or Path(scratch) / "env"
        installed = install(args.artifacts, channels, prefix, args.python, args.cuda)
        print(f"smoke: installed {len(installed.packages)} packages into {prefix}")
        for line in installed.packages:
            if line.split()[0] in ("pytorch", "libtorch", "libtorch-cuda-linalg"):
                print(f"  {line}")
        sys.stdout.flush()
        # The installed environment alone, plus what finds the GPUs and their driver.
        keep = ("HOME", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")
        env = {k: v for k, v in os.environ.items() if k in keep}
        env["PATH"] = f"{prefix / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin"
        result = call(*kernel_command(installed, test), env=env, check=False, capture=True)
        print(result.stdout, end="")
        print(result.stderr, end="", file=sys.stderr)
    if result.returncode:
        raise ProblemsFound(f"the kernel test {test.name} failed (exit {result.returncode})")
    return 0
