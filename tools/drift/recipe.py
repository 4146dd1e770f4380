"""The specs this recipe applies, from the toolkit's render of every configuration.

``specs_from_rendered`` is pure: it takes ``(config name, rendered outputs)`` pairs where each
output has ``name``, ``skip``, ``requirements`` (section -> specs), ``variant`` and, when the
renderer provides it, ``subdir``.  ``render_all`` is the I/O edge that asks ``tools.render.config``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rattler import MatchSpec

from tools.drift.model import RecipeConfig, RecipeSpec
from tools.foundation.errors import UserError
from tools.foundation.log import step
from tools.recipe.namespace import python_series

SECTIONS = ("build", "host", "run", "run_constrained")

# ``.ci_support`` file names start with the platform: linux_64_..., osx_arm64_..., win_64_...
_CONFIG_SUBDIR = re.compile(r"^(linux|osx|win)_(64|aarch64|arm64|ppc64le)")


def config_name(config: str | Path) -> str:
    """A config's name: the file name without ``.yaml``.  Names hold dots (``...version12.9...``),
    so ``Path.stem`` would cut them short."""
    name = Path(str(config)).name
    for suffix in (".yaml", ".yml"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def subdir_of(config: str, output: Any = None) -> str:
    subdir = getattr(output, "subdir", None)
    if subdir and subdir != "noarch":
        return str(subdir)
    variant = getattr(output, "variant", {}) or {}
    if variant.get("target_platform"):
        return str(variant["target_platform"])
    match = _CONFIG_SUBDIR.match(config_name(config))
    return f"{match[1]}-{match[2]}" if match else "linux-64"


def parse_spec(text: str) -> tuple[str, str | None] | None:
    """``(name, version spec)`` of a rendered requirement; ``None`` for virtual packages.

    The requirement is read as conda-build reads it when it builds: ``ensure_valid_spec``
    turns a bare version into a prefix match (``mkl-devel 2025`` admits ``2025.2.0``)."""
    from tools.recipe.jinja import ensure_valid_spec

    try:
        spec = MatchSpec(ensure_valid_spec(text.strip()))
    except Exception:
        return None
    name = spec.name.normalized if spec.name else None
    if not name or name.startswith("__"):
        return None
    version = spec.version
    return name, (str(version) if version and str(version) != "*" else None)


def _python_of(variant: Mapping[str, Any]) -> str | None:
    value = variant.get("python")
    if value is None:
        return None
    match = re.match(r"\d+\.\d+", python_series(str(value).strip()))
    return match[0] if match else None


def specs_from_rendered(
    rendered: Iterable[tuple[str, Sequence[Any]]], torch_output: str = "pytorch"
) -> tuple[tuple[RecipeSpec, ...], tuple[RecipeConfig, ...], tuple[str, ...]]:
    """Every requirement of every non-skipped output, the configurations, and unparsable specs."""
    specs: list[RecipeSpec] = []
    configs: list[RecipeConfig] = []
    unparsable: list[str] = []
    for config, outputs in rendered:
        kept = [o for o in outputs if not getattr(o, "skip", False)]
        if not kept:
            continue
        subdir = next(
            (subdir_of(config, o) for o in kept if getattr(o, "subdir", None) != "noarch"),
            subdir_of(config),
        )
        pythons = sorted(
            {p for o in kept if o.name == torch_output and (p := _python_of(o.variant or {}))}
        )
        common = _common_variant([o.variant or {} for o in kept])
        configs.append(RecipeConfig(config, subdir, common, tuple(pythons)))
        for output in kept:
            for section in SECTIONS:
                for text in (output.requirements or {}).get(section, ()) or ():
                    parsed = parse_spec(str(text))
                    if parsed is None:
                        if not str(text).startswith("__"):
                            unparsable.append(f"{config}: {output.name} {section}: {text}")
                        continue
                    name, spec = parsed
                    specs.append(
                        RecipeSpec(
                            name=name,
                            spec=spec,
                            text=str(text),
                            output=output.name,
                            section=section,
                            config=config,
                            subdir=subdir_of(config, output),
                            variant={k: str(v) for k, v in (output.variant or {}).items()},
                        )
                    )
    return tuple(specs), tuple(configs), tuple(unparsable)


def require_output(rendered: Sequence[tuple[str, Sequence[Any]]], torch_output: str) -> None:
    """Comparing against an output no configuration builds would show every pin as absent."""
    names = {o.name for _, outputs in rendered for o in outputs if not getattr(o, "skip", False)}
    if names and torch_output not in names:
        raise UserError(
            f"--output {torch_output}: no configuration builds an output of that name "
            f"(outputs: {', '.join(sorted(names))})"
        )


def _common_variant(variants: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Variant keys that have one value across a configuration's outputs (python does not)."""
    merged: dict[str, set[str]] = {}
    for variant in variants:
        for key, value in variant.items():
            merged.setdefault(key, set()).add(str(value))
    return {key: next(iter(values)) for key, values in merged.items() if len(values) == 1}


class RendererUnavailable(UserError):
    """``tools.render.config`` cannot be imported (a partial checkout); the recipe column is
    unknown."""


def render_all(
    root: Path, configs: Sequence[str] = (), recipe_dir: Path | None = None
) -> list[tuple[str, Sequence[Any]]]:
    """Render ``configs`` (variant files, or names as every command takes them: full,
    NAME.yaml, unique prefix, glob; default: every ``.ci_support`` config) of the recipe in
    ``recipe_dir`` (default ``<root>/recipe``) with ``tools.render.config``."""
    try:
        from tools.render.config import list_configs, render_config, select_configs
    except ImportError as exc:
        raise RendererUnavailable(
            f"the recipe renderer (tools.render.config) is unavailable: {exc}"
        ) from None
    # Names are resolved before the step starts: a typo is bad input, not a failed render.
    chosen = select_configs(configs, root) if configs else list(list_configs(root=root))
    if not chosen:
        raise UserError(
            f"{root / '.ci_support'}: no configurations to render; "
            "run `python -m tools matrix --write`"
        )
    with step(render_title(chosen, every=not configs)):
        return [
            (config_name(c), render_config(c, root=root, recipe_dir=recipe_dir)) for c in chosen
        ]


def render_title(chosen: Sequence[str | Path], *, every: bool) -> str:
    """The step line: what is rendered, as many configurations as there are."""
    if len(chosen) == 1:
        return f"render one configuration ({config_name(chosen[0])})"
    return f"render {'every' if every else 'the'} {len(chosen)} configurations"


def versions_of(
    rendered: Sequence[tuple[str, Sequence[Any]]], torch_output: str
) -> tuple[str, ...]:
    """The versions the torch-shipping output builds (one, unless the recipe is odd)."""
    return tuple(
        sorted(
            {
                str(o.version)
                for _, outputs in rendered
                for o in outputs
                if o.name == torch_output
                and not getattr(o, "skip", False)
                and getattr(o, "version", None)
            }
        )
    )


def sha256_against_head(root: Path, recipe_dir: Path, config: str) -> list[str]:
    """Problems when meta.yaml's version differs from git HEAD's but its sha256 does not.

    Both revisions are rendered the same way (the first variant of ``config``), so a version
    or sha256 set through jinja is compared as conda-build would see it.  Outside a git
    checkout, or with meta.yaml not yet committed, there is nothing to compare with."""
    from tools.drift.versions import stale_sha256
    from tools.foundation import proc
    from tools.foundation.errors import ToolError
    from tools.render.config import source_identity

    try:
        head = proc.call(
            "git", "show", "HEAD:./meta.yaml", cwd=recipe_dir, capture=True, check=False, quiet=True
        )
    except ToolError:  # no git on PATH
        return []
    if head.returncode != 0:
        return []
    try:
        now = source_identity(config, root=root, recipe_dir=recipe_dir)
        before = source_identity(
            config,
            root=root,
            recipe_dir=recipe_dir,
            meta_text=head.stdout,
            meta_path="HEAD:" + str(recipe_dir / "meta.yaml"),
        )
    except UserError:  # HEAD's recipe (or a config outside .ci_support) does not render
        return []
    return stale_sha256(
        now.version, now.sha256, before.version, before.sha256, str(recipe_dir / "meta.yaml")
    )


def release_disagreements(recipe_dir: Path) -> list[str]:
    """meta.yaml against the v1 recipe: version, build number and sha256 (one release)."""
    from tools.foundation.files import read_user_file
    from tools.recipe import release

    found = tuple(
        release.parse(recipe_dir / name, read_user_file(recipe_dir / name))
        for name in release.RECIPE_KINDS
        if (recipe_dir / name).is_file()
    )
    return release.disagreements(found) if len(found) > 1 else []
