"""A fork's tailoring never turns the suite red: a clone of this repository tailored as a lab
would (docs/fork-tailoring.patch: linux-64 only, CUDA 13.0 only, MKL, a one-arch row, the
lab's own channel label), its CI files regenerated with `python -m tools matrix --write` and
committed, passes the tests that read the matrix.

Before those tests read the configs, platforms, CUDA versions and arch rows from the
feedstock (tests/fixtures/feedstock_matrix.py), such a clone stopped at two collection errors
(StopIteration in test_config_selection.py and test_recipe_v1_equivalence.py), and 74 tests
failed: they named conda-forge's configs, its platform list and its CUDA versions, and
required +PTX on every arch row. The same mechanism as tests/test_bump_clone.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import feedstock_matrix
from fixtures.clone import fresh_clone, git, run_tests
from fixtures.recipe_release import REPO

TAILORING = REPO / "docs" / "fork-tailoring.patch"

# The tests that read the matrix and are quick (no build): the recipe's renders per config,
# the static recipe checks, the v1 recipe's equivalence, skip reasons, config selection, the
# arch lists and the feedstock's own configuration files. The command-line suites that also
# name configs (bad input, CLI conventions, drift) follow the same readers but take minutes.
MATRIX_READING = (
    "tests/test_recipe_render.py",
    "tests/test_recipe_static.py",
    "tests/test_recipe_v1_equivalence.py",
    "tests/test_render_skip_reasons.py",
    "tests/test_config_selection.py",
    "tests/test_cuda_arch_lists.py",
    "tests/test_check_fatbin.py",
    "tests/test_skeleton.py",
)


def _tailored_clone(tmp_path: Path) -> Path:
    """A clone with the lab's tailoring applied, .ci_support regenerated from the clone's own
    copy of conda-forge's pinning, all committed; nothing beside it."""
    clone = fresh_clone(tmp_path)
    git("apply", str(TAILORING), cwd=clone)
    pinning = feedstock_matrix.PINNING.relative_to(REPO)
    subprocess.run(
        [sys.executable, "-m", "tools", "matrix", "--pinning", str(pinning), "--write"],
        cwd=clone,
        check=True,
        capture_output=True,
    )
    git("add", "-A", cwd=clone)
    git("commit", "-qm", "tailored for the lab (docs/fork-tailoring.patch)", cwd=clone)
    return clone


@pytest.mark.slow  # a clone, a matrix and eight test files: about a minute on two cores
def test_the_matrix_reading_tests_pass_in_a_tailored_clone(tmp_path: Path) -> None:
    clone = _tailored_clone(tmp_path)
    # the tailoring took: one linux-64 CUDA 13.0 MKL config, on the lab's channel, with a
    # one-arch row (read back through the readers the tests use)
    (config,) = feedstock_matrix.configs(clone)
    assert (config.platform, config.cuda, config.blas) == ("linux-64", "13.0", "mkl")
    assert config.first("channel_targets") != "conda-forge main"
    assert feedstock_matrix.arch_row(config, clone) == "9.0"

    result = run_tests(clone, MATRIX_READING)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
