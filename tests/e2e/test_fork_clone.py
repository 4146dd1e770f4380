"""A fork's tailoring never turns the suite red: a clone of this repository tailored as a lab
would, its CI files regenerated with `python -m tools matrix --write` (from the clone's own
copy of conda-forge's pinning) and committed, with nothing beside it, passes the whole quick
loop (`python -m pytest -m "not slow"`), for two tailorings:

- docs/fork-tailoring.patch as docs/fork.md prints it: linux-64 only, CUDA 13.0 only, MKL,
  a one-arch row (9.0, set `sm90`), the lab's channel `smithlab main` / `smithlab pytorch_rc`;
- the same platforms and GPU built under labels of the lab's own naming, neither of them
  conda-forge's `main` or `pytorch_rc` (`ourlab h100` / `ourlab h100_rc`).

Tests of conda-forge's own policy (its labels, every arch row full, both BLAS flavours) apply
where the feedstock targets conda-forge; a test that needs a config the tailored matrix lacks
makes its own from the recipe, or skips naming what the matrix lacks.

Before, the second tailoring's quick loop gave 19 failed and 12 errors (every arch row assumed
full, conda-forge's labels, the configs of dropped platforms), and the clone skipped every test
that read conda-forge's pinning from a folder beside the checkout."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import feedstock_matrix
from helpers.clone import fresh_clone, git, run_tests
from helpers.recipe_release import REPO
from helpers.selector_tailoring import tailor

TAILORING = REPO / "docs" / "fork-tailoring.patch"
# the second lab's labels in place of docs/fork-tailoring.patch's
OWN_LABELS = {"smithlab main": "ourlab h100", "smithlab pytorch_rc": "ourlab h100_rc"}


def _tailored_clone(folder: Path, labels: dict[str, str]) -> Path:
    """A clone with the lab's tailoring applied (its labels replaced as ``labels`` says),
    .ci_support regenerated, all committed; nothing beside it."""
    clone = fresh_clone(folder)
    git("apply", str(TAILORING), cwd=clone)
    cbc = clone / "recipe" / "conda_build_config.yaml"
    text = cbc.read_text()
    for old, new in labels.items():
        assert old in text, f"docs/fork-tailoring.patch no longer sets {old!r}"
        text = text.replace(old, new)
    cbc.write_text(text)
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


def _skip_reasons(output: str) -> list[str]:
    return re.findall(r"^SKIPPED \[\d+\] [^:]+:\d+: (.*)$", output, flags=re.MULTILINE)


@pytest.mark.slow  # the quick loop of two clones, one after the other, each on every core
def test_the_quick_loop_passes_in_two_differently_tailored_clones(tmp_path: Path) -> None:
    clones = {
        "fork-tailoring.patch": _tailored_clone(tmp_path / "smithlab", {}),
        "own labels": _tailored_clone(tmp_path / "ourlab", OWN_LABELS),
    }
    # the tailorings took: one linux-64 CUDA 13.0 MKL config on the lab's label, a 9.0 row
    for clone in clones.values():
        (config,) = feedstock_matrix.configs(clone)
        assert (config.platform, config.cuda, config.blas) == ("linux-64", "13.0", "mkl")
        assert not str(config.first("channel_targets")).startswith("conda-forge ")
        assert feedstock_matrix.arch_row(config, clone) == "9.0"
    assert feedstock_matrix.configs(clones["own labels"])[0].first("channel_targets") == (
        "ourlab h100"
    )

    for name, clone in clones.items():
        result = run_tests(clone)
        assert result.returncode == 0, f"{name}:\n{result.stdout[-6000:]}{result.stderr[-2000:]}"
        # nothing it needs lies outside the clone
        reasons = _skip_reasons(result.stdout)
        assert [r for r in reasons if "absent" in r or "shared" in r] == [], name


# The tests that read recipe/conda_build_config.yaml or edit conda-forge.yml, and failed in a
# clone tailored with selectors before they read the file as conda-build does (issue 50).
SELECTOR_READERS = (
    "tests/e2e/test_recipe_static.py::test_conda_build_config_offers_both_linalg_flavours",
    "tests/e2e/test_recipe_static.py::test_rc_and_channel_targets_are_zipped",
    "tests/unit/test_recipe_render.py::test_final_release_configs_go_to_the_final_release_label",
    "tests/e2e/test_cli_messages.py::test_matrix_write_with_a_build_platform_typo_writes_and_deletes_nothing",
    "tests/e2e/test_matrix_ci_support.py::test_osx_64_null_on_this_feedstock_matches_a_real_rerender",
    "tests/e2e/test_cuda_arch_set.py::test_conda_forges_files_carry_no_set_name",
)


@pytest.mark.slow  # a clone, its matrix written, and a few of its tests run in it
def test_a_key_repeated_under_other_selectors_keeps_the_readers_green(tmp_path: Path) -> None:
    clone = fresh_clone(tmp_path)
    tailor(clone, TAILORING, feedstock_matrix.PINNING.relative_to(REPO))
    cbc = (clone / "recipe" / "conda_build_config.yaml").read_text()
    assert "cuda_compiler_version:  # [linux]" in cbc and "cuda_compiler_version:  # [win]" in cbc
    (config,) = feedstock_matrix.configs(clone)
    assert (config.platform, config.cuda, config.blas) == ("linux-64", "13.0", "mkl")
    # the toolkit reads it as conda-build does: every command that reads the file
    pinning = str(feedstock_matrix.PINNING.relative_to(REPO))
    for command in (["matrix", "--pinning", pinning, "--check"], ["explain"],
                    ["render", "--filter", "*"]):  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-m", "tools", *command], cwd=clone, capture_output=True, text=True
        )
        assert done.returncode == 0, f"{command}: {done.stderr[-2000:]}"
    result = run_tests(clone, ["-n", "0", *SELECTOR_READERS])
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    # every one ran: the arch-set test skips where the feedstock builds for its own channel
    assert "5 passed, 1 skipped" in result.stdout, result.stdout[-2000:]
