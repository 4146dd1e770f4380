#!/usr/bin/env python3
"""How often producing both libtorch-cuda-linalg flavours compiles each object.

    python benchmarks/bench_linalg_flavours.py [--recipe-dir DIR]

Runs the top-level (libtorch) step of recipe/build.sh for a Linux CUDA configuration
against the miniature torch-like project (tests/fixtures/minitorch) in a temporary
directory, with the faked conda-build environment tests/e2e/test_build_sh.py uses, then
counts the compiler runs in the build tree's .ninja_log per source file. An object is
"linalg" when only the libtorch_cuda_linalg targets compiled it. On the real tree every
non-linalg object compiled twice is a heavy nvcc translation unit compiled once more
for every CUDA architecture, per Linux CUDA configuration.

--recipe-dir measures another copy of the recipe, for instance an older build.sh:
    git worktree add /tmp/old <commit> && python benchmarks/bench_linalg_flavours.py \\
        --recipe-dir /tmp/old/recipe
Prints, last, one summary line; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The helpers import from tests/ (helpers.*) and from the repository (tools.*).
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

import pytest  # noqa: E402  (the fixtures skip with pytest's exception)
from helpers.minitorch.build_records import compiles, count_compiles  # noqa: E402
from helpers.minitorch.fake_conda_build import FakeCondaBuild  # noqa: E402
from helpers.minitorch.support import (  # noqa: E402
    RECIPE_DIR,
    base_venv,
    install_blas,
    install_magma,
    two_interpreters,
)

VARIANT = {"cuda_compiler_version": "13.0", "blas_impl": "generic"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe-dir", type=Path, default=RECIPE_DIR)
    args = parser.parse_args()
    if not (args.recipe_dir / "build.sh").is_file():
        print(f"bench_linalg_flavours: {args.recipe_dir}/build.sh does not exist", file=sys.stderr)
        return 2
    try:
        first, _ = two_interpreters()
        venv = base_venv(first)
    except pytest.skip.Exception as skipped:
        print(f"bench_linalg_flavours: cannot run: {skipped}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-linalg-") as tmp:
        scratch = Path(tmp)
        conda = FakeCondaBuild(
            scratch, VARIANT, megabuild_python=first.tag, recipe_dir=args.recipe_dir.resolve()
        )
        install_magma(scratch / "libmagma", scratch)
        install_blas(scratch / "blas", scratch)
        host = [
            conda.package_from("libmagma", scratch / "libmagma"),
            conda.package_from("blas", scratch / "blas"),
        ]
        start = time.perf_counter()
        result = conda.attempt_output("libtorch", venv, host)
        seconds = time.perf_counter() - start
        if result.returncode != 0:
            tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
            print(f"bench_linalg_flavours: build.sh failed: {tail}", file=sys.stderr)
            return 1
        records = compiles(conda.src_dir / "build")
    counted = count_compiles(records, linalg_prefix="torch_cuda_linalg")
    print(f"build.sh (libtorch, {VARIANT}): {seconds:.1f} s, {len(records)} compiler runs")
    for source in counted.repeated:
        runs = [r.target for r in records if r.source == source]
        print(f"  compiled {len(runs)}x: {source} ({', '.join(runs)})")
    names = ", ".join(Path(source).name + ".o" for source in counted.repeated) or "none"
    all_linalg = "no" if counted.repeated_outside_linalg else "yes"
    print(
        f"linalg flavours: {len(counted.once)} objects compiled once, "
        f"{len(counted.repeated)} compiled twice (all linalg: {all_linalg}): {names}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
