"""A bump never turns the suite red: a clone of this repository, moved to another release
(version, sha256 and build number changed in both recipes, and committed, as after
`python -m tools bump` and a rebuild), passes the tests that read the recipe's release.

Before those tests read the release from the recipe (tests/helpers/recipe_release.py), 31 of
them failed in such a clone: they compared renders with a hard-coded 2.13.0 and build 0."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from helpers.bump import releases
from helpers.clone import fresh_clone, git, run_tests
from helpers.recipe_release import current, next_minor

from tools.recipe import release

# The tests that compare renders with the recipe's version, build number or sha256, and
# those whose wheels would become the recipe's release (held to its licence list then).
RECIPE_READING = (
    "tests/unit/test_recipe_render.py",
    "tests/e2e/test_render_skip_reasons.py",
    "tests/e2e/test_drift_recipe_cli.py",
    "tests/unit/test_recipe_v1_equivalence.py",
    "tests/e2e/test_layout_cli.py",
    "tests/e2e/test_layout_replay.py",
)


@pytest.mark.slow  # four test files in a fresh clone: about two minutes on two cores
def test_the_recipe_reading_tests_pass_in_a_bumped_clone(tmp_path: Path) -> None:
    clone = fresh_clone(tmp_path)
    before = current(clone)
    version = f"{next_minor(before.version)}.0"
    # The sha256 of a real archive (a miniature release), never an invented one.
    archive = releases.older_release(tmp_path / "releases", version, tmp_path)
    sha256 = hashlib.sha256(archive.read_bytes()).hexdigest()
    for name in ("meta.yaml", "recipe-v1.yaml"):
        path = clone / "recipe" / name
        recipe = release.parse(path, path.read_text())
        recipe = (
            recipe.with_field("version", version)
            .with_field("sha256", sha256)
            .with_field("build", str(before.build + 1))
        )
        path.write_text(recipe.text)
    git("commit", "-qam", f"bump to {version}, build {before.build + 1}", cwd=clone)
    assert (current(clone).version, current(clone).build) == (version, before.build + 1)

    result = run_tests(clone, RECIPE_READING)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
