"""Line selectors: conda-build's semantics, evaluated without eval()."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers.cli import REPO, run_tools

from tools.recipe.errors import RecipeError, UnsupportedConstruct
from tools.recipe.namespace import known_names, python_int, selector_namespace
from tools.recipe.selectors import (
    evaluate,
    select_lines,
    top_level_keys,
    unknown_selector_names,
)

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "recipes"


def _toolkit() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def names(subdir="linux-64", build=None, environ=None, **variant):
    variant.setdefault("python", "3.12.* *_cpython")
    return selector_namespace(subdir, variant, build_subdir=build, environ=environ or {})


def test_true_selector_keeps_the_line_without_its_comment():
    out = select_lines("  - gcc  # [linux]\n", names()).text
    assert out == "  - gcc\n"


def test_false_selector_drops_the_line():
    assert select_lines("a: 1\nb: 2  # [win]\n", names()).text == "a: 1\n"


def test_comment_lines_become_blank_and_markdown_links_are_not_selectors():
    text = "# [win] only a comment\nurl: see [docs](https://x)\n"
    assert select_lines(text, names()).text == "\nurl: see [docs](https://x)\n"


@pytest.mark.parametrize(
    ("subdir", "expression", "expected"),
    [
        ("linux-aarch64", "aarch64 and linux and unix", True),
        ("linux-64", "linux64 and x86_64 and not aarch64", True),
        ("osx-arm64", "osx and arm64", True),
        ("win-64", "win and win64 and not unix", True),
        ("linux-ppc64le", "ppc64le", True),
    ],
)
def test_platform_names(subdir, expression, expected):
    assert evaluate(expression, names(subdir)) is expected


def test_py_is_an_integer_for_comparisons():
    assert evaluate("py >= 311 and py < 313", names(python="3.12.* *_cpython"))
    assert not evaluate("py == 310", names(python="3.12.* *_cpython"))


def test_variant_keys_compare_as_strings_and_none_is_a_string():
    ns = names(cuda_compiler_version="12.9")
    assert evaluate('cuda_compiler_version != "None"', ns)
    assert evaluate('cuda_compiler_version in ("12.9", "13.0")', ns)
    assert evaluate('cuda_compiler_version == "None"', names(cuda_compiler_version="None"))


def test_true_false_values_become_booleans_like_conda_build():
    ns = names(is_rc="True")
    assert evaluate("is_rc", ns)
    # the string comparison is False, as in conda-build: the value is a bool by then
    assert not evaluate('is_rc == "True"', ns)


def test_unknown_names_are_false():
    assert not evaluate("arm_variant_type", names())
    assert evaluate("not arm_variant_type", names())


def test_build_and_target_platform_for_a_cross_build():
    ns = names("linux-aarch64", build="linux-64", target_platform="linux-aarch64")
    assert evaluate("build_platform != target_platform", ns)
    assert not evaluate(
        "build_platform != target_platform", names("linux-64", target_platform="linux-64")
    )


def test_os_environ_get_as_the_pinning_uses_it():
    ns = names(environ={"CF_CUDA_ENABLED": "True", "BUILD_PLATFORM": "linux-64"})
    assert evaluate('os.environ.get("CF_CUDA_ENABLED", "False") == "True"', ns)
    assert evaluate('os.environ.get("BUILD_PLATFORM", "").startswith("linux-")', ns)
    assert not evaluate('os.environ.get("CF_CUDA_ENABLED", "False") == "True"', names())


@pytest.mark.parametrize(
    "expression",
    [
        "__import__('os').system('true')",
        "(lambda: 1)()",
        "x.__class__",
        "open('f')",
        "[a for a in b]",
    ],
)
def test_code_beyond_the_whitelist_is_refused_with_file_and_line(expression):
    with pytest.raises(UnsupportedConstruct) as info:
        select_lines(f"a: 1\nb: 2  # [{expression}]\n", names(), source="meta.yaml")
    assert str(info.value).startswith("meta.yaml:2: selector [")


def test_a_syntax_error_names_the_line():
    with pytest.raises(
        UnsupportedConstruct, match=r"meta.yaml:1: selector \[linux and\] is not valid"
    ):
        select_lines("a: 1  # [linux and]\n", names(), source="meta.yaml")


def test_origin_maps_kept_lines_back_to_the_source():
    selected = select_lines("a: 1\nb: 2  # [win]\nc: 3\n", names())
    assert selected.origin == (1, 3)
    assert selected.source_line(2) == 3


@pytest.mark.parametrize(
    ("python", "py"), [("3.12.* *_cpython", 312), ("3.9", 39), ("3", 3), ("1", 1)]
)
def test_py_selector_value_joins_major_and_minor_as_conda_build_does(python, py) -> None:
    assert python_int(python) == py


def test_a_python_variant_that_is_no_version_is_one_recipe_error() -> None:
    # Found by benchmarks/fuzz_report.py: a damaged .ci_support python value was a ValueError.
    with pytest.raises(RecipeError, match=r"python 'x\.y' is not a Python version"):
        python_int("x.y")


# ------------------------------------------------------------------ names nothing defines


def test_a_selector_name_nothing_defines_is_found_with_the_closest_known_name() -> None:
    text = '{% set flavour = "x" %}\na  # [cuda_compiler_verison != "None"]\nb  # [flavour]\n'
    (found,) = unknown_selector_names(text, {"cuda_compiler_version", "linux"})
    assert (found.line, found.name, found.closest) == (
        2,
        "cuda_compiler_verison",
        "cuda_compiler_version",
    )


def test_conda_builds_own_names_and_the_variant_keys_are_known() -> None:
    text = "a  # [py >= 312 and win and np > 1 and int(blas_impl == 'mkl') and target_platform]\n"
    assert (
        unknown_selector_names(
            text, known_names("linux-64", [{"blas_impl": "mkl", "target_platform": "linux-64"}])
        )
        == ()
    )


def _typo_feedstock(tmp_path: Path) -> tuple[Path, int]:
    root = tmp_path / "torchlike"
    shutil.copytree(FIXTURES / "torchlike", root)
    meta = root / "recipe" / "meta.yaml"
    lines = meta.read_text().splitlines(keepends=True)
    number = next(
        n for n, line in enumerate(lines, 1) if "libmagma-devel  # [cuda_compiler_version" in line
    )
    lines[number - 1] = lines[number - 1].replace("cuda_compiler_version", "cuda_compiler_verison")
    meta.write_text("".join(lines))
    return root, number


@pytest.mark.parametrize(
    "argv",
    [["render", "osx_arm64"], ["explain"], ["matrix", "--pinning", "PINNING", "--check"]],
    ids=["render", "explain", "matrix-check"],
)
def test_render_explain_and_matrix_warn_of_a_selector_typo(tmp_path: Path, argv) -> None:
    root, number = _typo_feedstock(tmp_path)
    pinning = str(FIXTURES / "pinning-mini")
    result = run_tools(*[pinning if a == "PINNING" else a for a in argv], cwd=root, env=_toolkit())
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert warnings == [
        f"warning: {root / 'recipe' / 'meta.yaml'}:{number}: selector "
        "[cuda_compiler_verison != \"None\"] reads 'cuda_compiler_verison', which no variant "
        "key, conda-build name or {% set %} defines (conda-build reads it as False without a "
        "word); did you mean 'cuda_compiler_version'?"
    ]


@pytest.mark.parametrize("fixture", ["torchlike", "pyext", "v1-staging"])
def test_the_fixture_recipes_read_no_unknown_name(fixture: str) -> None:
    root = FIXTURES / fixture
    source = (root / "recipe" / "meta.yaml").read_text()
    configs = (
        sorted((root / ".ci_support").glob("*.yaml")) if (root / ".ci_support").is_dir() else []
    )
    known = set(known_names("linux-64", []))
    for path in [*configs, root / "recipe" / "conda_build_config.yaml"]:
        if path.is_file():
            known |= top_level_keys(path.read_text())
    assert unknown_selector_names(source, known) == ()


def test_the_feedstocks_own_explain_warns_of_nothing() -> None:
    result = run_tools("explain")
    assert result.returncode == 0, result.stderr
    assert "warning:" not in result.stderr
