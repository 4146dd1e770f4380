"""recipe/upstream_tests.py and its skip file: one list of upstream-test skips for both recipes."""

from __future__ import annotations

import itertools
import subprocess
import sys

import pytest
from _pytest.mark.expression import Expression
from helpers.recipe_helpers import RECIPE, recipe_module

upstream_tests = recipe_module("upstream_tests")

SKIPS_TEXT = (RECIPE / "upstream_test_skips.txt").read_text(encoding="utf-8")


def facts(**true: bool) -> dict[str, bool]:
    known = upstream_tests.machine_facts("None", "generic")
    return {name: bool(true.get(name, False)) for name in known}


# Every platform x CUDA x BLAS x Python the recipe's configs test on.
MACHINES = [
    facts(**{os_: True, arch: True, cuda: cuda != "none", blas: True, py: True})
    for (os_, arch), cuda, blas, py in itertools.product(
        [
            ("linux", "x86_64"),
            ("linux", "aarch64"),
            ("osx", "x86_64"),
            ("osx", "arm64"),
            ("win", "x86_64"),
        ],
        ["none", "cuda129", "cuda130"],
        ["mkl", "generic"],
        ["py310", "py312", "py314"],
    )
]


def test_every_skip_line_reads_on_every_machine_and_gives_pytest_a_valid_k_expression():
    for machine in MACHINES:
        terms = upstream_tests.read_skips(SKIPS_TEXT, machine)
        Expression.compile(upstream_tests.keyword_expression(terms))


def test_every_skip_says_why():
    lines = [line for line in SKIPS_TEXT.splitlines() if line.strip() and not line.startswith("#")]
    assert len(lines) > 100  # the skips conda-forge's builds of the same test files found
    for line in lines:
        reason = line.split("|")[2].strip()
        assert len(reason.split()) >= 2, line


def test_linux_aarch64_gets_the_emulation_skips_and_linux_x86_64_does_not():
    arm = upstream_tests.read_skips(SKIPS_TEXT, facts(linux=True, aarch64=True, generic=True))
    x86 = upstream_tests.read_skips(SKIPS_TEXT, facts(linux=True, x86_64=True, mkl=True))
    assert "test_pynode_destruction_deadlock" in arm
    assert "test_pynode_destruction_deadlock" not in x86
    assert (
        "test_norm_matrix_degenerate_shapes" in arm and "test_norm_matrix_degenerate_shapes" in x86
    )


def test_a_condition_naming_an_unknown_fact_is_an_error_with_the_line():
    with pytest.raises(upstream_tests.SkipFileError, match=r"skips:2: unknown name 'aarch46'"):
        upstream_tests.read_skips("# c\nt | aarch46 | why so\n", facts(linux=True), "skips")


def test_a_line_without_a_reason_is_an_error_with_the_line():
    with pytest.raises(upstream_tests.SkipFileError, match=r"skips:1: expected"):
        upstream_tests.read_skips("test_x | all\n", facts(linux=True), "skips")


def test_the_runner_deselects_the_skipped_tests_and_runs_the_rest(tmp_path):
    (tmp_path / "test_slice.py").write_text(
        "def test_norm_matrix_degenerate_shapes():\n    raise AssertionError('a skip ran')\n\n"
        "def test_kept():\n    pass\n",
        encoding="utf-8",
    )
    result = subprocess.run(
        [
            sys.executable,
            str(RECIPE / "upstream_tests.py"),
            "--cuda",
            "None",
            "--blas",
            "generic",
            "--",
            "-q",
            "-p",
            "no:cacheprovider",
            str(tmp_path / "test_slice.py"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 1 deselected" in result.stdout


def test_a_broken_skip_file_stops_the_runner_with_one_error_line(tmp_path):
    broken = tmp_path / "skips.txt"
    broken.write_text("test_x | linux and | why so\n", encoding="utf-8")
    result = subprocess.run(
        [
            sys.executable,
            str(RECIPE / "upstream_tests.py"),
            "--cuda",
            "None",
            "--blas",
            "mkl",
            "--skips",
            str(broken),
            "--",
            "-q",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {broken}:1: condition 'linux and'")
    assert len(result.stderr.strip().splitlines()) == 1
