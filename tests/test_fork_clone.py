"""A fork's tailoring never turns the suite red: a clone of this repository tailored as a lab
would, its CI files regenerated with `python -m tools matrix --write` (from the clone's own
copy of conda-forge's pinning) and committed, with nothing beside it, passes the quick tests
that read what a tailoring changes (TAILORING_READERS), for two tailorings:

- docs/fork-tailoring.patch as docs/fork.md prints it: linux-64 only, CUDA 13.0 only, MKL,
  a one-arch row (9.0, set `sm90`), the lab's channel `smithlab main` / `smithlab pytorch_rc`;
- the same platforms and GPU built under labels of the lab's own naming, neither of them
  conda-forge's `main` or `pytorch_rc` (`ourlab h100` / `ourlab h100_rc`).

Tests of conda-forge's own policy (its labels, every arch row full, both BLAS flavours) apply
where the feedstock targets conda-forge; a test that needs a config the tailored matrix lacks
makes its own from the recipe, or skips naming what the matrix lacks.

Before, the second tailoring's quick loop gave 19 failed and 12 errors (every arch row assumed
full, conda-forge's labels, the configs of dropped platforms), and the clone skipped every test
that read conda-forge's pinning from a folder beside the checkout.

Why not the whole quick loop in each clone: measured warm on 2 cores it made this file 233 s
and the whole `.ci/run` 17 min 50 s, past the suite's 15-minute budget (docs/testing.md). The
files below are every file that failed in a tailored clone, and the quick tests that read the
matrix, the recipe's renders or its labels; the whole quick loop in a tailored clone is
`python -m pytest -m "not slow"` there, by hand."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import feedstock_matrix
from fixtures.clone import fresh_clone, git, start_tests
from fixtures.recipe_release import REPO

TAILORING = REPO / "docs" / "fork-tailoring.patch"
# Every file that failed in a tailored clone (issue 43), and the quick tests that read the
# matrix, the recipe's renders per config or its labels.
TAILORING_READERS = (
    "tests/test_build_locally_newcomer.py",
    "tests/test_check_fatbin.py",
    "tests/test_cli_conventions.py",
    "tests/test_config_selection.py",
    "tests/test_cuda_arch_lists.py",
    "tests/test_cuda_arch_set.py",
    "tests/test_default_names.py",
    "tests/test_fork_doc.py",
    "tests/test_layout_cli.py",
    "tests/test_layout_replay.py",
    "tests/test_matrix_ci_support.py",
    "tests/test_recipe_render.py",
    "tests/test_recipe_static.py",
    "tests/test_recipe_v1_equivalence.py",
    "tests/test_render_skip_reasons.py",
    "tests/test_skeleton.py",
)
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


@pytest.mark.slow  # two clones' quick tests side by side: one per core
def test_the_tailoring_readers_pass_in_two_differently_tailored_clones(tmp_path: Path) -> None:
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

    runs = {name: start_tests(clone, TAILORING_READERS) for name, clone in clones.items()}
    for name, run in runs.items():
        out, err = run.communicate(timeout=1800)
        assert run.returncode == 0, f"{name}:\n{out[-6000:]}{err[-2000:]}"
        # nothing it needs lies outside the clone
        assert [r for r in _skip_reasons(out) if "absent" in r or "shared" in r] == [], name
