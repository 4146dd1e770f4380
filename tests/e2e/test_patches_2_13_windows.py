"""Patches 0011 and 0012 against PyTorch 2.13.0's text: the Windows toolchain, run for real
with CMake against the unpatched and the patched text (tests/fixtures/upstream_2_13/; the
patches apply without fuzz: tests/e2e/test_patches_2_13.py):

- 0011: the toolkit root FindCUDAToolkit computes, with and without the cache entry;
- 0012: the OpenMP flags FindOpenMP offers MSVC, computed by CMake (cmake -P).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.patched_upstream import (
    cmake,
    patched,
)

# -- 0011: the Windows CUDA toolkit root -----------------------------------------------------


def toolkit_root(tmp_path: Path, upstream: Path, *extra: str) -> str:
    """CUDAToolkit_ROOT_DIR after the module's compiler block, nvcc being in another prefix
    than the toolkit's headers (conda on Windows: build vs host environment)."""
    project = tmp_path / "toolkit"
    project.mkdir(exist_ok=True)
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(toolkit NONE)\n"
        'set(CMAKE_CUDA_COMPILER_TOOLKIT_ROOT "/build_env/Library")\n'
        'set(CMAKE_CUDA_COMPILER_LIBRARY_ROOT "/build_env/Library")\n'
        "set(CMAKE_CUDA_COMPILER_TOOLKIT_VERSION 12.8)\n"
        f'include("{upstream}/cmake/Modules/FindCUDAToolkit.cmake")\n'
        'message(STATUS "root=${CUDAToolkit_ROOT_DIR}")\n'
    )
    build = tmp_path / f"toolkit-build-{len(extra)}"
    configured = cmake("-S", str(project), "-B", str(build), *extra)
    assert configured.returncode == 0, configured.stderr
    return next(
        line.split("root=", 1)[1] for line in configured.stdout.splitlines() if "root=" in line
    )


HOST_ROOT = "-DCUDAToolkit_ROOT_DIR=/host_env/Library"


@pytest.mark.slow
def test_without_0011_nvccs_prefix_overrides_the_toolkit_root_bld_bat_names(tmp_path: Path):
    assert toolkit_root(tmp_path, patched(tmp_path), HOST_ROOT) == "/build_env/Library"


@pytest.mark.slow
def test_with_0011_the_toolkit_root_bld_bat_names_wins_and_nothing_else_changes(tmp_path: Path):
    upstream = patched(tmp_path, "0011")
    assert toolkit_root(tmp_path, upstream, HOST_ROOT) == "/host_env/Library"
    assert toolkit_root(tmp_path, upstream) == "/build_env/Library"


# -- 0012: MSVC's OpenMP flag -----------------------------------------------------------------

MSVC_HEADER = "C:/Program Files/Microsoft Visual Studio/2022/VC/Tools/MSVC/14.44/include"
CONDA_HEADER = "C:/conda/envs/host/Library/include"


def msvc_openmp_candidates(tmp_path: Path, upstream: Path, header_dir: str) -> list[str]:
    """The flags 2.13.0's FindOpenMP tries, in order, for MSVC with omp.h found in header_dir."""
    script = tmp_path / f"candidates-{len(list(tmp_path.iterdir()))}.cmake"
    script.write_text(
        # find_path keeps a value already in __header_dir: the omp.h the search would find
        f'set(__header_dir "{header_dir}")\n'
        "set(CMAKE_CXX_COMPILER_ID MSVC)\n"
        f'include("{upstream}/cmake/Modules/FindOpenMP.cmake")\n'
        "_OPENMP_FLAG_CANDIDATES(CXX)\n"
        "foreach(flag IN LISTS OpenMP_CXX_FLAG_CANDIDATES)\n"
        '  message("flag=${flag}")\n'
        "endforeach()\n"
    )
    result = cmake("-P", str(script))
    assert result.returncode == 0, result.stderr
    return [line[len("flag=") :] for line in result.stderr.splitlines() if line.startswith("flag=")]


@pytest.mark.slow
def test_without_0012_msvc_tries_the_vcomp_flags_only(tmp_path: Path):
    upstream = patched(tmp_path)
    assert msvc_openmp_candidates(tmp_path, upstream, MSVC_HEADER) == [
        "-openmp:experimental",
        "-openmp",
    ]


@pytest.mark.slow
def test_with_0012_msvc_tries_the_llvm_runtime_flag_first_with_either_header(tmp_path: Path):
    upstream = patched(tmp_path, "0012")
    assert msvc_openmp_candidates(tmp_path, upstream, MSVC_HEADER) == [
        "-openmp:llvm",
        "-openmp:experimental",
        "-openmp",
    ]
    assert msvc_openmp_candidates(tmp_path, upstream, CONDA_HEADER) == [
        f"-openmp:llvm -I{CONDA_HEADER}",
        f"-openmp:experimental -I{CONDA_HEADER}",
        f"-openmp -I{CONDA_HEADER}",
    ]


@pytest.mark.slow
def test_0012_leaves_the_other_compilers_flags_alone(tmp_path: Path):
    script = tmp_path / "gnu.cmake"
    script.write_text(
        "set(CMAKE_CXX_COMPILER_ID GNU)\n"
        f'include("{patched(tmp_path, "0012")}/cmake/Modules/FindOpenMP.cmake")\n'
        '_OPENMP_FLAG_CANDIDATES(CXX)\nmessage("${OpenMP_CXX_FLAG_CANDIDATES}")\n'
    )
    assert cmake("-P", str(script)).stderr.strip() == "-fopenmp"
