"""Checks one installed `pytorch` package against the variant it was built for.

Run by the `pytorch` output's tests in meta.yaml, with the variant's expectations on the
command line; prints one line per check and exits 1 listing every check that failed.
Standard library and torch only: it runs inside conda-build's test environment.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import sysconfig
from collections.abc import Callable

import torch

FEATURES: dict[str, Callable[[], bool]] = {
    "openmp": lambda: torch.backends.openmp.is_available(),
    "mkldnn": lambda: torch.backends.mkldnn.is_available(),
    "distributed": lambda: torch.distributed.is_available(),
    # Metal: built into every osx-arm64 package, usable on any Apple silicon runner
    "mps": lambda: torch.backends.mps.is_available(),
}


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--version", help="expected torch.__version__")
    parser.add_argument(
        "--git-version", help="expected torch.version.git_version: the commit the recipe records"
    )
    parser.add_argument("--blas", choices=["mkl", "generic"])
    parser.add_argument("--cuda", required=True, help='CUDA version of the variant, or "None"')
    parser.add_argument("--megabuild-python", help="e.g. 3.12")
    parser.add_argument("--expect", action="append", default=[], choices=sorted(FEATURES))
    parser.add_argument(
        "--gpu-only", action="store_true", help="run only the GPU kernel check (GPU smoke test)"
    )
    args = parser.parse_args(argv)
    required = ("version", "git_version", "blas", "megabuild_python")
    missing = [o for o in required if getattr(args, o) is None]
    if missing and not args.gpu_only:
        parser.error(
            "the following arguments are required: "
            + ", ".join("--" + o.replace("_", "-") for o in missing)
        )
    return args


def check_version(expected: str, git_version: str) -> str | None:
    if torch.__version__ != expected:
        return f"torch.__version__ is {torch.__version__!r}, the package is {expected!r}"
    # The release archive has no .git, so upstream's build alone would say "Unknown": the
    # recipe records the release's commit and patch 0013 hands it to the build (recipe/README.md,
    # "torch.version.git_version").
    if torch.version.git_version != git_version:
        return (
            f"torch.version.git_version is {torch.version.git_version!r}, the recipe records "
            f"{git_version!r}"
        )
    return None


def check_blas(blas: str) -> str | None:
    # torch.__config__.show() lists BLAS_INFO/LAPACK_INFO as the build configured them.
    config = torch.__config__.show()
    want = {"mkl": "BLAS_INFO=mkl", "generic": "BLAS_INFO=open"}[blas]
    if want not in config:
        return f"{want!r} missing from torch.__config__.show()"
    mkl = torch.backends.mkl.is_available()
    if (blas == "mkl") != mkl:
        return f"torch.backends.mkl.is_available() is {mkl} for blas_impl={blas}"
    return None


def check_complex_dot() -> str | None:
    # Fortran zdotu/cdotu return complex values by value or through a pointer depending on
    # the BLAS; a build that assumes the wrong convention returns garbage here.
    n = 257
    for dtype in (torch.complex64, torch.complex128):
        ramp = torch.arange(n, dtype=torch.float64)
        x = (ramp * (1 + 2j)).to(dtype)
        y = (ramp.flip(0) * (3 - 1j)).to(dtype)
        expected = sum(complex(a) * complex(b) for a, b in zip(x.tolist(), y.tolist()))
        got = complex(torch.dot(x, y))
        if abs(got - expected) > 1e-3 * abs(expected):
            return f"torch.dot on {dtype} gave {got}, expected {expected}"
    return None


def check_cuda(cuda: str) -> str | None:
    if cuda == "None":
        if torch.version.cuda is not None:
            return f"CPU variant, but torch.version.cuda is {torch.version.cuda!r}"
        return None
    if not torch.backends.cuda.is_built():
        return "CUDA variant, but torch.backends.cuda.is_built() is False"
    if not (torch.version.cuda or "").startswith(cuda):
        return f"torch.version.cuda is {torch.version.cuda!r}, the variant is {cuda}"
    if not torch.backends.cudnn.is_available():
        return "CUDA variant, but cuDNN is not available"
    return None


class Skipped(Exception):
    """A check that cannot run on this machine (no GPU): one "skip" line, not a failure."""


def check_gpu_kernels(cuda: str) -> str | None:
    # Kernels of libtorch_cuda (elementwise), cuBLAS (matmul) and libtorch_cuda_linalg
    # (cuSOLVER's det) on the GPU, against the CPU: the fatbin holds code this GPU runs.
    if cuda == "None":
        raise Skipped("CPU variant")
    if not torch.cuda.is_available():
        raise Skipped("no GPU visible (torch.cuda.is_available() is False)")
    name = torch.cuda.get_device_name(0)
    cpu = torch.linspace(-2, 2, 4096, dtype=torch.float64).reshape(64, 64)
    gpu = cpu.cuda()
    results = {
        "elementwise": ((gpu * gpu + 1).cpu(), cpu * cpu + 1),
        "matmul": ((gpu @ gpu.T).cpu(), cpu @ cpu.T),
        "det": (
            torch.linalg.det(gpu[:8, :8] + 8 * torch.eye(8, device="cuda")).cpu(),
            torch.linalg.det(cpu[:8, :8] + 8 * torch.eye(8, dtype=torch.float64)),
        ),
    }
    torch.cuda.synchronize()
    wrong = [k for k, (got, want) in results.items() if not torch.allclose(got, want)]
    return f"wrong results on {name}: {', '.join(wrong)}" if wrong else None


def check_features(expected: list[str]) -> str | None:
    missing = [name for name in expected if not FEATURES[name]()]
    return f"not available: {', '.join(missing)}" if missing else None


def check_no_foreign_bytecode(megabuild_python: str) -> str | None:
    # The megabuild compiles with one Python; its bytecode must not leak into the
    # packages of the others.
    tag = "cpython-" + megabuild_python.replace(".", "")
    if sys.implementation.cache_tag == tag:
        return None
    torch_dir = pathlib.Path(sysconfig.get_paths()["purelib"]) / "torch"
    leaked = sorted(str(p) for p in torch_dir.rglob(f"*.{tag}.pyc"))
    return f"{len(leaked)} {tag} bytecode files, e.g. {leaked[0]}" if leaked else None


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    checks: dict[str, Callable[[], str | None]] = {
        "version": lambda: check_version(args.version, args.git_version),
        "blas": lambda: check_blas(args.blas),
        "complex dot": check_complex_dot,
        "cuda": lambda: check_cuda(args.cuda),
        "features": lambda: check_features(args.expect),
        "bytecode": lambda: check_no_foreign_bytecode(args.megabuild_python),
        "gpu kernels": lambda: check_gpu_kernels(args.cuda),
    }
    if args.gpu_only:
        checks = {"gpu kernels": checks["gpu kernels"]}
    failures = []
    for name, check in checks.items():
        try:
            problem = check()
        except Skipped as reason:
            print(f"skip {name}: {reason}")
            continue
        print(f"{'FAIL' if problem else 'ok  '} {name}{': ' + problem if problem else ''}")
        if problem:
            failures.append(name)
    if failures:
        print(
            f"check_torch: {len(failures)} check(s) failed: {', '.join(failures)}", file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
