"""The miniature's scikit-build-core layout forwards build options and lays out the wheel the
way PyTorch 2.15 does (tests/fixtures/minitorch/README.md): BUILD_*/USE_*/CMAKE_* from the
environment overwrite the cache on every configure, MAX_JOBS becomes
CMAKE_BUILD_PARALLEL_LEVEL through pyproject's env table, PostBuildSteps-like install rules
add runtime libraries, and torch/lib/libshm/ ships as a header folder."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from helpers.minitorch.support import (
    SCIKIT_BUILD_CORE,
    backend_wheel,
    base_venv,
    copy_project,
    two_interpreters,
    venv_python,
)
from helpers.recipe_helpers import recipe_module

cache_file = recipe_module("cmake_cache/cache_file")

pytestmark = pytest.mark.slow


def wheel(project: Path, **env: str) -> zipfile.ZipFile:
    """The backend's wheel of ``project``, built in its kept build/ with ``env`` exported."""
    python = venv_python(base_venv(two_interpreters()[0], layout=SCIKIT_BUILD_CORE))
    out = project / "wheels"
    for old in out.glob("*.whl"):
        old.unlink()
    backend_wheel(python, project, **env)
    [built] = out.glob("*.whl")
    return zipfile.ZipFile(built)


def cached(project: Path, name: str) -> str | None:
    entry = cache_file.load(project / "build" / "CMakeCache.txt").get(name)
    return None if entry is None else entry.value


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_project(tmp_path_factory.mktemp("forwarding") / "src", SCIKIT_BUILD_CORE)


def test_every_configure_writes_forwarded_variables_and_keeps_unset_ones(project: Path) -> None:
    wheel(project, USE_GLOG="1", BUILD_CUDA_LINALG_NOMAGMA="1", MAX_JOBS="1")
    assert cached(project, "USE_GLOG") == "1"
    assert cached(project, "BUILD_CUDA_LINALG_NOMAGMA") == "1"
    # MAX_JOBS reached the build as CMAKE_BUILD_PARALLEL_LEVEL (pyproject's env table),
    # which the forwarding then copied like any CMAKE_* variable.
    assert cached(project, "CMAKE_BUILD_PARALLEL_LEVEL") == "1"
    # The next configure: a changed value overwrites the cache, an unset one leaves it.
    wheel(project, USE_GLOG="0")
    assert cached(project, "USE_GLOG") == "0"
    assert cached(project, "BUILD_CUDA_LINALG_NOMAGMA") == "1"


def test_the_wheel_ships_the_libshm_header_folder_beside_the_libraries(project: Path) -> None:
    names = set(wheel(project).namelist())
    assert {"torch/lib/libshm/libshm.h", "torch/lib/libshm/err.h"} <= names
    assert "torch/lib/libc10.so" in names


def test_post_build_steps_install_the_openmp_runtime_and_runtime_dlls(
    project: Path, tmp_path: Path
) -> None:
    runtime = tmp_path / "libomp.so"
    runtime.write_bytes(b"an OpenMP runtime\n")
    dll = tmp_path / "uv.dll"
    dll.write_bytes(b"a runtime DLL\n")
    # As on macOS and Windows, with the platform branches taken on this Linux machine.
    names = set(
        wheel(
            project,
            USE_OPENMP="1",
            CMAKE_ARGS=(
                f"-DTORCH_POST_BUILD_AS_APPLE=ON -DTORCH_OPENMP_RUNTIME={runtime} "
                f"-DTORCH_POST_BUILD_AS_WIN32=ON -DTORCH_RUNTIME_DLLS={dll}"
            ),
        ).namelist()
    )
    assert {"torch/lib/libomp.so", "torch/lib/uv.dll"} <= names
    # Without USE_OPENMP the runtime stays out, as upstream's rule is gated on it.
    names = set(wheel(project, USE_OPENMP="0").namelist())
    assert "torch/lib/libomp.so" not in names
