"""Compute, write and check ``.ci_support/*.yaml`` the way ``conda smithy rerender`` does.

Per platform of conda-forge.yml: combine conda-build's defaults, the pinning's
conda_build_config.yaml and the recipe's; apply the CFEP-9 migrations (platforms.py); render
meta.yaml (``tools.recipe``), or a switched feedstock's recipe.yaml with rattler-build (v1.py);
collapse the outputs' variants into CI jobs (``tools.smithy.jobs``);
dump each job's config in conda-smithy's YAML layout (keys sorted, lists in block style,
strings that YAML 1.1 would read as numbers or booleans single-quoted).

Files are replaced atomically (temporary file + rename); a config that is no longer
produced is removed only by ``--write``, and only if it is one of ours (``.yaml`` directly
under ``.ci_support``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tools.foundation import diskcache
from tools.rerender.dump import files_of
from tools.rerender.jobs import Matrix, ci_jobs
from tools.rerender.pinning import Pinning, read_pinning
from tools.rerender.platforms import SpecInputs
from tools.rerender.v1 import check_v1_recipe, compute_v1_matrix
from tools.smithy.forge import RATTLER_BUILD, read_forge_settings
from tools.smithy.forge_yml import load_forge_yml
from tools.smithy.jobs import CiJob, collapse, prune_spec


def compute_matrix(root: Path, recipe_dir: Path, pinning: Pinning) -> Matrix:
    """The CI jobs, kept on disk (tools/foundation/diskcache.py) under everything they are computed
    from: conda-forge.yml, the recipe folder, the pinning and its migrations, the feedstock's
    own migrations, and the toolkit (py-rattler-build's version among its libraries)."""
    forge_data = load_forge_yml(root)
    v1 = read_forge_settings(forge_data).build_tool == RATTLER_BUILD
    if v1:
        check_v1_recipe(root, recipe_dir)  # before anything is read or written
    pinning_text = read_pinning(pinning)  # refuses a binary or huge file before hashing it
    key = (
        diskcache.Key("matrix")
        .add("root", str(root))
        .add_files("forge", [root / "conda-forge.yml"])
        .add_tree("recipe", recipe_dir)
        .add("pinning-path", str(pinning.cbc))
        .add("pinning", pinning_text)
        .add_tree("pinning-migrations", pinning.migrations_dir or root / "-")
        .add_tree("migrations", root / ".ci_support" / "migrations")
    )
    if v1:
        from tools.render.config import add_environment_read

        add_environment_read(key, recipe_dir / "recipe.yaml")
    matrix = diskcache.load(key)
    if matrix is None:
        if v1:
            matrix = compute_v1_matrix(root, recipe_dir, pinning, pinning_text, forge_data)
        else:
            matrix = _compute_matrix(root, recipe_dir, pinning, pinning_text, forge_data)
        diskcache.store(key, matrix)
    return matrix


def _compute_matrix(
    root: Path, recipe_dir: Path, pinning: Pinning, pinning_text: str, forge_data: Mapping[str, Any]
) -> Matrix:
    # the recipe model is imported only when the matrix is not on disk yet
    from tools.recipe.evaluate import Target
    from tools.recipe.model import render as render_variants
    from tools.recipe.namespace import known_names
    from tools.recipe.selectors import top_level_keys, unknown_selector_names
    from tools.recipe.text import uses_cuda_compiler
    from tools.recipe.variant_config import combine_specs, default_variant, explode
    from tools.render.meta import load_recipe_source

    forge = read_forge_settings(forge_data)
    source = load_recipe_source(recipe_dir)
    feedstock_name = _feedstock_name(root, forge_data, source.meta_text)
    inputs = SpecInputs(
        root, recipe_dir, pinning, pinning_text, uses_cuda_compiler(source.meta_text)
    )
    # what selectors may read: every platform's variant keys, and the cbc files' keys
    known = set(top_level_keys(pinning_text) | top_level_keys(inputs.recipe_cbc or ""))
    jobs: list[CiJob] = []
    for plat in forge.platforms():
        spec = inputs.for_platform(forge, plat)
        subdir, build = spec.subdir, spec.build
        # conda-smithy renders with the migrated spec only (the recipe cbc is moved aside),
        # on top of conda-build's defaults again.
        final = combine_specs([("defaults", default_variant(subdir)), ("migrated", spec.migrated)])
        final = prune_spec(final, [source.meta_text, *(body for _, body in source.scripts)])
        variant_list = explode(final)
        known |= known_names(subdir, variant_list)
        if not variant_list:
            continue
        outputs = render_variants(source, variant_list, Target(subdir, subdir, spec.environ))
        keep_noarch = plat in forge.noarch_platforms
        outputs = [o for o in outputs if not o.skip and (keep_noarch or not o.noarch)]
        if not outputs:
            continue
        configs, loop_vars = collapse(
            outputs,
            variant_list,
            github_actions=forge.github_actions,
            noarch_only=all(o.noarch for o in outputs),
            recipe_text=source.meta_text,
        )
        jobs.extend(ci_jobs(plat, build, configs, loop_vars, feedstock_name, forge))
    ordered = tuple(sorted(jobs, key=lambda j: j.name))
    unknown = unknown_selector_names(source.meta_text, known)
    warnings = (
        *forge.ignored_provider_lines(),
        *(u.message(source.path) for u in unknown),
        *inputs.warnings(),
    )
    return Matrix(ordered, inputs.plan, warnings, files_of(ordered))


def _feedstock_name(root: Path, forge_data: Mapping[str, Any], meta_text: str) -> str:
    """extra.feedstock-name, else the package name -- what conda-smithy names the repo after."""
    import re

    match = re.search(r"(?m)^\s*feedstock-name:\s*['\"]?([\w.-]+)", meta_text)
    if match:
        return match.group(1)
    match = re.search(r"(?ms)^package:\s*\n\s+name:\s*['\"]?([\w.{}\s-]+?)['\"]?\s*$", meta_text)
    name = match.group(1).strip() if match else root.name.removesuffix("-feedstock")
    return name if "{" not in name else root.name.removesuffix("-feedstock")
