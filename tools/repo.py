"""Locate the feedstock: from the current directory up, else where the toolkit lives."""

from __future__ import annotations

from pathlib import Path

from tools.errors import UserError

PACKAGE_ROOT = Path(__file__).resolve().parent.parent


def find_root(start: Path | None = None) -> Path:
    """The nearest directory at or above ``start`` holding conda-forge.yml and recipe/."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "conda-forge.yml").is_file() and (candidate / "recipe").is_dir():
            return candidate
    if (PACKAGE_ROOT / "conda-forge.yml").is_file():
        return PACKAGE_ROOT
    raise UserError(f"{here}: not inside the feedstock (no conda-forge.yml and recipe/ above it)")


def recipe_dir(value: str | None, root: Path | None = None) -> Path:
    """Resolve ``--recipe-dir`` (default: <root>/recipe) and check it holds a recipe: a
    meta.yaml (conda-build) or a v1 recipe.yaml (rattler-build; conda-forge.yml says which)."""
    path = Path(value) if value else (root or find_root()) / "recipe"
    if not any((path / name).is_file() for name in ("meta.yaml", "recipe.yaml")):
        raise UserError(
            f"{path}: no meta.yaml or recipe.yaml here; pass --recipe-dir pointing at the recipe"
        )
    return path
