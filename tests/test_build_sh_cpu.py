"""recipe/build.sh, run for real against the miniature torch-like project, outside the
Linux CUDA flow of tests/test_build_sh.py: a CPU configuration (what libtorch and pytorch
ship without CUDA, and what build.sh refuses to package), a source tree without the recipe's
nomagma patch, and a macOS configuration whose linkage a stand-in otool lists. Each fixture
runs its faked conda-build once for the module.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

import pytest
from fixtures.minitorch.fake_conda_build import FakeCondaBuild, Package, site_packages_of
from fixtures.minitorch.support import (
    LIBTORCH_LIBS,
    REPO_ROOT,
    base_venv,
    build_sh_error,
    install_blas,
    install_magma,
    two_interpreters,
)


@dataclass(frozen=True)
class CpuFlow:
    clobbering: subprocess.CompletedProcess[str]
    python_bound: subprocess.CompletedProcess[str]
    libtorch: Package
    pytorch: Package


@pytest.fixture(scope="module")
def cpu_flow(tmp_path_factory: pytest.TempPathFactory) -> CpuFlow:
    first, _ = two_interpreters()
    venv = base_venv(first)
    scratch = tmp_path_factory.mktemp("conda-bld-cpu")
    conda = FakeCondaBuild(
        scratch, {"cuda_compiler_version": "None", "blas_impl": "mkl"}, megabuild_python=first.tag
    )
    # A host dependency that already ships one of libtorch's headers.
    (scratch / "other" / "include" / "c10").mkdir(parents=True)
    (scratch / "other" / "include" / "c10" / "c10.h").write_text("// another package's\n")
    clobbering = conda.attempt_output(
        "libtorch", venv, [conda.package_from("other", scratch / "other")]
    )
    # A libtorch library that links libpython, as readelf would show it.
    readelf = scratch / "python-bound-readelf"
    readelf.write_text(
        '#!/bin/sh\nreadelf "$@" || exit\n'
        "echo ' 0x0000000000000001 (NEEDED)  Shared library: [libpython3.12.so.1.0]'\n"
    )
    readelf.chmod(0o755)
    python_bound = conda.attempt_output("libtorch", venv, extra_env={"READELF": str(readelf)})
    libtorch = conda.run_output("libtorch", venv)
    pytorch = conda.run_output("pytorch", venv, [libtorch])
    return CpuFlow(clobbering, python_bound, libtorch, pytorch)


@pytest.mark.slow
def test_cpu_libtorch_ships_no_linalg_and_no_activation_scripts(cpu_flow: CpuFlow) -> None:
    assert cpu_flow.libtorch.files == {
        *(f"lib/{name}" for name in LIBTORCH_LIBS),
        "bin/torch_shm_manager",
        "include/ATen/ATen.h",
        "include/ATen/core/Tensor.h",
        "include/c10/c10.h",
        "include/torch/csrc/autograd/python_variable.h",
        "include/torch/csrc/autograd/variable.h",
        "include/torch/csrc/utils/pybind.h",
        "include/torch/extension.h",
        "include/torch/torch.h",
        "include/torch/version.h",
        "share/cmake/ATen/ATenConfig.cmake",
        "share/cmake/Torch/TorchConfig.cmake",
    }


def _recipe_file_tests(output: str) -> list[str]:
    """meta.yaml's test commands of ``output`` (linux-64 CPU) that check installed files."""
    from fixtures import feedstock_matrix

    from tools.render.config import render_config

    config = feedstock_matrix.find(platform="linux-64", cuda=False)
    if config is None:
        pytest.skip("no linux-64 CPU config in .ci_support")
    [rendered] = [o for o in render_config(config.name, root=REPO_ROOT) if o.name == output]
    commands = (rendered.tests or {}).get("commands", [])
    return [c for c in commands if c.startswith(("test ", "for lib in "))]


@pytest.mark.slow
def test_libtorchs_file_tests_in_the_recipe_hold_on_the_miniatures_libtorch(
    cpu_flow: CpuFlow,
) -> None:
    # conda-build's test phase runs them on the real release; the miniature installs the
    # same libraries (libshm among them) and programs, so they hold on it too.
    commands = _recipe_file_tests("libtorch")
    assert any("shm" in c for c in commands), commands
    env = {"PATH": os.environ["PATH"], "PREFIX": str(cpu_flow.libtorch.root), "SHLIB_EXT": ".so"}
    # -e as the engines run test commands (conda-build's test script starts `set -ex`): a
    # `for` loop's failing `test -f` stops it, not only the last one.
    failed = [
        c
        for c in commands
        if subprocess.run(["bash", "-e", "-c", c], env=env, check=False).returncode
    ]
    assert failed == []


@pytest.mark.slow
def test_the_miniatures_torch_shm_manager_runs_from_libtorch(cpu_flow: CpuFlow) -> None:
    manager = cpu_flow.libtorch.root / "bin" / "torch_shm_manager"
    result = subprocess.run([manager], capture_output=True, text=True, check=False)
    assert result.returncode == 0 and "libshm" in result.stdout, result


@pytest.mark.slow
def test_cpu_pytorch_links_every_torch_lib_library_into_prefix(cpu_flow: CpuFlow) -> None:
    torch_lib = cpu_flow.pytorch.root / site_packages_of(cpu_flow.pytorch) / "torch" / "lib"
    libraries = [p for p in torch_lib.iterdir() if p.name != "libshm"]
    assert {p.name: os.readlink(p) for p in libraries} == {
        name: f"../../../../{name}" for name in (*LIBTORCH_LIBS, "libtorch_python.so")
    }


@pytest.mark.slow
def test_libtorch_refuses_to_overwrite_a_host_dependencys_file(cpu_flow: CpuFlow) -> None:
    assert cpu_flow.clobbering.returncode == 2
    line = build_sh_error(cpu_flow.clobbering.stderr)
    assert "include/c10/c10.h already exists" in line and "recipe/package_files.py" in line


@pytest.mark.slow
def test_libtorch_refuses_a_library_that_links_libpython(cpu_flow: CpuFlow) -> None:
    assert cpu_flow.python_bound.returncode == 2
    line = build_sh_error(cpu_flow.python_bound.stderr)
    assert "needs a Python library" in line and "recipe/package_files.py" in line


@pytest.mark.slow
def test_libtorch_stops_when_the_tree_builds_no_nomagma_linalg(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # A source tree without the recipe's patch 0004 (here: the miniature with its nomagma
    # target switched off) must not yield a libtorch-cuda-linalg stash with one flavour.
    first, _ = two_interpreters()
    scratch = tmp_path_factory.mktemp("conda-bld-unpatched")
    conda = FakeCondaBuild(
        scratch, {"cuda_compiler_version": "13.0", "blas_impl": "mkl"}, first.tag
    )
    cmake_lists = conda.src_dir / "cmake" / "Targets.cmake"
    text = cmake_lists.read_text()
    assert "if(USE_MAGMA AND BUILD_CUDA_LINALG_NOMAGMA)" in text
    cmake_lists.write_text(text.replace("AND BUILD_CUDA_LINALG_NOMAGMA)", "AND FALSE)"))
    install_magma(scratch / "libmagma", scratch)
    result = conda.attempt_output(
        "libtorch", base_venv(first), [conda.package_from("libmagma", scratch / "libmagma")]
    )
    assert result.returncode == 2, result.stderr[-2000:]
    line = build_sh_error(result.stderr)
    assert "component cuda_linalg_nomagma, USE_MAGMA=1 in the tree" in line
    assert "patches/0004-" in line
    assert not (scratch / "work" / "_stage" / "cuda-linalg-nomagma" / "lib").exists()


# ---------------------------------------------------------------- macOS linkage (otool)

OTOOL_OUTPUT = """#!/bin/sh
# otool -L as macOS prints it: the file, its own install name, then what it links.
[ "$1" = -L ] || exit 64
printf '%s:\\n' "$2"
printf '\\t@rpath/%s (compatibility version 0.0.0, current version 0.0.0)\\n' "${2##*/}"
printf '\\t/usr/lib/libc++.1.dylib (compatibility version 1.0.0, current version 1.0.0)\\n'
"""


@dataclass(frozen=True)
class OsxLinkage:
    clean: subprocess.CompletedProcess[str]
    python_bound: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def osx_linkage(tmp_path_factory: pytest.TempPathFactory) -> OsxLinkage:
    # The miniature builds natively; only the linkage listing is macOS's (a stand-in otool).
    first, _ = two_interpreters()
    venv = base_venv(first)
    scratch = tmp_path_factory.mktemp("conda-bld-osx")
    conda = FakeCondaBuild(
        scratch,
        {"cuda_compiler_version": "None", "blas_impl": "generic", "target_platform": "osx-arm64"},
        megabuild_python=first.tag,
    )
    install_blas(scratch / "blas", scratch)
    blas = conda.package_from("blas", scratch / "blas")
    results = []
    for name, extra in (("otool", ""), ("python-bound-otool", "@rpath/libpython3.12.dylib")):
        otool = scratch / name
        line = f"printf '\\t{extra} (compatibility version 3.12.0)\\n'\n" if extra else ""
        otool.write_text(OTOOL_OUTPUT + line)
        otool.chmod(0o755)
        results.append(conda.attempt_output("libtorch", venv, [blas], {"OTOOL": str(otool)}))
    return OsxLinkage(*results)


@pytest.mark.slow
def test_macos_libtorch_passes_the_python_check_through_otool(osx_linkage: OsxLinkage) -> None:
    assert osx_linkage.clean.returncode == 0, osx_linkage.clean.stderr[-2000:]


@pytest.mark.slow
def test_macos_libtorch_refuses_a_library_otool_shows_linking_libpython(
    osx_linkage: OsxLinkage,
) -> None:
    assert osx_linkage.python_bound.returncode == 2
    line = build_sh_error(osx_linkage.python_bound.stderr)
    assert "needs a Python library" in line
