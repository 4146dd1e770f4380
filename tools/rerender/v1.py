"""The CI jobs of a feedstock switched to rattler-build, as ``conda smithy rerender`` computes them
for ``recipe/recipe.yaml`` (conda-smithy 2026.8.5, ``configure_feedstock.py``).

Per platform, ``_render_ci_provider`` takes the same migrated spec as for meta.yaml
(platforms.py) and calls rattler-build-conda-compat's ``render`` with it: compat's
``render_recipes`` runs ``rattler-build build --render-only`` with the whole spec as the one
variant file, the build platform equal to the target (the recipe's conda_build_config.yaml is
moved aside meanwhile), and turns each package rattler-build lists into a MetaData whose used
keys are the package's ``build_configuration.variant`` (tools/smithy/compat.py). Here
py-rattler-build renders (:func:`render_packages`), the same library the CLI runs. Then
smithy's own steps, as for meta.yaml: the metas sorted by ``dist``,
``_collapse_subpackage_variants`` with ``_get_used_key_values_by_input_order`` and the zip-key
and pin_run_as_build trimming (tools/smithy/jobs.py, the input order being the first meta's
``input_variants``), and ``dump_subspace_config_files``' names and ``finalize_config``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.foundation.errors import UserError
from tools.rerender.jobs import Matrix, ci_jobs
from tools.rerender.pinning import Pinning
from tools.rerender.platforms import PlatformSpec
from tools.smithy.compat import RenderedPackage
from tools.smithy.forge import ForgeSettings
from tools.smithy.jobs import CiJob


def check_v1_recipe(root: Path, recipe_dir: Path) -> Path:
    """``recipe/recipe.yaml``, alone: conda-smithy reads that name for ``conda_build_tool:
    rattler-build`` and its linter refuses a folder that also holds a meta.yaml."""
    from tools.render.config import v1_recipe_file

    recipe = v1_recipe_file(recipe_dir)
    if (recipe_dir / "meta.yaml").is_file():
        raise UserError(
            f"{recipe_dir}: holds both meta.yaml and recipe.yaml; conda-forge.yml says "
            "conda_build_tool: rattler-build, which builds recipe.yaml: `git rm` meta.yaml "
            "(or use `python -m tools switch --to rattler-build`, which moves both)"
        )
    return recipe


def render_packages(recipe: Path, spec: Mapping[str, Any], subdir: str) -> list[RenderedPackage]:
    """What ``rattler-build build --render-only --recipe DIR --target-platform SUBDIR
    --build-platform SUBDIR -m SPEC`` lists: one entry per package (name and build string),
    its used variant, and the outputs rendered before it and itself (the CLI's
    ``subpackages``, which it fills in rendering order and compat drops from the used keys)."""
    import yaml
    from rattler_build import (
        PlatformConfig,
        RattlerBuildError,
        RenderConfig,
        Stage0Recipe,
        VariantConfig,
    )

    from tools.render.v1 import one_line_error

    # compat dumps the spec to a file (a variant file in rattler-build's own format); every
    # value is a string there, quoted where YAML would read another type
    variants = VariantConfig.from_yaml(yaml.safe_dump(dict(spec), sort_keys=False))
    platform = PlatformConfig(target_platform=subdir, build_platform=subdir)
    try:
        rendered = Stage0Recipe.from_file(recipe).render(variants, RenderConfig(platform=platform))
    except RattlerBuildError as exc:
        raise UserError(one_line_error(recipe, exc)) from None
    rendered_so_far: list[str] = []
    packages: dict[tuple[str, str], RenderedPackage] = {}
    for variant in rendered:
        recipe_dict = variant.recipe.to_dict()
        name = str(recipe_dict["package"]["name"])
        if name not in rendered_so_far:
            rendered_so_far.append(name)
        build = recipe_dict.get("build") or {}
        key = (name, str(build.get("string") or ""))
        if key in packages:
            continue
        extra = recipe_dict.get("extra") or {}
        packages[key] = RenderedPackage(
            name=name,
            version=str(recipe_dict["package"]["version"]),
            build_string=key[1],
            noarch=bool(build.get("noarch")),
            variant={str(k): str(v) for k, v in variant.variant.items()},
            subpackages=tuple(rendered_so_far),
            feedstock_name=str(extra["feedstock-name"]) if extra.get("feedstock-name") else None,
        )
    return list(packages.values())


def compute_v1_matrix(
    root: Path, recipe_dir: Path, pinning: Pinning, pinning_text: str, forge_data: Mapping[str, Any]
) -> Matrix:
    from tools.foundation.parallel import map_in_processes
    from tools.recipe.text import uses_cuda_compiler
    from tools.rerender.dump import files_of
    from tools.rerender.platforms import SpecInputs
    from tools.smithy.forge import read_forge_settings

    forge = read_forge_settings(forge_data)
    recipe = check_v1_recipe(root, recipe_dir)
    text = recipe.read_text(encoding="utf-8")
    variants_file = recipe_dir / "variants.yaml"
    inputs = SpecInputs(
        root,
        recipe_dir,
        pinning,
        pinning_text,
        uses_cuda_compiler(text),
        variants_file if variants_file.is_file() else None,
    )
    tasks = [
        _Platform(recipe, text, inputs.for_platform(forge, p), forge) for p in forge.platforms()
    ]
    jobs = [job for found in map_in_processes(_platform_jobs, tasks) for job in found]
    ordered = tuple(sorted(jobs, key=lambda j: j.name))
    warnings = (*forge.ignored_provider_lines(), *inputs.warnings())
    return Matrix(ordered, inputs.plan, warnings, files_of(ordered))


@dataclass(frozen=True)
class _Platform:
    """One platform's share of the work, as a worker process gets it."""

    recipe: Path
    text: str
    spec: PlatformSpec
    forge: ForgeSettings


def _platform_jobs(task: _Platform) -> list[CiJob]:
    """One platform's CI jobs: rattler-build's render, compat's metas, smithy's split."""
    from tools.smithy.compat import compat_metas, feedstock_name
    from tools.smithy.jobs import collapse

    spec = task.spec
    packages = render_packages(task.recipe, spec.migrated, spec.subdir)
    keep_noarch = spec.platform in task.forge.noarch_platforms
    metas = compat_metas(packages, spec.migrated, spec.subdir, keep_noarch=keep_noarch)
    if not metas:
        return []  # rattler-build renders no package here: no job
    configs, loop_vars = collapse(
        metas,
        metas[0].input_variants,
        github_actions=task.forge.github_actions,
        noarch_only=all(m.noarch for m in metas),
        recipe_text=task.text,
    )
    return ci_jobs(spec.platform, spec.build, configs, loop_vars, feedstock_name(metas), task.forge)
