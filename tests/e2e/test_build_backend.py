"""recipe/build_backend.py: which build system a source tree declares.

The two miniature layouts stand for PyTorch 2.13 (setup.py) and 2.14+ (scikit-build-core);
the rest are trees the build must refuse with one line naming the file.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers.minitorch.support import clean_env, find_interpreters
from helpers.recipe_helpers import recipe_module
from helpers.recipe_release import recorded_commit

REPO_ROOT = Path(__file__).resolve().parents[2]
TOOL = REPO_ROOT / "recipe" / "build_backend.py"
MINITORCH = REPO_ROOT / "tests" / "fixtures" / "minitorch"

build_backend = recipe_module("build_backend")

SKBUILD_PYPROJECT = """\
[build-system]
requires = ["scikit-build-core>=1.0", "numpy"]
build-backend = "scikit_build_core.build"

[project]
name = "torch"
dynamic = ["version", "dependencies"]
"""


def _tree(tmp_path: Path, pyproject: str | None, setup_py: bool) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    if pyproject is not None:
        (tmp_path / "pyproject.toml").write_text(pyproject)
    if setup_py:
        (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    return tmp_path


def _cli(*args: str, python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python, str(TOOL), *args], capture_output=True, text=True, check=False, timeout=60
    )


def test_the_setup_py_miniature_is_a_setuptools_build():
    found = build_backend.detect(MINITORCH / "project")
    assert found.kind == "setuptools"
    assert found.declared == "setuptools.build_meta"


def test_the_scikit_build_miniature_is_a_scikit_build_core_build():
    found = build_backend.detect(MINITORCH / "project_skbuild")
    assert found.kind == "scikit-build-core"
    assert any(r.startswith("scikit-build-core") for r in found.requires)


def test_a_scikit_build_core_declaration_wins_over_any_version(tmp_path):
    # Nothing in the tree names a version: the declaration alone decides.
    found = build_backend.detect(_tree(tmp_path, SKBUILD_PYPROJECT, setup_py=False))
    assert (found.kind, found.declared) == ("scikit-build-core", "scikit_build_core.build")
    assert found.source.endswith("pyproject.toml")


def test_a_bare_setup_py_is_setuptools_legacy(tmp_path):
    found = build_backend.detect(_tree(tmp_path, None, setup_py=True))
    assert (found.kind, found.declared) == ("setuptools", "setup.py")


def test_pyproject_without_build_backend_falls_back_to_setup_py(tmp_path):
    found = build_backend.detect(_tree(tmp_path, "[tool.ruff]\nline-length = 100\n", True))
    assert found.kind == "setuptools"


def test_neither_file_is_one_error_line_naming_the_tree(tmp_path):
    proc = _cli(str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr == (
        f"build_backend.py: error: {tmp_path}: has neither pyproject.toml nor setup.py; "
        "is this a PyTorch source tree?\n"
    )


def test_an_unknown_backend_names_the_file_and_what_it_declares(tmp_path):
    _tree(tmp_path, '[build-system]\nbuild-backend = "mesonpy"\n', setup_py=False)
    proc = _cli(str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert f"{tmp_path}/pyproject.toml: [build-system] build-backend = 'mesonpy'" in proc.stderr


def test_setuptools_declared_without_setup_py_is_refused(tmp_path):
    _tree(tmp_path, '[build-system]\nbuild-backend = "setuptools.build_meta"\n', False)
    proc = _cli(str(tmp_path))
    assert proc.returncode == 2
    assert "has no setup.py" in proc.stderr


def test_broken_toml_is_one_error_line(tmp_path):
    _tree(tmp_path, "[build-system\n", setup_py=False)
    proc = _cli(str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"build_backend.py: error: {tmp_path}/pyproject.toml: not valid")
    assert proc.stderr.count("\n") == 1


def test_the_cli_prints_the_kind(tmp_path):
    proc = _cli(str(_tree(tmp_path, SKBUILD_PYPROJECT, setup_py=False)))
    assert (proc.returncode, proc.stdout) == (0, "scikit-build-core\n")


@pytest.mark.parametrize("layout", ["project", "project_skbuild"])
def test_python_310_without_tomllib_gives_the_same_answer(layout):
    # The 2.13 recipe still builds a pytorch output for 3.10, whose stdlib has no tomllib.
    found = [i for i in find_interpreters() if i.version == (3, 10)]
    if not found:
        pytest.skip("no CPython 3.10 on this machine")
    expected = build_backend.detect(MINITORCH / layout).kind
    proc = _cli(str(MINITORCH / layout), python=str(found[0].executable))
    assert (proc.returncode, proc.stdout.strip()) == (0, expected)


def test_build_sh_stops_on_an_unknown_backend_with_one_line_naming_the_file(tmp_path):
    # The compile stage asks before it configures anything.
    src = _tree(tmp_path / "src", '[build-system]\nbuild-backend = "mesonpy"\n', False)
    (tmp_path / "prefix").mkdir()
    env = clean_env(
        PKG_NAME="libtorch-build",
        PKG_VERSION="2.13.0",
        SRC_DIR=str(src),
        PREFIX=str(tmp_path / "prefix"),
        RECIPE_DIR=str(REPO_ROOT / "recipe"),
        PYTHON=sys.executable,
        CF_TORCH_MEGABUILD_PYTHON=f"{sys.version_info[0]}.{sys.version_info[1]}",
        CF_TORCH_RELEASE_COMMIT=recorded_commit(),  # as the recipe's script_env passes it
        target_platform="linux-64",
        cuda_compiler_version="None",
        blas_impl="generic",
    )
    proc = subprocess.run(
        ["bash", str(REPO_ROOT / "recipe" / "build.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    [line] = [line for line in proc.stderr.splitlines() if line.strip()]
    assert line.startswith(f"build.sh: error: {src}/pyproject.toml: [build-system] build-backend")
    assert "'mesonpy'" in line
    assert not (src / "build").exists()
