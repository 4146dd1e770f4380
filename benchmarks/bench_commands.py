#!/usr/bin/env python3
"""Time the commands a maintainer runs between edits, as they run them: ``explain``,
``render CONFIG`` and ``matrix --pinning PINNING --check``, on meta.yaml and on a copy of the
feedstock switched to rattler-build.

    python benchmarks/bench_commands.py [--repeat 5] [--pinning ../shared/pinning] [--repo DIR]

Each figure is the median wall-clock time of ``--repeat`` fresh processes
(``python -m tools ...``, imports included):

- warm: the render cache (tools/foundation/diskcache.py) holds the renders, as between two
  edits that leave the command's inputs alone (the first run fills it and is not counted);
- cold: a new, empty cache folder for every run (the first run after an edit);
- uncached: ``PYTORCH_FEEDSTOCK_CACHE=off``, every render computed.

``--repo`` times another checkout of the feedstock (say an older revision made with
``git worktree add``), so that two revisions are measured in the same sitting. The budget
the README sets: warm ``explain`` and ``render`` under 1 s, warm ``matrix --check`` under 2 s;
on the switched feedstock, warm ``matrix --check`` under 1 s and cold (the first run after an
edit: rattler-build renders every platform, then every CI job for README.md's table) at most
10 s. ``benchmarks/bench_rerender_v1.py`` times the real ``conda smithy rerender`` beside it.
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
# the switched feedstock: kind -> seconds (warm: between two edits; cold: after one)
SWITCHED_MATRIX = {"warm": 1.0, "cold": 10.0}


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


def report(
    label: str, name: str, figures: dict[str, float], budget: dict[str, float] | None = None
) -> None:
    budget = budget or {"warm": BUDGET[name]}

    def shown(kind: str) -> str:
        text = f"{kind} {figures[kind]:6.2f} s"
        if kind in budget:
            over = figures[kind] > budget[kind]
            text += f" ({f'OVER the {budget[kind]:.0f} s budget' if over else 'ok'})"
        return text

    print(f"{label:<22} {name:<15} " + "   ".join(shown(k) for k in ("warm", "cold", "uncached")))


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
            if "matrix --check" in commands:  # .ci_support as matrix writes it for recipe.yaml
                write = [sys.executable, "-m", "tools", *commands["matrix --check"][:-1], "--write"]
                subprocess.run(write, cwd=switched, check=True, capture_output=True)
            for name in ("explain", "render", "matrix --check"):
                if name not in commands:
                    continue
                figures = medians(switched, commands[name], args.repeat, scratch / "v1" / name)
                budget = SWITCHED_MATRIX if name == "matrix --check" else None
                report("switched (rattler-build)", name, figures, budget)
    return 0


if __name__ == "__main__":
    sys.exit(main())
