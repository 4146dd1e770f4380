#!/usr/bin/env python3
"""Time rendering every .ci_support config: our toolkit, and real conda-build when present.

    python benchmarks/bench_render.py [--repeat N] [--oracle /tmp/oracle]

Ours: ``tools.render.render_config`` for every config, in a fresh process per repeat
(cold caches), best of N.  Real conda-build: ``/tmp/oracle/render.py`` (conda-build's
render API, smithy mode) once per config, when the offline setup described in
../shared/oracle/README.md exists; otherwise only our figure is printed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ONE_RUN = """
import sys, time
sys.path.insert(0, {repo!r})
start, cpu = time.perf_counter(), time.process_time()
from tools.render import list_configs, render_config
root = __import__("pathlib").Path({repo!r})
count = sum(len(render_config(c, root=root)) for c in list_configs(root))
print(time.perf_counter() - start, time.process_time() - cpu, count, len(list_configs(root)))
"""


def ours(repeat: int) -> tuple[float, float, int, int]:
    """Best wall-clock and CPU seconds over ``repeat`` cold processes (imports included)."""
    walls, cpus = [], []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", ONE_RUN.format(repo=str(REPO))],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        walls.append(float(out[0]))
        cpus.append(float(out[1]))
        outputs, configs = int(out[2]), int(out[3])
    return min(walls), min(cpus), outputs, configs


def conda_build(oracle: Path) -> float | None:
    python = oracle / "venv" / "bin" / "python"
    if not (oracle / "render.py").is_file() or not python.is_file():
        return None
    sys.path.insert(0, str(REPO))
    from tools.render import list_configs, render_config

    env = dict(
        os.environ,
        CONDARC=str(oracle / "condarc"),
        CONDA_OFFLINE="true",
        CONDA_SOLVER="classic",
        CONDA_PKGS_DIRS=str(oracle / "pkgs"),
        XDG_CACHE_HOME=str(oracle / "cache"),
    )
    total = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for index, config in enumerate(list_configs(REPO)):
            first = render_config(config, root=REPO)[0]
            args = [
                str(python),
                str(oracle / "render.py"),
                str(REPO / "recipe"),
                "-m",
                str(REPO / ".ci_support" / f"{config}.yaml"),
                "--target-platform",
                first.subdir,
                "--outdir",
                str(Path(tmp) / f"{index:03d}"),
            ]
            if first.build_platform != first.subdir:
                args += ["--build-platform", "native"]
            start = time.perf_counter()
            subprocess.run(args, env=env, capture_output=True, check=True)
            total += time.perf_counter() - start
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--oracle", type=Path, default=Path("/tmp/oracle"))
    args = parser.parse_args()
    wall, cpu, outputs, configs = ours(args.repeat)
    print(
        f"tools.render: {configs} configs, {outputs} output variants in {wall:.3f} s wall, "
        f"{cpu:.3f} s CPU (best of {args.repeat} cold processes, imports included)"
    )
    real = conda_build(args.oracle)
    if real is None:
        print(f"conda-build: not measured ({args.oracle} has no offline conda-build setup)")
    else:
        print(
            f"conda-build: {configs} configs in {real:.1f} s "
            f"({real / max(configs, 1):.1f} s per config)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
