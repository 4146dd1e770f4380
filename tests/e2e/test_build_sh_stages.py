"""recipe/build.sh driven the way rattler-build drives it for recipe/recipe-v1.yaml.

The staging output ``libtorch-build`` runs the ``compile`` stage once, with no package name
(rattler-build sets neither PKG_NAME nor PKG_VERSION in a staging output; the recipe passes
PKG_VERSION and CF_TORCH_BUILD_STAGE). Every output that inherits it starts from the same work
directory and the same $PREFIX path, holding only its own host packages (the staging output
installs nothing for it to restore): ``libtorch`` installs, ``libtorch-cuda-linalg`` installs
a flavour, ``pytorch`` retargets the tree to its Python. The miniature torch-like project and
the faked build environment are those of tests/e2e/test_build_sh.py, which drives the same script
the way conda-build does for meta.yaml.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import bld_bat
from helpers.minitorch.build_records import ninja_log, ran_between
from helpers.minitorch.fake_conda_build import FakeCondaBuild, Package
from helpers.minitorch.support import (
    RECIPE_DIR,
    base_venv,
    clean_env,
    install_blas,
    install_magma,
    two_interpreters,
)
from helpers.recipe_release import recorded_commit

BUILD_SH = RECIPE_DIR / "build.sh"
LIBTORCH_LIBS = ("libc10.so", "libtorch.so", "libtorch_cpu.so", "libtorch_cuda.so")


class FakeRattlerBuild(FakeCondaBuild):
    """FakeCondaBuild, but a staging output (no package name) leaves PKG_NAME unset."""

    def environment(self, pkg_name: str, extra: Mapping[str, str]) -> dict[str, str]:
        env = super().environment(pkg_name, extra)
        if not pkg_name:
            del env["PKG_NAME"]
        return env


@dataclass(frozen=True)
class StagedFlow:
    staging: Package
    libtorch: Package
    ran_for_libtorch: set[str]
    linalg: dict[str, Package]
    pytorch: Package


def stage(name: str, **extra: str) -> dict[str, str]:
    return {"CF_TORCH_BUILD_STAGE": name, **extra}


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> StagedFlow:
    first, _ = two_interpreters()
    venv = base_venv(first)
    scratch = tmp_path_factory.mktemp("rattler-bld")
    build = FakeRattlerBuild(
        scratch,
        {"cuda_compiler_version": "13.0", "blas_impl": "generic"},
        megabuild_python=first.tag,
    )
    install_magma(scratch / "libmagma", scratch)
    magma = build.package_from("libmagma", scratch / "libmagma")
    install_blas(scratch / "blas", scratch)
    blas = build.package_from("blas", scratch / "blas")

    staging = build.run_output("", venv, [magma, blas], stage("compile"), label="libtorch-build")
    compiled = ninja_log(build.src_dir / "build")
    libtorch = build.run_output("libtorch", venv, [magma, blas], stage("libtorch"))
    ran = ran_between(compiled, ninja_log(build.src_dir / "build"))
    linalg = {
        flavour: build.run_output(
            "libtorch-cuda-linalg",
            venv,
            [magma] if flavour == "magma" else [],
            stage("libtorch-cuda-linalg", CF_TORCH_LINALG_FLAVOR=flavour),
            label=f"linalg-{flavour}",
        )
        for flavour in ("magma", "nomagma")
    }
    pytorch = build.run_output(
        "pytorch", venv, [magma, blas, libtorch, linalg["magma"]], stage("pytorch")
    )
    return StagedFlow(staging, libtorch, ran, linalg, pytorch)


@pytest.mark.slow
def test_compile_stage_installs_nothing(staged: StagedFlow) -> None:
    assert staged.staging.files == frozenset()


@pytest.mark.slow
def test_libtorch_stage_after_the_compile_stage_compiles_nothing(staged: StagedFlow) -> None:
    assert staged.ran_for_libtorch == set()


@pytest.mark.slow
def test_libtorch_stage_ships_libraries_cmake_config_and_activation(staged: StagedFlow) -> None:
    files = staged.libtorch.files
    assert {f"lib/{name}" for name in LIBTORCH_LIBS} <= files
    assert "share/cmake/Torch/TorchConfig.cmake" in files
    assert "etc/conda/activate.d/libtorch_activate.sh" in files
    assert not any("torch_python" in f or "torch_cuda_linalg" in f for f in files)


@pytest.mark.slow
@pytest.mark.parametrize("flavour", ["magma", "nomagma"])
def test_linalg_stage_ships_the_stashed_flavour(staged: StagedFlow, flavour: str) -> None:
    assert staged.linalg[flavour].files == {"lib/libtorch_cuda_linalg.so"}


@pytest.mark.slow
def test_pytorch_stage_ships_libtorch_python_and_the_torch_package(staged: StagedFlow) -> None:
    files = staged.pytorch.files
    assert "lib/libtorch_python.so" in files
    assert any(f.endswith("/torch/__init__.py") for f in files)
    assert not files & staged.libtorch.files


# ---------------------------------------------------------------- bad stage values


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "src").mkdir(exist_ok=True)
    (tmp_path / "prefix").mkdir(exist_ok=True)
    values = clean_env(
        PKG_VERSION="2.13.0",
        SRC_DIR=str(tmp_path / "src"),
        PREFIX=str(tmp_path / "prefix"),
        RECIPE_DIR=str(RECIPE_DIR),
        PYTHON=sys.executable,
        target_platform="linux-64",
        cuda_compiler_version="None",
        blas_impl="generic",
        CF_TORCH_RELEASE_COMMIT=recorded_commit(),
    )
    values.update(env)
    return subprocess.run(
        ["bash", str(BUILD_SH)], env=values, capture_output=True, text=True, check=False
    )


def _error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("build.sh: error:")]
    return line


def test_an_unknown_stage_is_named_with_the_variable_that_set_it(tmp_path: Path) -> None:
    line = _error_line(_run(tmp_path, CF_TORCH_BUILD_STAGE="wheel", PKG_NAME="libtorch"))
    assert "CF_TORCH_BUILD_STAGE='wheel'" in line and "recipe/build.sh" in line


def test_without_stage_or_package_name_the_recipes_are_named(tmp_path: Path) -> None:
    line = _error_line(_run(tmp_path))
    assert "CF_TORCH_BUILD_STAGE" in line and "recipe/recipe-v1.yaml" in line


def test_the_top_level_builds_package_name_runs_the_compile_stage(tmp_path: Path) -> None:
    # conda-build's PKG_NAME for meta.yaml's top-level build, should CF_TORCH_BUILD_STAGE be
    # missing: the compile stage starts (and stops at its first requirement here)
    line = _error_line(_run(tmp_path, PKG_NAME="libtorch-build"))
    assert "CF_TORCH_MEGABUILD_PYTHON is not set" in line


def test_libtorch_stage_without_the_compiled_tree_stops(tmp_path: Path) -> None:
    (tmp_path / "src" / "_stage").mkdir(parents=True)
    (tmp_path / "src" / "_stage" / "compiled").write_text("3.12\n")
    line = _error_line(_run(tmp_path, CF_TORCH_BUILD_STAGE="libtorch"))
    assert "CMakeCache.txt does not" in line and "recipe-v1.yaml" in line


def test_bld_bat_compile_stage_stops_before_installing_and_libtorch_skips_compiling() -> None:
    # No cmd.exe here: bld.bat is held to build.sh's stages by reading its stage files.
    compile_ = bld_bat.text("bld_compile.bat")
    steps = ["-m pip wheel . --no-deps", '> "%COMPILED_MARKER%"']
    assert [compile_.index(step) for step in steps] == sorted(compile_.index(s) for s in steps)
    assert "package_files.py" not in compile_
    libtorch = bld_bat.text("bld_libtorch.bat")
    steps = [
        'if exist "%COMPILED_MARKER%" goto :libtorch_install',
        'bld_compile.bat""',
        "\n:libtorch_install\n",
        'package_files.py" libtorch --platform win-64 --tree "%TORCH_TREE%"',
    ]
    positions = [libtorch.index(step) for step in steps]
    assert positions == sorted(positions)
