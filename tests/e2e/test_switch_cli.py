"""``python -m tools switch`` on the miniature feedstock (tests/fixtures/recipes/v1-staging, its
v1 recipe named recipe-v1.yaml beside meta.yaml as this repository has it, committed with the
.ci_support ``matrix --write`` computes for meta.yaml): the round trip, what it says, and its
refusals, each leaving the tree as it was. tests/e2e/test_switch_clone.py switches this
feedstock itself."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers.switched_clone import git
from helpers.v1_staging import run_tools

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "recipes"
PINNING = FIXTURE / "pinning-mini"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="switch works on git")


@pytest.fixture(scope="module")
def start(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The miniature building with conda-build, committed: what every test clones."""
    root = tmp_path_factory.mktemp("start") / "core-feedstock"
    shutil.copytree(FIXTURE / "v1-staging", root)
    (root / "recipe" / "recipe.yaml").rename(root / "recipe" / "recipe-v1.yaml")
    forge = root / "conda-forge.yml"
    forge.write_text(forge.read_text().replace("tool: rattler-build", "tool: conda-build"))
    written = run_tools("matrix", "--write", "--pinning", PINNING, cwd=root)
    assert written.returncode == 0, written.stderr
    git(root, "init", "-q")
    git(root, "add", "--all")
    git(root, "commit", "-qm", "start")
    return root


def _clone(start: Path, tmp_path: Path) -> Path:
    clone = tmp_path / "core-feedstock"
    git(tmp_path, "clone", "-q", str(start), str(clone))
    return clone


def _switch(root: Path, to: str):
    return run_tools("switch", "--to", to, "--pinning", PINNING, cwd=root)


def _one_error_line(result) -> str:
    assert result.returncode == 2, result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if not line.startswith("+ ")]
    assert len(errors) == 1 and "Traceback" not in result.stderr, result.stderr
    return errors[0]


def test_switching_there_and_back_gives_the_tree_it_started_from(start, tmp_path) -> None:
    clone = _clone(start, tmp_path)
    there = _switch(clone, "rattler-build")
    assert there.returncode == 0, there.stdout + there.stderr
    assert (clone / "recipe" / "recipe.yaml").is_file()
    assert not (clone / "recipe" / "meta.yaml").exists()
    assert "conda_build_tool: rattler-build" in (clone / "conda-forge.yml").read_text()
    assert git(clone, "status", "--porcelain", "--untracked-files=all").splitlines() and not [
        line for line in git(clone, "status", "--porcelain").splitlines() if line[1] != " "
    ]  # everything staged, nothing left unstaged
    git(clone, "commit", "-qm", "switched")
    assert run_tools("matrix", "--check", "--pinning", PINNING, cwd=clone).returncode == 0
    back = _switch(clone, "conda-build")
    assert back.returncode == 0, back.stdout + back.stderr
    git(clone, "commit", "-qm", "back")
    assert git(clone, "diff", "--stat", "HEAD~2", "HEAD") == ""


def test_it_names_pixi_toml_where_conda_forge_yml_installs_with_pixi(start, tmp_path) -> None:
    clone = _clone(start, tmp_path)
    forge = clone / "conda-forge.yml"
    forge.write_text(forge.read_text() + "conda_install_tool: pixi\n")
    git(clone, "commit", "-qam", "pixi")
    result = _switch(clone, "rattler-build")
    assert result.returncode == 0, result.stderr
    [last] = [line for line in result.stdout.splitlines() if line.startswith("not done: ")]
    assert "and pixi.toml (conda_install_tool: pixi)" in last


def test_a_dirty_tree_is_refused_and_its_file_kept(start, tmp_path) -> None:
    clone = _clone(start, tmp_path)
    mine = clone / "recipe" / "recipe.yaml"  # uncommitted, where the switch would move a file
    mine.write_text("my own notes\n")
    line = _one_error_line(_switch(clone, "rattler-build"))
    assert line == (
        f"error: {clone}: uncommitted changes (recipe/recipe.yaml); commit or stash them "
        "first: switch moves and rewrites files, and git is what undoes it"
    )
    assert mine.read_text() == "my own notes\n"
    assert git(clone, "status", "--porcelain") == "?? recipe/recipe.yaml\n"


def test_a_recipe_rattler_build_cannot_render_changes_nothing(start, tmp_path) -> None:
    clone = _clone(start, tmp_path)
    recipe = clone / "recipe" / "recipe-v1.yaml"
    text = recipe.read_text().replace("- numpy >=1.26", "- numpy ${{ no_such_key }}")
    recipe.write_text(text)
    git(clone, "commit", "-qam", "a typo")
    line = text.splitlines().index("        - numpy ${{ no_such_key }}") + 1
    message = _one_error_line(_switch(clone, "rattler-build"))
    # the file as the user has it, though it was renamed when rattler-build read it
    assert message.startswith(f"error: {recipe}:{line}:"), message
    assert git(clone, "status", "--porcelain", "--untracked-files=all") == ""


def test_the_engine_it_already_builds_with_is_refused(start, tmp_path) -> None:
    clone = _clone(start, tmp_path)
    line = _one_error_line(_switch(clone, "conda-build"))
    assert (
        line == f"error: {clone / 'conda-forge.yml'}: the feedstock already builds with conda-build"
    )
