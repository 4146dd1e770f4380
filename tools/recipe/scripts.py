"""The recipe's own Python scripts (standard library only, run by the build scripts from
recipe/), loaded by path so that the toolkit asks the same code the build runs: one
detection, one set of file rules, one reading of a source's forwarding, not two."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from tools.errors import UserError


def load(recipe_dir: Path, filename: str, what: str) -> ModuleType:
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
