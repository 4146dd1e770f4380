"""Locate the feedstock: from the current directory up, else where the toolkit lives; and
load the recipe's own Python scripts by path (standard library only, run by the build
scripts from recipe/), so that the toolkit asks the same code the build runs: one backend
detection, one set of file rules, one reading of a source's forwarding, not two."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from tools.foundation.errors import UserError

PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the repository holding tools/foundation/


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


def recipe_script(recipe_dir: Path, filename: str, what: str) -> ModuleType:
    """``recipe_dir/filename`` as a module; ``what``: what the recipe lacks without it, for
    the one-line error."""
    path = recipe_dir / filename
    if not path.is_file():
        raise UserError(f"{path}: no such file; {what} is missing")
    # One module a path: two recipe directories (a bump's scratch feedstock) stay apart.
    name = f"_feedstock_{path.stem}_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    return module
