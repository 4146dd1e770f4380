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

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tools.foundation import diskcache, selection
from tools.foundation.errors import UserError
from tools.foundation.files import read_user_file
from tools.foundation.repo import find_root
from tools.render.output import REQUIREMENT_KINDS, ConfigRender, RenderedOutput
from tools.smithy.forge import uses_rattler_build
from tools.smithy.forge_yml import load_forge_yml

__all__ = ["REQUIREMENT_KINDS", "RenderedOutput", "load_forge_yml", "render_config"]

# -- reading the recipe ------------------------------------------------------------------------


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


def build_platform_for(forge: Mapping[str, Any], subdir: str) -> str:
    mapping = forge.get("build_platform") or {}
    value = mapping.get(subdir.replace("-", "_")) if isinstance(mapping, Mapping) else None
    if not value:
        return subdir
    return checked_subdir(str(value).replace("_", "-"), "conda-forge.yml build_platform")


_ENV_READ = re.compile(r"""env\.(?:get|exists)\(\s*["']([^"']+)["']""")

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
    """name -> label of the configs in ``<root>/.ci_support`` (tools/foundation/selection.py),
    kept on disk under the variant files' contents (reading them all is most of a cached
    explain)."""
    folder = root / ".ci_support"
    names = list_configs(root) if names is None else list(names)
    key = diskcache.Key("labels").add_files("config", [folder / f"{n}.yaml" for n in names])
    labels = diskcache.load(key)
    if labels is None:
        labels = selection.read_labels(folder, names)
        diskcache.store(key, labels)
    return labels


def is_variant_file(config: str | Path) -> bool:
    """A variant YAML file given by path (it may live outside ``.ci_support``)."""
    candidate = Path(config)
    return candidate.suffix in (".yaml", ".yml") and candidate.is_file()


def check_not_missing_file(text: str | Path, available: Sequence[str]) -> None:
    """A YAML path with a folder (``/tmp/nope.yaml``) that names no file and no config is a
    mistyped variant-file path: "no such file", not the closest config names."""
    path = Path(text)
    if (
        path.suffix in (".yaml", ".yml")
        and len(path.parts) > 1
        and not any(c in str(text) for c in "*?[")
        and not path.exists()
        and selection.normalize(str(text)) not in available
    ):
        raise UserError(
            f"{text}: no such file; give the path of a variant file, or a config name "
            "(`python -m tools explain` lists them)"
        )


def resolve_config(config: str | Path, root: Path) -> Path:
    """The variant file of one config: a path to a YAML file, or a name as
    tools/foundation/selection.py reads it (full name, NAME.yaml, label, unique prefix, glob)."""
    if is_variant_file(config):
        return Path(config)
    available = list_configs(root)
    check_not_missing_file(config, available)
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
        check_not_missing_file(text, available)
        if is_variant_file(text):
            found: Sequence[str | Path] = [Path(text)]
        else:
            found = selection.select_many(available, [text], filter_glob=filter_glob, labels=labels)
        chosen.extend(item for item in found if item not in chosen)
    return chosen


def _subdir_of(config_text: str, source: str, name: str) -> str:
    from tools.recipe.variant_config import load_variant_yaml

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
    config: str | Path,
    *,
    root: Path | None = None,
    recipe_dir: Path | None = None,
    warnings: list[str] | None = None,
) -> list[RenderedOutput]:
    """Every output variant the CI job ``config`` builds, skipped ones included (``skip``);
    what a reader should know about the recipe is added to ``warnings`` (once each)."""
    root = root or find_root()
    path = resolve_config(config, root)
    return render_config_text(
        path, read_user_file(path), root=root, recipe_dir=recipe_dir, warnings=warnings
    )


def render_config_text(
    path: Path,
    config_text: str,
    *,
    root: Path | None = None,
    recipe_dir: Path | None = None,
    warnings: list[str] | None = None,
) -> list[RenderedOutput]:
    """``render_config`` of a variant file's text, which need not be on disk yet (what
    ``matrix`` is about to write).  Kept on disk (tools/foundation/diskcache.py) under the recipe
    folder, the variant file, conda-forge.yml and the toolkit."""
    root = root or find_root()
    recipe_dir = recipe_dir or root / "recipe"
    forge = load_forge_yml(root)
    key = _render_key(path, config_text, root, recipe_dir, uses_rattler_build(forge))
    rendered = diskcache.load(key)
    if rendered is None:
        rendered = _render_uncached(path, config_text, forge, root, recipe_dir)
        diskcache.store(key, rendered)
    if warnings is not None:
        warnings.extend(w for w in rendered.warnings if w not in warnings)
    return list(rendered.outputs)


def render_configs_text(
    items: Sequence[tuple[Path, str]], *, root: Path, recipe_dir: Path
) -> list[list[RenderedOutput]]:
    """``render_config_text`` of several variant files; on a switched feedstock, whose renders
    by rattler-build take a second or more each, the ones not on disk yet render in worker
    processes (tools/foundation/parallel.py)."""
    forge = load_forge_yml(root)
    v1 = uses_rattler_build(forge)
    keys = [_render_key(path, text, root, recipe_dir, v1) for path, text in items]
    found = [diskcache.load(key) for key in keys]
    missing = [i for i, rendered in enumerate(found) if rendered is None]
    if v1 and len(missing) > 1:
        from tools.foundation.parallel import map_in_processes

        tasks = [(items[i][0], items[i][1], dict(forge), root, recipe_dir) for i in missing]
        for i, rendered in zip(missing, map_in_processes(_render_task, tasks), strict=True):
            found[i] = rendered
            diskcache.store(keys[i], rendered)
    return [
        list(rendered.outputs)
        if rendered is not None
        else render_config_text(path, text, root=root, recipe_dir=recipe_dir)
        for rendered, (path, text) in zip(found, items, strict=True)
    ]


def _render_task(task: tuple[Path, str, dict[str, Any], Path, Path]) -> ConfigRender:
    return _render_uncached(*task)


def _render_key(
    path: Path, config_text: str, root: Path, recipe_dir: Path, v1: bool
) -> diskcache.Key:
    """What a config's render is computed from: conda-forge.yml, every file of the recipe
    folder, the variant file (the toolkit and the engine are in every key)."""
    key = (
        diskcache.Key("render")
        .add_files("forge", [root / "conda-forge.yml"])
        .add_tree("recipe", recipe_dir)
        .add("config-path", str(path))
        .add("config", config_text)
    )
    if v1:
        add_environment_read(key, recipe_dir / "recipe.yaml")
    return key


def add_environment_read(key: diskcache.Key, recipe: Path) -> diskcache.Key:
    """rattler-build lets a v1 recipe read the environment (env.get("NAME")): those values are
    inputs of its render too; the toolkit's render of meta.yaml reads none."""
    text = recipe.read_text(encoding="utf-8", errors="replace") if recipe.is_file() else ""
    for name in sorted(set(_ENV_READ.findall(text))):
        key.add(f"env:{name}", os.environ.get(name))
    return key


def _render_uncached(
    path: Path, config_text: str, forge: Mapping[str, Any], root: Path, recipe_dir: Path
) -> ConfigRender:
    from tools.recipe.variant_config import parse_variant_file

    parse_variant_file(config_text, str(path))  # an empty or damaged one is blamed on itself
    cbc_path = recipe_dir / "conda_build_config.yaml"
    name = path.stem
    subdir = _subdir_of(config_text, str(path), name)
    build_subdir = build_platform_for(forge, subdir)
    if uses_rattler_build(forge):
        from tools.render.v1 import render_v1_config

        outputs = render_v1_config(
            v1_recipe_file(recipe_dir),
            path,
            cbc=cbc_path if cbc_path.is_file() else None,
            name=name,
            subdir=subdir,
            build_subdir=build_subdir,
        )
        return _with_arch_lists(ConfigRender(tuple(outputs)), recipe_dir, subdir)
    from tools.render.meta import render_meta_config

    rendered = render_meta_config(
        path, config_text, recipe_dir, name=name, subdir=subdir, build_subdir=build_subdir
    )
    return _with_arch_lists(rendered, recipe_dir, subdir)


def _with_arch_lists(rendered: ConfigRender, recipe_dir: Path, subdir: str) -> ConfigRender:
    """Each output with the GPU list its config's build exports: what the package holds
    is part of what the config builds (``render`` and ``explain`` show it)."""
    from tools.render.cuda_archs import config_arch_list

    outputs = tuple(
        replace(o, cuda_arch_list=config_arch_list(recipe_dir, dict(o.variant), subdir))
        for o in rendered.outputs
    )
    return replace(rendered, outputs=outputs)


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
    from tools.recipe.evaluate import Recipe, RecipeSource, Target
    from tools.render.meta import load_recipe_source, variants_for_config

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
