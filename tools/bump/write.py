"""Writing: both recipes read, and written back atomically (temp file + rename) with the new
release's fields (:mod:`tools.recipe.release` makes the text edits), and recipe/cmake_test
moved to the C++ standard the new source requires of consumers."""

from __future__ import annotations

from pathlib import Path

from tools.bump import source
from tools.errors import UserError
from tools.files import atomic_write_text, read_user_file
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


def follow_cxx_standard(recipe_dir: Path, standard: int | None) -> tuple[int | None, bool]:
    """recipe/cmake_test builds with the standard the new TorchConfig.cmake requires (raised,
    never lowered: a consumer may use a newer one); ``(the standard before, changed)``."""
    path = recipe_dir / source.CMAKE_TEST
    if standard is None or not path.is_file():
        return None, False
    text = path.read_text(encoding="utf-8")
    before = source.cmake_test_standard(text)
    if before is None or before >= standard:
        return before, False
    atomic_write_text(path, source.with_standard(text, standard))
    return before, True
