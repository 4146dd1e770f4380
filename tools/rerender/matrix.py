"""Compute, write and check ``.ci_support/*.yaml`` the way ``conda smithy rerender`` does.

Per platform of conda-forge.yml: combine conda-build's defaults, the pinning's
conda_build_config.yaml and the recipe's; apply the CFEP-9 migrations; render the recipe
(``tools.recipe``); collapse the outputs' variants into CI jobs (``tools.smithy.jobs``);
dump each job's config in conda-smithy's YAML layout (keys sorted, lists in block style,
strings that YAML 1.1 would read as numbers or booleans single-quoted).

Files are replaced atomically (temporary file + rename); a config that is no longer
produced is removed only by ``--write``, and only if it is one of ours (``.yaml`` directly
under ``.ci_support``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.foundation import diskcache
from tools.foundation.errors import UserError
from tools.foundation.files import read_user_file
from tools.rerender.dump import files_of
from tools.rerender.pinning import (
    Pinning,
    check_pinning_has_migrated_keys,
    check_pinning_zip_keys,
    read_pinning,
)
from tools.smithy.forge import RATTLER_BUILD, read_forge_settings
from tools.smithy.forge_yml import load_forge_yml
from tools.smithy.jobs import CiJob, collapse, finalize_config, job_name, prune_spec
from tools.smithy.migrations import (
    MigrationPlan,
    apply_migrations,
    plan_migrations,
    read_migration_file,
)
from tools.smithy.overrides import Override, overrides
from tools.smithy.overrides import messages as override_messages


@dataclass(frozen=True)
class Matrix:
    jobs: tuple[CiJob, ...]
    migrations: MigrationPlan
    warnings: tuple[str, ...] = ()  # settings that do not do what they say (printed by matrix)
    # NAME.yaml (and README) -> the text .ci_support should hold: dumped once, kept on disk
    files: Mapping[str, str] = field(default_factory=dict)


def compute_matrix(root: Path, recipe_dir: Path, pinning: Pinning) -> Matrix:
    """The CI jobs, kept on disk (tools/foundation/diskcache.py) under everything they are computed
    from: conda-forge.yml, the recipe folder, the pinning and its migrations, the feedstock's
    own migrations, and the toolkit."""
    forge_data = load_forge_yml(root)
    forge = read_forge_settings(forge_data)
    if forge.build_tool == RATTLER_BUILD:
        # conda-smithy's rerender of a v1 recipe takes the keys each output uses from
        # rattler-build's render (rattler-build-conda-compat), not from conda-build's rules
        # reimplemented here: refused before anything is written (docs/rattler-build.md)
        raise UserError(
            f"{root / 'conda-forge.yml'}: conda_build_tool: rattler-build; matrix follows "
            "conda-build's rules for meta.yaml, while conda-smithy asks rattler-build which "
            "variant keys each output of recipe.yaml uses: regenerate .ci_support with "
            "`conda smithy rerender`"
        )
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
    matrix = diskcache.load(key)
    if matrix is None:
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
    from tools.recipe.variant_config import (
        combine_specs,
        default_variant,
        explode,
        parse_cbc,
        validate_spec,
    )
    from tools.render.meta import load_recipe_source

    forge = read_forge_settings(forge_data)
    source = load_recipe_source(recipe_dir)
    feedstock_name = _feedstock_name(root, forge_data, source.meta_text)
    cbc_path = recipe_dir / "conda_build_config.yaml"
    recipe_cbc = read_user_file(cbc_path) if cbc_path.is_file() else None
    local = [
        read_migration_file(p) for p in sorted((root / ".ci_support" / "migrations").glob("*.yaml"))
    ]
    upstream = (
        [read_migration_file(p) for p in sorted(pinning.migrations_dir.glob("*.yaml"))]
        if pinning.migrations_dir
        else None
    )
    plan = plan_migrations(local, upstream)
    cuda = uses_cuda_compiler(source.meta_text)
    # what selectors may read: every platform's variant keys, and the cbc files' keys
    known = set(top_level_keys(pinning_text) | top_level_keys(recipe_cbc or ""))
    jobs: list[CiJob] = []
    ignored: dict[str, tuple[Override, list[str]]] = {}  # recipe cbc keys the jobs do not get
    for plat in forge.platforms():
        subdir = plat.replace("_", "-")
        build = forge.build_of(plat).replace("_", "-")
        environ = {"BUILD_PLATFORM": build, "CONFIG_VERSION": "1"}
        if plat.startswith("linux") and forge.os_version.get(plat):
            environ["DEFAULT_LINUX_VERSION"] = forge.os_version[plat]
        if cuda:
            environ["CF_CUDA_ENABLED"] = "True"
        specs: list[tuple[str, Mapping[str, Any]]] = [("defaults", default_variant(subdir))]
        specs.append(
            (
                str(pinning.cbc),
                parse_cbc(pinning_text, subdir, source=str(pinning.cbc), environ=environ),
            )
        )
        if recipe_cbc is not None:
            specs.append(
                (
                    str(cbc_path),
                    parse_cbc(recipe_cbc, subdir, source=str(cbc_path), environ=environ),
                )
            )
        check_pinning_zip_keys(str(pinning.cbc), specs[1][1])
        for name, spec in specs:
            validate_spec(name, spec)
        combined = combine_specs(specs)
        migrations = [
            (str(p), parse_cbc(read_user_file(p), subdir, source=str(p), environ=environ))
            for p in plan.apply
        ]
        recipe_spec = specs[2][1] if len(specs) > 2 else {}
        check_pinning_has_migrated_keys(str(pinning.cbc), specs[1][1], recipe_spec, migrations)
        migrated = apply_migrations(combined, migrations)
        for override in overrides(recipe_spec, combined, migrations, migrated):
            ignored.setdefault(override.key, (override, []))[1].append(subdir)
        # conda-smithy renders with the migrated spec only (the recipe cbc is moved aside),
        # on top of conda-build's defaults again.
        final = combine_specs([("defaults", default_variant(subdir)), ("migrated", migrated)])
        final = prune_spec(final, [source.meta_text, *(body for _, body in source.scripts)])
        variant_list = explode(final)
        known |= known_names(subdir, variant_list)
        if not variant_list:
            continue
        outputs = render_variants(source, variant_list, Target(subdir, subdir, environ))
        outputs = [o for o in outputs if not o.skip and not o.noarch]
        if not outputs:
            continue
        configs, loop_vars = collapse(
            outputs, variant_list, github_actions=forge.github_actions, recipe_text=source.meta_text
        )
        for config in configs:
            names = job_name(plat, config, loop_vars, feedstock_name)
            final_config = finalize_config(config, build, forge.fallback_image)
            jobs.append(
                CiJob(
                    names.name,
                    names.short,
                    final_config.get("target_platform", [subdir])[0],
                    build,
                    tuple(sorted(loop_vars)),
                    final_config,
                )
            )
    ordered = tuple(sorted(jobs, key=lambda j: j.name))
    unknown = unknown_selector_names(source.meta_text, known)
    warnings = (
        *forge.ignored_provider_lines(),
        *(u.message(source.path) for u in unknown),
        *override_messages(cbc_path, recipe_cbc or "", ignored),
    )
    return Matrix(ordered, plan, warnings, files_of(ordered))


def _feedstock_name(root: Path, forge_data: Mapping[str, Any], meta_text: str) -> str:
    """extra.feedstock-name, else the package name -- what conda-smithy names the repo after."""
    import re

    match = re.search(r"(?m)^\s*feedstock-name:\s*['\"]?([\w.-]+)", meta_text)
    if match:
        return match.group(1)
    match = re.search(r"(?ms)^package:\s*\n\s+name:\s*['\"]?([\w.{}\s-]+?)['\"]?\s*$", meta_text)
    name = match.group(1).strip() if match else root.name.removesuffix("-feedstock")
    return name if "{" not in name else root.name.removesuffix("-feedstock")
