"""The build backend the new source declares, asked of recipe/build_backend.py (the
module the build scripts ask, standard library only) by path: one detection, not two."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from tools.errors import UserError


@dataclass(frozen=True)
class Backend:
    kind: str | None  # "setuptools", "scikit-build-core"; None when the source is refused
    declared: str  # the build-backend string, "setup.py", or why it was refused
    source: str  # the file that decided


def _module(recipe_dir: Path) -> ModuleType:
    path = recipe_dir / "build_backend.py"
    if not path.is_file():
        raise UserError(f"{path}: no such file; the recipe's backend detection is missing")
    spec = importlib.util.spec_from_file_location("_feedstock_build_backend", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    return module


def detect(recipe_dir: Path, tree: Path, shown: str) -> Backend:
    """``tree``: the extracted build-system files; ``shown``: how messages name the source."""
    module = _module(recipe_dir)
    try:
        found = module.detect(tree)
    except module.BackendError as exc:
        return Backend(None, str(exc).replace(str(tree), shown), shown)
    return Backend(found.kind, found.declared, found.source.replace(str(tree), shown))


# What extract() must take out of the archive for detect() and the checklist.
FILES = ("pyproject.toml", "setup.py", "CMakeLists.txt")
