"""The toolkit's own render of meta.yaml for one CI config (conda-build's semantics).

``tools.render.config`` names the configs, keeps renders on disk and hands a meta.yaml feedstock's
config here on a cache miss (a v1 recipe goes to ``tools.render.v1``), so that a command
answered from the cache never imports the recipe model, jinja2 or the YAML loaders.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from tools.foundation.errors import UserError
from tools.foundation.files import read_user_file
from tools.recipe.errors import UndefinedName
from tools.recipe.evaluate import RecipeSource, Target
from tools.recipe.model import OutputVariant
from tools.recipe.model import render as render_variants
from tools.recipe.namespace import known_names
from tools.recipe.selectors import top_level_keys, unknown_selector_names
from tools.recipe.variant_config import (
    RERENDER,
    combine_specs,
    default_variant,
    ensure_list,
    explode,
    extend_keys_of,
    load_variant_yaml,
    parse_cbc,
    parse_variant_file,
    validate_spec,
)
from tools.render.output import ConfigRender, RenderedOutput


def load_recipe_source(recipe_dir: Path) -> RecipeSource:
    """meta.yaml plus every shell/batch script next to it (conda-build scans those)."""
    meta = recipe_dir / "meta.yaml"
    if not meta.is_file():
        raise UserError(
            f"{recipe_dir}: no meta.yaml here; pass --recipe-dir pointing at the recipe"
        )
    scripts = tuple(
        (p.relative_to(recipe_dir).as_posix(), read_user_file(p))
        for p in sorted(recipe_dir.rglob("*"))
        if p.is_file() and p.suffix in (".sh", ".bat")
    )
    return RecipeSource(meta_text=read_user_file(meta), scripts=scripts, path=str(meta))


def render_meta_config(
    path: Path, config_text: str, recipe_dir: Path, *, name: str, subdir: str, build_subdir: str
) -> ConfigRender:
    """Every output variant of meta.yaml in ``recipe_dir`` for the variant file ``path``, and
    a warning per selector name that nothing defines (a typo conda-build reads as false)."""
    config = parse_variant_file(config_text, str(path))
    cbc_path = recipe_dir / "conda_build_config.yaml"
    source = load_recipe_source(recipe_dir)
    cbc = read_user_file(cbc_path) if cbc_path.is_file() else None
    try:
        return _render_cached(
            source, config_text, cbc, str(path), str(cbc_path), name, subdir, build_subdir
        )
    except UndefinedName as exc:
        if exc.name in config or not _siblings_define(path, exc.name):
            raise  # the recipe's own mistake (a typo), not a gap in the variant file
        raise UserError(
            f"{path}: no {exc.name!r}, which {exc.where} uses and the other variant files "
            f"set; the variant file is incomplete: {RERENDER}"
        ) from None


def variants_for_config(
    config_text: str,
    recipe_cbc: str | None,
    *,
    config_source: str,
    cbc_source: str,
    subdir: str,
    build_subdir: str,
) -> list[dict[str, Any]]:
    """conda-build's variant set for ``-m config`` with the recipe's own cbc underneath."""
    specs: list[tuple[str, Mapping[str, Any]]] = [("defaults", default_variant(subdir))]
    if recipe_cbc is not None:
        specs.append(
            (cbc_source, parse_cbc(recipe_cbc, subdir, source=cbc_source, build_subdir=subdir))
        )
    specs.append(
        (config_source, parse_cbc(config_text, subdir, source=config_source, build_subdir=subdir))
    )
    for source, spec in specs:
        validate_spec(source, spec)
    combined = combine_specs(specs)
    exploded = explode(combined)
    extend = extend_keys_of([combined])
    seen: set[str] = set()
    for _, spec in reversed(specs[1:]):
        for key, values in spec.items():
            if key in extend or key in seen or isinstance(values, Mapping):
                continue
            allowed = ensure_list(values)
            kept = [x for x in exploded if x.get(key) is not None and x.get(key) in allowed]
            exploded = kept or exploded
            seen.add(key)
    return exploded


def _siblings_define(path: Path, key: str) -> bool:
    """Whether another variant file beside ``path`` sets ``key`` (read only on this error)."""
    for other in sorted(path.parent.glob("*.yaml")):
        if other.resolve() == path.resolve():
            continue
        try:
            data = load_variant_yaml(other.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError):
            continue
        if isinstance(data, dict) and key in data:
            return True
    return False


@lru_cache(maxsize=128)
def _render_cached(
    source: RecipeSource,
    config_text: str,
    cbc: str | None,
    config_source: str,
    cbc_source: str,
    name: str,
    subdir: str,
    build_subdir: str,
) -> ConfigRender:
    variants = variants_for_config(
        config_text,
        cbc,
        config_source=config_source,
        cbc_source=cbc_source,
        subdir=subdir,
        build_subdir=build_subdir,
    )
    data = load_variant_yaml(config_text, source=config_source) or {}
    config_keys = set(data) if isinstance(data, dict) else set()
    outputs = render_variants(source, variants, Target(subdir, build_subdir), ci_split=False)
    known = known_names(subdir, variants) | top_level_keys(cbc or "") | config_keys
    return ConfigRender(
        tuple(_public(o, name, subdir, build_subdir, config_keys) for o in outputs),
        tuple(u.message(source.path) for u in unknown_selector_names(source.meta_text, known)),
    )


def _public(
    out: OutputVariant, config: str, subdir: str, build_subdir: str, config_keys: set[str]
) -> RenderedOutput:
    keys = (set(out.used_vars) | config_keys) - {"zip_keys", "pin_run_as_build"}
    variant = {
        k: str(out.variant[k])
        for k in sorted(keys)
        if k in out.variant and not isinstance(out.variant[k], (dict, list))
    }
    return RenderedOutput(
        name=out.name,
        version=out.version,
        build_string=out.build_string,
        build_number=out.build_number,
        subdir="noarch" if out.noarch else subdir,
        skip=out.skip,
        requirements=dict(out.requirements),
        run_exports=dict(out.run_exports),
        tests=out.test,
        variant=variant,
        config=config,
        build_platform=build_subdir,
        noarch=out.noarch,
        script=out.script,
        used_vars=tuple(sorted(out.used_vars)),
        hash_input=dict(out.hash_input),
        skip_reason=out.skip_reason,
        ignore_run_exports=dict(out.ignore_run_exports),
        track_features=out.track_features,
    )
