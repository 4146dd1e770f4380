"""Writing: both recipes read, and written back atomically (temp file + rename) with the new
release's fields (:mod:`tools.recipe.release` makes the text edits). recipe/cmake_test is
not written: it builds with the C++ standard the installed TorchConfig.cmake states."""

from __future__ import annotations

from pathlib import Path

from tools.foundation.errors import UserError
from tools.foundation.files import atomic_write_text, read_user_file
from tools.recipe.release import RECIPE_KINDS, RecipeFile, parse


def load(recipe_dir: Path) -> tuple[RecipeFile, ...]:
    """meta.yaml and the v1 recipe, whichever exist (at least one)."""
    found = tuple(
        parse(recipe_dir / name, read_user_file(recipe_dir / name))
        for name in RECIPE_KINDS
        if (recipe_dir / name).is_file()
    )
    if not found:
        raise UserError(f"{recipe_dir}: no meta.yaml, recipe.yaml or recipe-v1.yaml to bump")
    return found


def write(recipe: RecipeFile) -> bool:
    """Write ``recipe`` atomically; ``False`` when the file already holds that text."""
    if recipe.path.read_text(encoding="utf-8") == recipe.text:
        return False
    atomic_write_text(recipe.path, recipe.text)
    return True
