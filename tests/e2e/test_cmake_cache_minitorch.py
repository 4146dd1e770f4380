"""cmake_cache on a real build tree: the miniature torch-like project.

Megabuild: build for one Python, retarget the cache to a second interpreter,
rebuild; only the Python-bound targets may recompile or relink, and the result
must import under the second interpreter.
magma/nomagma: build with USE_MAGMA off, flip it with the helper, rebuild; every
source reaching the generated ATen/cuda/CUDAConfig.h recompiles (why build.sh no
longer flips it), and the linalg library's NEEDED entries gain exactly libmagma.
"""

from __future__ import annotations

import posixpath
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.cuda_build import cuda_build_tools
from helpers.minitorch.build_records import needed, ninja_log, ran_between
from helpers.minitorch.support import (
    CORE_OBJECTS,
    LIBTORCH_LIBS,
    RECIPE_DIR,
    Interpreter,
    base_venv,
    clean_env,
    copy_project,
    install_magma,
    run,
    two_interpreters,
    venv_python,
)
from helpers.recipe_helpers import CMAKE_CACHE

pytestmark = pytest.mark.slow

# The Python-independent core: libtorch's libraries, its program and their objects.
PYTHON_INDEPENDENT_OUTPUTS = {
    *LIBTORCH_LIBS,
    "torch_shm_manager",
    *(posixpath.basename(o) for o in CORE_OBJECTS),
}


@dataclass(frozen=True)
class Rebuild:
    project: Path
    ran: set[str]
    first: Interpreter
    second: Interpreter
    second_venv: Path


@pytest.fixture(scope="module")
def megabuild(tmp_path_factory: pytest.TempPathFactory) -> Rebuild:
    first, second = two_interpreters()
    first_venv = base_venv(first)
    # Without a second Python version, a venv in another prefix still moves every path.
    second_venv = base_venv(second, flavour="a" if second != first else "b")
    project = copy_project(tmp_path_factory.mktemp("megabuild") / "minitorch")
    # As recipe/build.sh does: CMake's install would otherwise keep a libtorch_python
    # rebuilt within a second of the first install (it compares time stamps only).
    build_env = clean_env(CMAKE_INSTALL_ALWAYS="1")
    run([venv_python(first_venv), "setup.py", "build"], cwd=project, env=build_env)
    before = ninja_log(project / "build")
    run(
        [
            sys.executable,
            CMAKE_CACHE,
            "retarget-python",
            project / "build" / "CMakeCache.txt",
            "--python",
            venv_python(second_venv),
        ]
    )
    run([venv_python(second_venv), "setup.py", "build"], cwd=project, env=build_env)
    return Rebuild(
        project, ran_between(before, ninja_log(project / "build")), first, second, second_venv
    )


def test_megabuild_does_not_rebuild_python_independent_targets(megabuild: Rebuild) -> None:
    assert megabuild.ran.isdisjoint(PYTHON_INDEPENDENT_OUTPUTS), megabuild.ran


def test_megabuild_rebuilds_libtorch_python_for_the_new_python(megabuild: Rebuild) -> None:
    if megabuild.first.version == megabuild.second.version:
        pytest.skip("one Python version only: its headers did not change")
    assert {"Module.cpp.o", "libtorch_python.so"} <= megabuild.ran


def test_megabuild_result_imports_under_the_second_interpreter(megabuild: Rebuild) -> None:
    major, minor = megabuild.second.version
    [lib_dir] = (megabuild.project / "build").glob(f"lib.*-cpython-{major}{minor}")
    probe = run(
        [
            venv_python(megabuild.second_venv),
            "-c",
            (
                "import sys, torch; print(torch.built_for(), sys.version.split()[0], "
                "torch.add(2, 3))"
            ),
        ],
        cwd=lib_dir,
        env=clean_env(),
    )
    built_for, running, result = probe.stdout.split()
    assert built_for == running, (
        f"torch._C was compiled against Python {built_for} headers but imported by "
        f"Python {running} ({venv_python(megabuild.second_venv)})"
    )
    assert result == "5"


@dataclass(frozen=True)
class MagmaFlip:
    ran: set[str]
    nomagma: Path
    magma: Path


@pytest.fixture(scope="module")
def magma_flip(tmp_path_factory: pytest.TempPathFactory) -> MagmaFlip:
    first, _ = two_interpreters()
    python = venv_python(base_venv(first))
    scratch = tmp_path_factory.mktemp("magma")
    magma_home = scratch / "host"
    install_magma(magma_home, scratch)
    project = copy_project(scratch / "minitorch")
    library = project / "build" / "libtorch_cuda_linalg.so"

    # nvcc and the CUDA libraries from NVIDIA's wheels; one architecture is enough for a
    # test of what the MAGMA switch recompiles.
    cuda, _ = cuda_build_tools({"cuda_compiler_version": "13.0"}, RECIPE_DIR, scratch)
    assert cuda is not None
    env = clean_env(USE_CUDA="1", USE_MAGMA="0", MAGMA_HOME=str(magma_home))
    env.update(
        PATH=f"{cuda / 'bin'}:{env['PATH']}",
        CUDAToolkit_ROOT=str(cuda),
        TORCH_CUDA_ARCH_LIST="8.0+PTX",
    )
    run([python, "setup.py", "build"], cwd=project, env=env)
    nomagma = shutil.copy2(library, scratch / "nomagma.so")
    before = ninja_log(project / "build")
    run(
        [
            sys.executable,
            CMAKE_CACHE,
            "set",
            project / "build" / "CMakeCache.txt",
            "USE_MAGMA:BOOL=ON",
        ]
    )
    # The miniature, like PyTorch, lets an exported USE_MAGMA win over the cache.
    run([python, "setup.py", "build"], cwd=project, env={**env, "USE_MAGMA": "1"})
    return MagmaFlip(ran_between(before, ninja_log(project / "build")), Path(nomagma), library)


def test_magma_flip_recompiles_every_source_that_reaches_the_generated_switch(
    magma_flip: MagmaFlip,
) -> None:
    # What makes a second USE_MAGMA pass expensive (recipe/README.md, "MAGMA or not"):
    # CUDAConfig.h is rewritten, and libtorch_cuda's sources that include it recompile.
    # CUDAContext.cpp, which does not reach it, and the CPU libraries stay as they were.
    objects = {name for name in magma_flip.ran if name.endswith(".o")}
    assert objects == {
        "CUDAHooks.cpp.o",
        "Sort.cu.o",
        "UnarySpecialOpsKernel.cu.o",
        "BatchLinearAlgebra.cpp.o",
        "BatchLinearAlgebraLib.cpp.o",
        "LinalgKernels.cu.o",
    }


def test_magma_flip_adds_exactly_libmagma_to_needed(magma_flip: MagmaFlip) -> None:
    with_magma, without = needed(magma_flip.magma), needed(magma_flip.nomagma)
    assert (with_magma - without, without - with_magma) == ({"libmagma.so"}, set())
