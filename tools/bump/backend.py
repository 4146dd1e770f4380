"""The build backend the new source declares, asked of recipe/build_backend.py (the
module the build scripts ask, standard library only) by path: one detection, not two."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tools.foundation.repo import recipe_script


@dataclass(frozen=True)
class Backend:
    kind: str | None  # "setuptools", "scikit-build-core"; None when the source is refused
    declared: str  # the build-backend string, "setup.py", or why it was refused
    source: str  # the file that decided


def detect(recipe_dir: Path, tree: Path, shown: str) -> Backend:
    """``tree``: the extracted build-system files; ``shown``: how messages name the source."""
    module = recipe_script(recipe_dir, "build_backend.py", "the recipe's backend detection")
    try:
        found = module.detect(tree)
    except module.BackendError as exc:
        return Backend(None, str(exc).replace(str(tree), shown), shown)
    return Backend(found.kind, found.declared, found.source.replace(str(tree), shown))


# What extract() must take out of the archive for detect() and the checklist.
FILES = ("pyproject.toml", "setup.py", "CMakeLists.txt")
