#!/usr/bin/env python3
"""The feedstock switched to rattler-build: ``matrix --write`` against the real ``conda smithy
rerender``, timed side by side and compared file for file.

    python benchmarks/bench_rerender_v1.py [--pinning DIR] [--oracle /tmp/oracle] [--keep DIR]

Two clones of this checkout, named ``pytorch-cpu-feedstock`` (the name conda-smithy gives the
repository), are switched with ``python -m tools switch --to rattler-build`` and committed. In
one, ``python -m tools matrix --write`` runs with the render cache off; in the other, the real
conda-smithy rerenders (the offline setup of ../shared/oracle/README.md, section "(v1)
Rerender a feedstock switched to rattler-build": conda-smithy through
rattler-build-conda-compat, the rattler-build CLI answered by py-rattler-build). It takes
about 50 minutes on two cores; the log is kept. Then every ``.ci_support/*.yaml`` is compared.
Without the oracle, only ours is timed. ``benchmarks/bench_commands.py`` times ``matrix
--check`` between edits (cache hit, and the first run after an edit).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NAME = "pytorch-cpu-feedstock"


def git(root: Path, *args: str) -> None:
    identity = ("-c", "user.name=bench", "-c", "user.email=bench@localhost")
    subprocess.run(["git", "-C", str(root), *identity, *args], check=True, capture_output=True)


def switched_clone(into: Path, pinning: Path) -> Path:
    """A clone of this checkout's HEAD, switched with the toolkit's command and committed."""
    root = into / NAME
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(root)], check=True)
    subprocess.run(
        [sys.executable, "-m", "tools", "switch", "--to", "rattler-build", "--pinning", pinning],
        cwd=root,
        check=True,
        capture_output=True,
    )
    git(root, "commit", "--quiet", "-m", "switch to rattler-build")
    return root


def timed(args: list[str | Path], cwd: Path, env: dict[str, str], log: Path) -> float:
    start = time.perf_counter()
    with log.open("w") as out:
        subprocess.run(args, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, check=True)
    return time.perf_counter() - start


def oracle_env(oracle: Path) -> dict[str, str]:
    """What /tmp/oracle/activate.sh sets, as a mapping."""
    script = f"source {oracle / 'activate.sh'} >/dev/null && env -0"
    out = subprocess.run(["bash", "-c", script], capture_output=True, check=True).stdout
    return dict(line.split("=", 1) for line in out.decode().split("\0") if "=" in line)


def compare(ours: Path, smithy: Path) -> list[str]:
    mine = {p.name: p.read_text() for p in (ours / ".ci_support").glob("*.yaml")}
    theirs = {p.name: p.read_text() for p in (smithy / ".ci_support").glob("*.yaml")}
    lines = []
    for name in sorted(set(mine) | set(theirs)):
        if name not in theirs:
            verdict = "only ours"
        elif name not in mine:
            verdict = "only conda-smithy's"
        else:
            verdict = "identical" if mine[name] == theirs[name] else "DIFFERENT"
        lines.append(f"{verdict:<20} {name}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--pinning", type=Path, default=REPO / "tests" / "fixtures" / "reference" / "pinning"
    )
    parser.add_argument("--oracle", type=Path, default=Path("/tmp/oracle"))
    parser.add_argument("--keep", type=Path, help="keep both clones and the logs here")
    args = parser.parse_args()
    pinning = args.pinning.resolve()
    scratch = Path(tempfile.mkdtemp(prefix="rerender-v1-"))
    keep = args.keep.resolve() if args.keep else scratch
    keep.mkdir(parents=True, exist_ok=True)
    try:
        ours = switched_clone(scratch / "ours", pinning)
        env = {**os.environ, "PYTORCH_FEEDSTOCK_CACHE": "off"}
        command = [sys.executable, "-m", "tools", "matrix", "--write", "--pinning", pinning]
        seconds = timed(command, ours, env, keep / "matrix.log")
        print(f"matrix --write (render cache off): {seconds:.1f} s wall")
        smithy_py = args.oracle / "smithy_offline.py"
        if (
            not smithy_py.is_file()
            or not (args.oracle / "venv" / "bin" / "rattler-build").is_file()
        ):
            print(f"conda smithy rerender: not run ({args.oracle} has no v1 rerender setup)")
            return 0
        theirs = switched_clone(scratch / "smithy", pinning)
        shutil.rmtree(theirs / ".ci_support")  # what conda-smithy writes, nothing of ours
        (theirs / ".ci_support" / "migrations").mkdir(parents=True)
        for path in (ours / ".ci_support" / "migrations").glob("*"):
            shutil.copy2(path, theirs / ".ci_support" / "migrations" / path.name)
        git(theirs, "add", "--all")
        git(theirs, "commit", "--quiet", "-m", "only the migrations in .ci_support")
        rerender = [
            *(args.oracle / "venv" / "bin" / "python", smithy_py, "rerender"),
            *("--feedstock_directory", theirs, "--no-check-uptodate"),
            *("--exclusive-config-file", args.oracle / "cfp" / "conda_build_config.yaml"),
        ]
        seconds_real = timed(rerender, theirs, oracle_env(args.oracle), keep / "rerender.log")
        print(f"conda smithy rerender (the oracle): {seconds_real:.1f} s wall")
        for line in compare(ours, theirs):
            print(line)
    finally:
        if args.keep:
            for name in ("ours", "smithy"):
                if (scratch / name).is_dir():
                    shutil.move(str(scratch / name), str(keep / name))
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
