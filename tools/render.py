"""Public render API: what one CI job (a ``.ci_support`` config) builds.

``render_config(config)`` does what ``conda-build recipe -m .ci_support/<config>.yaml``
does before it starts compiling: combine conda-build's defaults, the recipe's
``conda_build_config.yaml`` and the config file; explode the variants; and render every
output for every variant it distributes to (each Python of a megabuild, magma and
nomagma, ...).  The target platform is the config's ``target_platform``; the build
platform comes from conda-forge.yml ``build_platform`` (so ``linux-aarch64`` renders as
the cross build CI runs).

Build strings carry conda-build's real hash: sha1 over the JSON of the used variant keys
(conda-build's ``hash_input``), first 7 hex digits.  ``pin_subpackage`` is resolved as
conda-build's final render resolves it (``exact=True`` -> ``name version build_string``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from tools import selection
from tools.errors import UserError
from tools.files import load_yaml_text, read_user_file, safe_yaml
from tools.recipe.errors import UndefinedName
from tools.recipe.evaluate import RecipeSource, Target
from tools.recipe.model import OutputVariant
from tools.recipe.model import render as render_variants
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
from tools.rendered import REQUIREMENT_KINDS, RenderedOutput
from tools.repo import find_root
from tools.smithy.forge import uses_rattler_build

__all__ = ["REQUIREMENT_KINDS", "RenderedOutput", "render_config"]

# -- reading the recipe ------------------------------------------------------------------------


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


def v1_recipe_file(recipe_dir: Path) -> Path:
    """The v1 recipe of a feedstock switched to rattler-build: ``recipe.yaml``, the one name
    conda-smithy and ``rattler-build build --recipe DIR`` look for."""
    path = recipe_dir / "recipe.yaml"
    if not path.is_file():
        raise UserError(
            f"{recipe_dir}: conda-forge.yml says conda_build_tool: rattler-build, but there is "
            "no recipe.yaml here; move the v1 recipe there "
            '(docs/rattler-build.md, "Building with rattler-build") '
            "or set conda_build_tool: conda-build"
        )
    return path


def load_forge_yml(root: Path) -> dict[str, Any]:
    path = root / "conda-forge.yml"
    if not path.is_file():
        return {}
    return dict(_parse_forge_yml(str(path), read_user_file(path)))


@lru_cache(maxsize=8)
def _parse_forge_yml(path: str, text: str) -> dict[str, Any]:
    data = load_yaml_text(text, path, safe_yaml) or {}
    if not isinstance(data, dict):
        raise UserError(f"{path}: must be a mapping")
    return data


def build_platform_for(forge: Mapping[str, Any], subdir: str) -> str:
    mapping = forge.get("build_platform") or {}
    value = mapping.get(subdir.replace("-", "_")) if isinstance(mapping, Mapping) else None
    if not value:
        return subdir
    return checked_subdir(str(value).replace("_", "-"), "conda-forge.yml build_platform")


_SUBDIR = re.compile(r"^[a-z0-9]+-[a-z0-9_]+$")


def checked_subdir(value: str, source: str) -> str:
    """A conda subdir (``linux-64``, ``osx-arm64``), or a UserError naming where it came from."""
    if not _SUBDIR.match(value):
        raise UserError(f"{source}: {value!r} is not a conda platform such as linux-64")
    return value


# -- configs -------------------------------------------------------------------------------------


def list_configs(root: Path | None = None) -> list[str]:
    """Names (without .yaml) of the CI configs in ``<root>/.ci_support``."""
    root = root or find_root()
    folder = root / ".ci_support"
    return sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []


def config_labels(root: Path, names: Sequence[str] | None = None) -> dict[str, str]:
    """name -> label of the configs in ``<root>/.ci_support`` (tools/selection.py)."""
    return selection.read_labels(
        root / ".ci_support", list_configs(root) if names is None else names
    )


def is_variant_file(config: str | Path) -> bool:
    """A variant YAML file given by path (it may live outside ``.ci_support``)."""
    candidate = Path(config)
    return candidate.suffix in (".yaml", ".yml") and candidate.is_file()


def resolve_config(config: str | Path, root: Path) -> Path:
    """The variant file of one config: a path to a YAML file, or a name as
    tools/selection.py reads it (full name, NAME.yaml, label, unique prefix, glob)."""
    if is_variant_file(config):
        return Path(config)
    available = list_configs(root)
    name = selection.normalize(str(config))
    if name not in available:  # the labels cost a read of every config; a full name needs none
        name = selection.select_one(available, str(config), labels=config_labels(root, available))
    return root / ".ci_support" / f"{name}.yaml"


def select_configs(
    texts: Sequence[str], root: Path, *, filter_glob: str | None = None
) -> list[str | Path]:
    """Every config ``texts`` name, in order: variant files as paths, the rest as names
    (globs take every match); with no texts, every config ``--filter`` leaves."""
    available = list_configs(root)
    labels = config_labels(root, available)
    if not texts:
        return list(selection.select_many(available, (), filter_glob=filter_glob, labels=labels))
    chosen: list[str | Path] = []
    for text in texts:
        if is_variant_file(text):
            found: Sequence[str | Path] = [Path(text)]
        else:
            found = selection.select_many(available, [text], filter_glob=filter_glob, labels=labels)
        chosen.extend(item for item in found if item not in chosen)
    return chosen


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


def _subdir_of(config_text: str, source: str, name: str) -> str:
    data = load_variant_yaml(config_text, source=source) or {}
    target = data.get("target_platform") if isinstance(data, dict) else None
    if isinstance(target, list) and target:
        return checked_subdir(str(target[0]), f"{source}: target_platform")
    if isinstance(target, str) and target:
        return checked_subdir(target, f"{source}: target_platform")
    parts = name.split("_")
    if len(parts) >= 2 and parts[0] in ("linux", "osx", "win"):
        return f"{parts[0]}-{parts[1]}"
    raise UserError(f"{source}: set target_platform (e.g. target_platform: [linux-64])")


def render_config(
    config: str | Path, *, root: Path | None = None, recipe_dir: Path | None = None
) -> list[RenderedOutput]:
    """Every output variant the CI job ``config`` builds, skipped ones included (``skip``)."""
    root = root or find_root()
    path = resolve_config(config, root)
    return render_config_text(path, read_user_file(path), root=root, recipe_dir=recipe_dir)


def render_config_text(
    path: Path, config_text: str, *, root: Path | None = None, recipe_dir: Path | None = None
) -> list[RenderedOutput]:
    """``render_config`` of a variant file's text, which need not be on disk yet (what
    ``matrix`` is about to write)."""
    root = root or find_root()
    recipe_dir = recipe_dir or root / "recipe"
    forge = load_forge_yml(root)
    config = parse_variant_file(config_text, str(path))
    cbc_path = recipe_dir / "conda_build_config.yaml"
    name = path.stem
    subdir = _subdir_of(config_text, str(path), name)
    build_subdir = build_platform_for(forge, subdir)
    if uses_rattler_build(forge):
        from tools.render_v1 import render_v1_config

        return list(
            render_v1_config(
                v1_recipe_file(recipe_dir),
                path,
                cbc=cbc_path if cbc_path.is_file() else None,
                name=name,
                subdir=subdir,
                build_subdir=build_subdir,
            )
        )
    source = load_recipe_source(recipe_dir)
    cbc = read_user_file(cbc_path) if cbc_path.is_file() else None
    try:
        rendered = _render_cached(
            source, config_text, cbc, str(path), str(cbc_path), name, subdir, build_subdir
        )
    except UndefinedName as exc:
        if exc.name in config or not _siblings_define(path, exc.name):
            raise  # the recipe's own mistake (a typo), not a gap in the variant file
        raise UserError(
            f"{path}: no {exc.name!r}, which {exc.where} uses and the other variant files "
            f"set; the variant file is incomplete: {RERENDER}"
        ) from None
    return list(rendered)


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
) -> tuple[RenderedOutput, ...]:
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
    return tuple(_public(o, name, subdir, build_subdir, config_keys) for o in outputs)


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
    )


@dataclass(frozen=True)
class SourceIdentity:
    """The version a recipe builds and the sha256 of each source it downloads."""

    version: str
    sha256: tuple[str, ...]


def source_identity(
    config: str | Path,
    *,
    root: Path | None = None,
    recipe_dir: Path | None = None,
    meta_text: str | None = None,
    meta_path: str | None = None,
) -> SourceIdentity:
    """``package.version`` and ``source.sha256`` of meta.yaml rendered for the first variant of
    ``config``; ``meta_text`` renders another revision of meta.yaml (say git HEAD's) the same
    way, with the same variant."""
    from tools.recipe.evaluate import Recipe

    root = root or find_root()
    recipe_dir = recipe_dir or root / "recipe"
    path = resolve_config(config, root)
    source = load_recipe_source(recipe_dir)
    if meta_text is not None:
        source = RecipeSource(meta_text, source.scripts, meta_path or source.path)
    cbc_path = recipe_dir / "conda_build_config.yaml"
    config_text = read_user_file(path)
    subdir = _subdir_of(config_text, str(path), path.stem)
    target = Target(subdir, build_platform_for(load_forge_yml(root), subdir))
    variants = variants_for_config(
        config_text,
        read_user_file(cbc_path) if cbc_path.is_file() else None,
        config_source=str(path),
        cbc_source=str(cbc_path),
        subdir=subdir,
        build_subdir=target.build,
    )
    parsed = Recipe(source, target).parse(variants[0]) if variants else {}
    package = parsed.get("package") or {}
    sources = parsed.get("source") or []
    sources = sources if isinstance(sources, list) else [sources]
    return SourceIdentity(
        str(package.get("version", "")),
        tuple(str(s["sha256"]) for s in sources if isinstance(s, Mapping) and s.get("sha256")),
    )
