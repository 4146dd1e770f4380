#!/usr/bin/env python3
"""Time rendering every .ci_support config: meta.yaml with our toolkit, the v1 recipe with
rattler-build, and meta.yaml with real conda-build when present.

    python benchmarks/bench_render.py [--repeat N] [--oracle /tmp/oracle]

Ours: ``tools.render.config.render_config`` for every config, in a fresh process per repeat
(cold caches, the disk cache off: benchmarks/bench_commands.py times the commands with it),
best of N.  The v1 recipe (recipe/recipe-v1.yaml, or recipe/recipe.yaml once
the feedstock is switched): the same call on a copy of the feedstock switched to rattler-build
(``conda_build_tool: rattler-build``), so py-rattler-build renders it and tools/render/v1.py
makes the records; beside it, py-rattler-build's render alone (no records), to show what the
records cost.  Real conda-build: ``/tmp/oracle/render.py`` (conda-build's render API, smithy
mode) once per config, when the offline setup described in ../shared/oracle/README.md
exists; otherwise only our figures are printed.
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
ONE_RUN = """
import sys, time
sys.path.insert(0, {repo!r})
start, cpu = time.perf_counter(), time.process_time()
from tools.render.config import list_configs, render_config
root = __import__("pathlib").Path({repo!r})
count = sum(len(render_config(c, root=root)) for c in list_configs(root))
print(time.perf_counter() - start, time.process_time() - cpu, count, len(list_configs(root)))
"""


# py-rattler-build alone: the variant files rattler-build's CLI reads, then render
RATTLER_ONLY = """
import sys, time
sys.path.insert(0, {repo!r})
start, cpu = time.perf_counter(), time.process_time()
from pathlib import Path
from rattler_build import JinjaConfig, PlatformConfig, RenderConfig, Stage0Recipe, VariantConfig
from tools.render.config import build_platform_for, list_configs, load_forge_yml
from tools.recipe.variant_config import load_variant_yaml
root = Path({repo!r})
forge = load_forge_yml(root)
count = 0
for config in list_configs(root):
    path = root / ".ci_support" / (config + ".yaml")
    target = load_variant_yaml(path.read_text(), source=str(path))["target_platform"][0]
    platform = PlatformConfig(
        target_platform=target, build_platform=build_platform_for(forge, target)
    )
    files = [root / "recipe" / "conda_build_config.yaml", path]
    variants = VariantConfig.from_files_with_context(files, JinjaConfig(platform=platform))
    recipe = Stage0Recipe.from_file(root / "recipe" / "recipe.yaml")
    count += len(recipe.render(variants, RenderConfig(platform=platform)))
print(time.perf_counter() - start, time.process_time() - cpu, count, len(list_configs(root)))
"""


def v1_recipe(repo: Path) -> Path | None:
    for name in ("recipe.yaml", "recipe-v1.yaml"):
        if (repo / "recipe" / name).is_file():
            return repo / "recipe" / name
    return None


def switched_copy(repo: Path, into: Path) -> Path:
    """The feedstock as a maintainer switches it: recipe.yaml, no meta.yaml, rattler-build."""
    root = into / "switched"
    shutil.copytree(repo / "recipe", root / "recipe")
    shutil.copytree(repo / ".ci_support", root / ".ci_support")
    shutil.copy2(repo / "README.md", root / "README.md")  # its CI-job table
    (root / "recipe" / "meta.yaml").unlink(missing_ok=True)
    recipe = v1_recipe(repo)
    assert recipe is not None
    if recipe.name != "recipe.yaml":
        (root / "recipe" / recipe.name).rename(root / "recipe" / "recipe.yaml")
    forge = [
        line
        for line in (repo / "conda-forge.yml").read_text().splitlines()
        if not line.startswith("conda_build_tool:")
    ]
    (root / "conda-forge.yml").write_text("\n".join([*forge, "conda_build_tool: rattler-build"]))
    return root


def ours(repeat: int, root: Path = REPO, script: str = ONE_RUN) -> tuple[float, float, int, int]:
    """Best wall-clock and CPU seconds over ``repeat`` cold processes (imports included)."""
    walls, cpus = [], []
    env = {**os.environ, "PYTORCH_FEEDSTOCK_CACHE": "off"}  # time renders, not cache reads
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", script.format(repo=str(root))],
            env=env,
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
    from tools.render.config import list_configs, render_config

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
        f"tools.render.config, meta.yaml: {configs} configs, {outputs} output variants in "
        f"{wall:.3f} s wall, {cpu:.3f} s CPU (best of {args.repeat} cold processes, "
        "imports included)"
    )
    if v1_recipe(REPO) is None:
        print("rattler-build: not measured (no recipe/recipe-v1.yaml or recipe/recipe.yaml)")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            root = switched_copy(REPO, Path(tmp))
            wall, cpu, outputs, configs = ours(args.repeat, root)
            print(
                f"tools.render.config, v1 recipe through rattler-build: {configs} configs, "
                f"{outputs} output variants in {wall:.3f} s wall, {cpu:.3f} s CPU "
                f"(best of {args.repeat})"
            )
            wall, cpu, rendered, configs = ours(args.repeat, root, RATTLER_ONLY)
            print(
                f"py-rattler-build's render alone: {configs} configs, {rendered} rendered "
                f"variants (before de-duplication) in {wall:.3f} s wall, {cpu:.3f} s CPU "
                f"(best of {args.repeat})"
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
