"""tools.recipe.release: the release fields of both real recipes, read and edited as text
(what `python -m tools bump` writes and `drift --check` compares)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.foundation.errors import UserError
from tools.recipe import release

RECIPE = Path(__file__).resolve().parents[2] / "recipe"
RECIPES = ("meta.yaml", "recipe-v1.yaml")


def _recipe(name: str) -> release.RecipeFile:
    return release.parse(RECIPE / name, (RECIPE / name).read_text())


@pytest.mark.parametrize("name", RECIPES)
def test_each_field_is_edited_in_place_and_nothing_else_changes(name: str) -> None:
    recipe = _recipe(name)
    commit = "0123456789abcdef0123456789abcdef01234567"
    edited = (
        recipe.with_field("version", "9.9.9")
        .with_field("build", "7")
        .with_field("git_version", commit)
    )
    assert (edited.field("version"), edited.field("build")) == ("9.9.9", "7")
    assert release.recorded_commit(edited) == commit
    before, after = recipe.text.splitlines(), edited.text.splitlines()
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    fields = ("version", "build", "git_version")
    assert [i + 1 for i in changed] == sorted(recipe.line_of(f) for f in fields)


@pytest.mark.parametrize("name", RECIPES)
def test_the_python_skip_is_added_moved_and_removed(name: str) -> None:
    recipe = _recipe(name)
    at_311 = release.with_python_floor(recipe, "3.11")
    at_312 = release.with_python_floor(at_311, "3.12")
    assert at_311.text != recipe.text and at_312.text != at_311.text
    skip = {"meta.yaml": "# [py<{}]", "recipe-v1.yaml": 'match(python, "<{}")'}[name]
    assert skip.format("311") in at_311.text or skip.format("3.11") in at_311.text
    assert skip.format("312") in at_312.text or skip.format("3.12") in at_312.text
    assert skip.format("311") not in at_312.text and skip.format("3.11") not in at_312.text
    assert release.with_python_floor(at_312, None).text == recipe.text
    assert release.with_python_floor(at_311, "3.11").text == at_311.text  # idempotent


def test_both_recipes_list_the_patches_in_the_patches_folder() -> None:
    on_disk = sorted(f"patches/{p.name}" for p in (RECIPE / "patches").glob("*.patch"))
    assert sorted(release.patches_of(_recipe("meta.yaml"))) == on_disk
    assert release.patches_of(_recipe("recipe-v1.yaml")) == release.patches_of(_recipe("meta.yaml"))


def test_a_field_stated_twice_is_bad_input_naming_the_file_and_lines(tmp_path: Path) -> None:
    recipe = _recipe("meta.yaml")
    line = recipe.text.splitlines()[recipe.line_of("sha256") - 1]
    doubled = release.parse(tmp_path / "meta.yaml", recipe.text.replace(line, f"{line}\n{line}", 1))
    with pytest.raises(UserError, match=r"meta\.yaml: expected one source sha256 line, found 2"):
        doubled.field("sha256")


def test_recipes_that_agree_have_no_disagreements() -> None:
    assert release.disagreements(tuple(_recipe(n) for n in RECIPES)) == []


def test_recipes_recording_different_commits_disagree_naming_both_lines() -> None:
    meta, v1 = (_recipe(n) for n in RECIPES)
    other = v1.with_field("git_version", "0" * 40)
    (problem,) = release.disagreements((meta, other))
    assert problem.startswith(
        f"the recipes disagree on the release commit (git_version): "
        f"meta.yaml:{meta.line_of('git_version')} has {release.recorded_commit(meta)}, "
        f"recipe-v1.yaml:{v1.line_of('git_version')} has {'0' * 40}"
    )
