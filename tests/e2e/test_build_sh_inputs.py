"""recipe/build.sh on bad input, without building: each refusal is one line naming the
variable, its value and the file to edit, exit 2, and nothing in $PREFIX.

Split from tests/e2e/test_build_sh.py (the builds of the miniature); fast.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.minitorch.support import RECIPE_DIR, clean_env
from helpers.recipe_release import recorded_commit

BUILD_SH = RECIPE_DIR / "build.sh"


def _env(tmp_path: Path, **overrides: str) -> dict[str, str]:
    (tmp_path / "src").mkdir(exist_ok=True)
    (tmp_path / "prefix").mkdir(exist_ok=True)
    env = clean_env(
        PKG_NAME="libtorch",
        PKG_VERSION="2.13.0",
        SRC_DIR=str(tmp_path / "src"),
        PREFIX=str(tmp_path / "prefix"),
        BUILD_PREFIX=str(tmp_path / "prefix"),
        RECIPE_DIR=str(RECIPE_DIR),
        PYTHON=sys.executable,
        SP_DIR=str(tmp_path / "sp"),
        target_platform="linux-64",
        cuda_compiler_version="None",
        blas_impl="generic",
        CPU_COUNT="2",
        SHLIB_EXT=".so",
        CF_TORCH_PYTHON=f"{sys.version_info[0]}.{sys.version_info[1]}",
        CF_TORCH_RELEASE_COMMIT=recorded_commit(),
    )
    env.update(overrides)
    return {k: v for k, v in env.items() if v != "<unset>"}


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"PKG_NAME": "pytorch-cpu"}, ["PKG_NAME='pytorch-cpu'", "recipe/build.sh"]),
        ({"blas_impl": "openblas"}, ["blas_impl='openblas'", "recipe/conda_build_config.yaml"]),
        (
            {"blas_impl": "mkl", "target_platform": "linux-aarch64"},
            ["blas_impl='mkl'", "linux-aarch64", "recipe/conda_build_config.yaml"],
        ),
        (
            {"cuda_compiler_version": "11.8"},
            ["cuda_compiler_version='11.8'", "recipe/cuda_arch_lists.txt"],
        ),
        (
            {"cuda_compiler_version": "12.9", "target_platform": "osx-arm64"},
            ["cuda_compiler_version='12.9'", "osx-arm64"],
        ),
        ({"target_platform": "win-64"}, ["target_platform='win-64'", "recipe/bld.bat"]),
        (
            {"PKG_NAME": "libtorch-cuda-linalg", "CF_TORCH_LINALG_FLAVOR": "fast"},
            ["CF_TORCH_LINALG_FLAVOR='fast'", "recipe/meta.yaml"],
        ),
        (
            {
                "PKG_NAME": "libtorch-cuda-linalg",
                "CF_TORCH_LINALG_FLAVOR": "magma",
                "blas_impl": "<unset>",
            },
            ["cuda-linalg-magma", "does not exist"],
        ),
        ({"PKG_NAME": "pytorch"}, ["CMakeCache.txt does not exist"]),
        ({"CF_TORCH_MEGABUILD_PYTHON": "2.7"}, ["CF_TORCH_MEGABUILD_PYTHON='2.7'", "meta.yaml"]),
        (
            {"CF_TORCH_MEGABUILD_PYTHON": "<unset>"},
            ["CF_TORCH_MEGABUILD_PYTHON is not set", "recipe/meta.yaml"],
        ),
        ({"PREFIX": "<unset>"}, ["PREFIX is not set"]),
        (
            {"CF_TORCH_RELEASE_COMMIT": "<unset>"},
            ["CF_TORCH_RELEASE_COMMIT='' is not a commit", "recipe/meta.yaml"],
        ),
        (
            {"CF_TORCH_RELEASE_COMMIT": "Unknown"},
            ["CF_TORCH_RELEASE_COMMIT='Unknown' is not a commit", "script_env"],
        ),
    ],
)
def test_bad_configuration_stops_with_one_line_naming_value_and_file(
    tmp_path: Path, overrides: dict[str, str], expected: list[str]
) -> None:
    result = subprocess.run(
        ["bash", str(BUILD_SH)],
        env=_env(tmp_path, **overrides),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    [line] = [line for line in result.stderr.splitlines() if line.strip()]
    assert line.startswith("build.sh: error: ")
    for text in expected:
        assert text in line
    assert not any((tmp_path / "prefix").iterdir())


@pytest.mark.parametrize(
    ("platform", "tool"), [("linux-64", "readelf"), ("osx-arm64", "otool")], ids=["linux", "osx"]
)
def test_libtorch_stops_before_building_without_the_platforms_linkage_tool(
    tmp_path: Path, platform: str, tool: str
) -> None:
    # The check that libtorch links no Python library must not pass by doing nothing.
    (tmp_path / "bin").mkdir()
    env = _env(
        tmp_path,
        target_platform=platform,
        CF_TORCH_MEGABUILD_PYTHON=f"{sys.version_info[0]}.{sys.version_info[1]}",
        PATH=str(tmp_path / "bin"),
        READELF="<unset>",
        OTOOL="<unset>",
    )
    bash = shutil.which("bash")
    assert bash
    result = subprocess.run(
        [bash, str(BUILD_SH)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2, result.stderr
    [line] = [line for line in result.stderr.splitlines() if line.strip()]
    assert line.startswith(f"build.sh: error: {tool} is not on PATH")
    assert "recipe/meta.yaml" in line
    assert not (tmp_path / "src" / "build").exists()


def test_pytorch_output_refuses_a_python_other_than_py_ver(tmp_path: Path) -> None:
    env = _env(tmp_path, PKG_NAME="pytorch", PY_VER="3.99")
    (tmp_path / "src" / "build").mkdir()
    (tmp_path / "src" / "build" / "CMakeCache.txt").write_text("USE_CUDA:BOOL=OFF\n")
    result = subprocess.run(
        ["bash", str(BUILD_SH)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2
    assert "PY_VER='3.99'" in result.stderr and "recipe/meta.yaml" in result.stderr
    assert (tmp_path / "src" / "build" / "CMakeCache.txt").read_text() == "USE_CUDA:BOOL=OFF\n"


def test_pytorch_output_needs_the_compiler_cache_the_tree_was_configured_with(
    tmp_path: Path,
) -> None:
    env = _env(tmp_path, PKG_NAME="pytorch")
    (tmp_path / "src" / "build").mkdir()
    cache = tmp_path / "src" / "build" / "CMakeCache.txt"
    cache.write_text("CMAKE_CXX_COMPILER_LAUNCHER:STRING=no-such-ccache\n")
    result = subprocess.run(
        ["bash", str(BUILD_SH)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2
    assert "CMAKE_CXX_COMPILER_LAUNCHER='no-such-ccache'" in result.stderr
    assert "recipe/meta.yaml" in result.stderr
