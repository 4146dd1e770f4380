#!/usr/bin/env python
"""Time and peak memory of ``python -m tools check`` on the package holding libtorch_cpu.so.

    python benchmarks/bench_check.py [PACKAGE.conda] [--wheel TORCH_WHEEL]

Without a package, one is built (once, cached in the tests' cache,
$XDG_CACHE_HOME or ~/.cache, under pytorch-feedstock-tests/bench-check; the wheel is
in pytorch-feedstock-tests/wheels) from the real
torch 2.13.0 CPU wheel the tests use: its libraries in lib/ and its CMake
files in share/cmake, packed with conda-package-handling.  The check runs in a
child process so that its peak RSS is its own.  Prints; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The tests' cache, and its one way in: a package another run is still writing is never seen.
sys.path.insert(0, str(REPO / "tests"))
from helpers.cache import publish_file, staging, tests_cache_root  # noqa: E402

CACHE = tests_cache_root()
LIBS = ("libc10.so", "libshm.so", "libtorch.so", "libtorch_cpu.so", "libtorch_global_deps.so")


def find_wheel(given: Path | None) -> Path:
    if given:
        return given
    found = sorted((CACHE / "wheels").glob("torch-2.13.0*.whl"))
    if not found:
        sys.exit(f"no torch 2.13.0 wheel in {CACHE / 'wheels'}; run the tests once or pass --wheel")
    return found[0]


def build_package(wheel: Path) -> Path:
    from conda_package_handling import api as cph

    out = CACHE / "bench-check"
    stem = "libtorch-2.13.0-cpu_generic_hbench00_2"
    package = out / f"{stem}.conda"
    if package.is_file():
        return package
    with tempfile.TemporaryDirectory(prefix="bench-check-") as tmp, staging(package) as built:
        prefix = Path(tmp)
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.namelist():
                rest = member.removeprefix("torch/")
                if member.startswith("torch/lib/") and Path(rest).name in LIBS:
                    target = prefix / "lib" / Path(rest).name
                elif member.startswith("torch/share/cmake/"):
                    target = prefix / rest
                else:
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                # Streamed: Linux keeps a parent's peak RSS in a forked child's
                # ru_maxrss, so the parent must stay small to measure the check.
                with archive.open(member) as src, target.open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
        files = sorted(p.relative_to(prefix).as_posix() for p in prefix.rglob("*") if p.is_file())
        (prefix / "info").mkdir()
        (prefix / "info" / "index.json").write_text(
            json.dumps(
                {
                    "name": "libtorch",
                    "version": "2.13.0",
                    "build": "cpu_generic_hbench00_2",
                    "build_number": 2,
                    "subdir": "linux-64",
                    "depends": ["libgcc >=14", "libstdcxx >=14", "libgomp >=14"],
                }
            )
        )
        (prefix / "info" / "files").write_text("\n".join(files) + "\n")
        cph.create(
            str(prefix),
            [*files, "info/index.json", "info/files"],
            f"{stem}.conda",
            str(built),
            compression_level=1,
        )
        return publish_file(built / f"{stem}.conda", package)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", nargs="?", type=Path)
    parser.add_argument("--wheel", type=Path)
    args = parser.parse_args()
    package = args.package or build_package(find_wheel(args.wheel))
    with tempfile.TemporaryFile("w+") as out:
        start = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-m", "tools", "check", "--json", str(package)],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.DEVNULL,
        )
        # wait4 reports this child's own peak RSS, not that of earlier children.
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    findings = json.loads(text) if text.strip() else []
    peak_kib = usage.ru_maxrss
    print(f"package:     {package} ({package.stat().st_size / 1e6:.0f} MB)")
    print(f"wall time:   {elapsed:.1f} s")
    print(f"peak RSS:    {peak_kib / 1024:.0f} MiB")
    print(f"findings:    {len(findings)} (exit status {child.returncode})")


if __name__ == "__main__":
    main()
