#!/usr/bin/env python
"""Wall time of the quick loop, ``python -m pytest -m "not slow"``, in a fresh clone alone.

    python benchmarks/bench_quick_loop.py [--runs 3] [--ref HEAD] [--cold] [--json FILE]

Clones this repository at ``--ref`` (a commit: what is not committed is not measured) into a
temporary folder, runs the quick loop there ``--runs`` times one after the other, and prints
each run's wall time and counts, then the median against the budget docs/testing.md holds it
to (issue 59: 120 s on 2 cores). Warm by default: the tests' cache is this machine's own
($XDG_CACHE_HOME or ~/.cache); ``--cold`` gives every run an empty one of its own (the
downloads and the stand-in channel then count). Nothing else should run meanwhile: the loop
fills both cores. Prints; asserts nothing; exit 1 only when a run fails.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: The quick loop's budget, warm, on 2 cores (docs/testing.md, "How long it takes").
BUDGET_S = 120
COMMAND = [sys.executable, "-m", "pytest", "-m", "not slow", "-q", "-p", "no:cacheprovider"]
_COUNTS = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")


def run_once(clone: Path, cache: Path | None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    if cache is not None:
        env["XDG_CACHE_HOME"] = str(cache)
    start = time.perf_counter()
    result = subprocess.run(COMMAND, cwd=clone, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    last = (result.stdout.strip().splitlines() or [""])[-1]
    counts = {kind.rstrip("s") if kind.startswith("error") else kind: int(n)
              for n, kind in _COUNTS.findall(last)}  # fmt: skip
    return {"wall_s": round(wall, 1), "returncode": result.returncode, "counts": counts,
            "summary": last}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3, help="runs in the clone (default 3)")
    parser.add_argument("--ref", default="HEAD", help="the commit to clone (default HEAD)")
    parser.add_argument("--cold", action="store_true", help="an empty tests' cache per run")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the runs here")
    args = parser.parse_args(argv)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", f"{args.ref}^{{commit}}"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    if commit.returncode != 0:
        print(f"error: --ref {args.ref}: not a commit of {REPO}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-quick-loop-") as tmp:
        clone = Path(tmp) / "pytorch-cpu-feedstock"
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
        subprocess.run(["git", "checkout", "-q", commit.stdout.strip()], cwd=clone, check=True)
        print(f"quick loop in a fresh clone of {commit.stdout.strip()}: {' '.join(COMMAND[1:])}")
        runs = []
        for number in range(1, args.runs + 1):
            cache = Path(tmp) / f"cache-{number}" if args.cold else None
            run = run_once(clone, cache)
            runs.append(run)
            print(f"run {number}: {run['wall_s']:.1f} s  {run['summary']}", flush=True)
    median = statistics.median(r["wall_s"] for r in runs)
    verdict = "within" if median <= BUDGET_S else "OVER"
    print(f"median of {len(runs)}: {median:.1f} s ({verdict} the {BUDGET_S} s budget)")
    if args.json:
        record = {"commit": commit.stdout.strip(), "cold": args.cold, "median_s": median,
                  "runs": runs}  # fmt: skip
        partial = args.json.with_name(args.json.name + ".partial")
        partial.write_text(json.dumps(record, indent=2) + "\n")
        partial.replace(args.json)
    return 1 if any(r["returncode"] != 0 for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
