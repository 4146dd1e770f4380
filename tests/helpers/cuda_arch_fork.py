"""A lab's fork of the recipe, as the CUDA-arch tests make one: a copy of recipe/ whose row for
one CUDA config of .ci_support is cut to one architecture, that config with ``cuda_arch_set``
set, and both recipes' outputs for it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from helpers import feedstock_matrix
from ruamel.yaml import YAML

from tools.render.config import render_config

REPO = Path(__file__).resolve().parent.parent.parent
ARCH_LISTS = REPO / "recipe" / "cuda_arch_lists.txt"


def values_of(config: Path) -> dict:
    return YAML(typ="safe").load(config.read_text())


def cuda_config() -> Path:
    """The first linux-64 CUDA config of .ci_support (the matrix decides which)."""
    config = feedstock_matrix.need(platform="linux-64", cuda=True)
    return REPO / ".ci_support" / f"{config.name}.yaml"


# a config's own cuda_arch_set entry (a fork's), replaced when a test tailors it
_OWN_SET = re.compile(r"^cuda_arch_set:\n(?:- .*\n)*", flags=re.MULTILINE)


def tailored_fork(tmp_path: Path, arch_set: str, one_arch: str | None = "9.0") -> tuple[Path, Path]:
    """A recipe copy whose row for the config is ``one_arch`` (None: conda-forge's row
    kept), and the config with ``cuda_arch_set: [arch_set]``."""
    config = cuda_config()
    cuda = str(values_of(config)["cuda_compiler_version"][0])
    recipe = shutil.copytree(REPO / "recipe", tmp_path / "recipe")
    if one_arch is not None:
        (recipe / "cuda_arch_lists.txt").write_text(f"{cuda} linux-64 {one_arch}\n")
    text = _OWN_SET.sub("", config.read_text()) + f"cuda_arch_set:\n- {arch_set}\n"
    tailored = tmp_path / config.name
    tailored.write_text(text)
    return recipe, tailored


def meta_outputs(recipe: Path, config: Path) -> list:
    """The outputs meta.yaml in ``recipe`` builds for the linux-64 ``config`` (skips left out)."""
    return [o for o in render_config(config, root=REPO, recipe_dir=recipe) if not o.skip]


def v1_outputs(recipe: Path, config: Path) -> list:
    """The outputs recipe-v1.yaml in ``recipe`` builds for the linux-64 ``config``."""
    from tools.render.v1 import render_v1_config

    return render_v1_config(
        recipe / "recipe-v1.yaml",
        config,
        cbc=recipe / "conda_build_config.yaml",
        name=config.stem,
        subdir="linux-64",
        build_subdir="linux-64",
    )
