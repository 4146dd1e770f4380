"""The default matrix's package names, held to tests/golden/default_names.json.

A name (name-version-build string, hash included) that moves at the same build number
would give two different packages of one configuration one file name: a change that
moves hashes moves the build number too (recipe/meta.yaml and recipe/recipe-v1.yaml),
and the file is rewritten on purpose (tests/helpers/default_names.py says how). The
file was first written from the render of the commit before ``cuda_arch_set`` existed,
and the default matrix renders the same names today.
"""

from __future__ import annotations

import json

import pytest
from helpers import feedstock_matrix
from helpers.default_names import GOLDEN, REPO, default_names
from helpers.recipe_release import current

pytest.importorskip("rattler_build", reason="py-rattler-build renders recipe-v1.yaml")


@pytest.fixture(scope="module")
def rendered() -> dict[str, dict[str, list[str]]]:
    if not feedstock_matrix.targets_conda_forge(REPO):
        pytest.skip("the names are conda-forge's matrix's; this feedstock builds for its own")
    # names of another release cannot clash with these (rattler-build's hashes take the
    # version in, through pytorch's exact pin of its libtorch): a bump rewrites the file
    first = next(iter(json.loads(GOLDEN.read_text()).values()))["meta.yaml"][0]
    version = first.rsplit("-", 2)[1]
    if version != current().version:
        pytest.skip(
            f"{GOLDEN.name} holds {version}'s names, the recipe builds {current().version}: "
            "python tests/helpers/default_names.py --write"
        )
    return default_names(REPO)


def _moved(old: list[str], new: list[str]) -> list[str]:
    """'old -> new' for each name whose build string changed but not its build number."""

    def key(name: str) -> tuple[str, str]:
        package, string = name.rsplit("-", 1)
        return package + string.rsplit("_", 1)[-1], string.rsplit("_", 1)[0].rsplit("_h", 1)[0]

    before = {key(n): n for n in old}
    return [f"{before[key(n)]} -> {n}" for n in new if key(n) in before and before[key(n)] != n]


def test_the_golden_file_covers_every_config(rendered) -> None:
    assert sorted(json.loads(GOLDEN.read_text())) == sorted(rendered)


@pytest.mark.parametrize("recipe", ["meta.yaml", "recipe-v1.yaml"])
def test_the_default_matrix_renders_the_golden_names(rendered, recipe) -> None:
    golden = json.loads(GOLDEN.read_text())
    for config, names in rendered.items():
        moved = _moved(golden[config][recipe], names[recipe])
        assert not moved, f"{config} ({recipe}): hash moved at the same build number: {moved}"
        assert names[recipe] == golden[config][recipe], config
