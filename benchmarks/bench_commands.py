#!/usr/bin/env python3
"""Time the commands a maintainer runs between edits, as they run them: ``explain``,
``render CONFIG`` and ``matrix --pinning PINNING --check``, on meta.yaml and on a copy of the
feedstock switched to rattler-build (where matrix refuses, so it is not timed).

    python benchmarks/bench_commands.py [--repeat 5] [--pinning ../shared/pinning] [--repo DIR]

Each figure is the median wall-clock time of ``--repeat`` fresh processes
(``python -m tools ...``, imports included):

- warm: the render cache (tools/foundation/diskcache.py) holds the renders, as between two
  edits that leave the command's inputs alone (the first run fills it and is not counted);
- cold: a new, empty cache folder for every run (the first run after an edit);
- uncached: ``PYTORCH_FEEDSTOCK_CACHE=off``, every render computed.

``--repo`` times another checkout of the feedstock (say an older revision made with
``git worktree add``), so that two revisions are measured in the same sitting. The budget
the README sets: warm ``explain`` and ``render`` under 1 s, warm ``matrix --check`` under 2 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_render import REPO, switched_copy, v1_recipe  # a sibling script

CONFIG = "osx_arm64"  # a unique prefix: one config, the way a maintainer names it
BUDGET = {"explain": 1.0, "render": 1.0, "matrix --check": 2.0}


def timed(root: Path, args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "tools", *args],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=True,
    )
    return time.perf_counter() - start


def medians(root: Path, args: list[str], repeat: int, scratch: Path) -> dict[str, float]:
    base = {k: v for k, v in os.environ.items() if k != "PYTORCH_FEEDSTOCK_CACHE"}
    warm_env = {**base, "PYTORCH_FEEDSTOCK_CACHE": str(scratch / "warm")}
    timed(root, args, warm_env)  # fills the cache
    figures = {"warm": [timed(root, args, warm_env) for _ in range(repeat)]}
    figures["cold"] = [
        timed(root, args, {**base, "PYTORCH_FEEDSTOCK_CACHE": str(scratch / f"cold{n}")})
        for n in range(repeat)
    ]
    off = {**base, "PYTORCH_FEEDSTOCK_CACHE": "off"}
    figures["uncached"] = [timed(root, args, off) for _ in range(repeat)]
    return {kind: statistics.median(values) for kind, values in figures.items()}


def report(label: str, name: str, figures: dict[str, float]) -> None:
    budget = BUDGET[name]
    mark = "ok" if figures["warm"] < budget else f"OVER the {budget:.0f} s budget"
    print(
        f"{label:<22} {name:<15} warm {figures['warm']:6.2f} s ({mark})   "
        f"cold {figures['cold']:6.2f} s   uncached {figures['uncached']:6.2f} s"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--pinning", type=Path, default=REPO.parent / "shared" / "pinning")
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout to time")
    args = parser.parse_args()
    repo = args.repo.resolve()
    print(f"median of {args.repeat} processes each; {repo}")
    commands = {"explain": ["explain"], "render": ["render", CONFIG]}
    if args.pinning.is_dir() or args.pinning.is_file():
        commands["matrix --check"] = ["matrix", "--pinning", str(args.pinning.resolve()), "--check"]
    else:
        print(f"matrix --check: not timed ({args.pinning} is absent; pass --pinning)")
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        for name, argv in commands.items():
            report("meta.yaml", name, medians(repo, argv, args.repeat, scratch / "meta" / name))
        if v1_recipe(repo) is not None:
            switched = switched_copy(repo, scratch)
            os.symlink(repo / "tools", switched / "tools")
            for name in ("explain", "render"):
                figures = medians(switched, commands[name], args.repeat, scratch / "v1" / name)
                report("switched (rattler-build)", name, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
