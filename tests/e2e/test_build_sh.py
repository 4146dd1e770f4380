"""recipe/build.sh, run for real against the miniature torch-like project.

A faked conda-build run builds every output of a Linux CUDA configuration in
conda-build's order (the top-level build libtorch-build, which compiles; then by dependency
libtorch-cuda-linalg magma and nomagma, libtorch, pytorch for two Pythons) in one shared work
directory and one $PREFIX path, recreated for each output, and each output's package is what
the script added to $PREFIX (tests/helpers/minitorch/megabuild.py). That flow runs once per
build layout of the miniature: setup.py (PyTorch <= 2.13) and scikit-build-core (>= 2.14),
whose host environments each hold their own scikit-build-core. Bad variant values are
tests/e2e/test_build_sh_inputs.py's (without building); the CPU, unpatched and macOS builds
tests/e2e/test_build_sh_cpu.py's.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.minitorch.build_records import binds_now, count_compiles, needed
from helpers.minitorch.fake_conda_build import site_packages_of
from helpers.minitorch.megabuild import Flow, megabuild_flow
from helpers.minitorch.support import (
    LAYOUTS,
    LIBTORCH_LIBS,
    PYTHON_INDEPENDENT,
    RECIPE_DIR,
    SETUPTOOLS,
    build_sh_error,
    clean_env,
    run,
    venv_python,
)

from tools.check.readers.elf import read_elf
from tools.render.cuda_archs import parse_arch_list, read_rows

BUILD_SH = RECIPE_DIR / "build.sh"
CUDA_LIBTORCH_LIBS = (*LIBTORCH_LIBS, "libtorch_cuda.so", "libc10_cuda.so", "libcaffe2_nvrtc.so")
#: The header folder among the libraries in torch/lib (upstream's torch/lib/libshm/): it
#: stays with each pytorch package (recipe/package_files.py).
LIBSHM_HEADERS = ("lib/libshm/err.h", "lib/libshm/libshm.h")


@pytest.fixture(scope="module", params=LAYOUTS)
def flow(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Flow:
    return megabuild_flow(request.param, tmp_path_factory)


# ---------------------------------------------------------------- libtorch


@pytest.mark.slow
def test_libtorch_ships_libraries_headers_cmake_config_and_activation(flow: Flow) -> None:
    assert flow.libtorch.files == {
        *(f"lib/{name}" for name in CUDA_LIBTORCH_LIBS),
        "bin/torch_shm_manager",
        "include/ATen/ATen.h",
        "include/ATen/core/Tensor.h",
        "include/ATen/cuda/CUDAConfig.h",
        "include/c10/c10.h",
        "include/torch/torch.h",
        "include/torch/extension.h",
        "include/torch/version.h",
        "include/torch/csrc/autograd/variable.h",
        "include/torch/csrc/autograd/python_variable.h",
        "include/torch/csrc/utils/pybind.h",
        "share/cmake/ATen/ATenConfig.cmake",
        "share/cmake/Torch/TorchConfig.cmake",
        "etc/conda/activate.d/libtorch_activate.sh",
        "etc/conda/deactivate.d/libtorch_deactivate.sh",
    }


@pytest.mark.slow
def test_libtorch_libraries_bind_lazily_despite_z_now_in_ldflags(flow: Flow) -> None:
    eager = [name for name in CUDA_LIBTORCH_LIBS if binds_now(flow.libtorch.root / "lib" / name)]
    assert eager == []


@pytest.mark.slow
def test_top_level_build_never_installs_into_prefix(flow: Flow) -> None:
    # conda's CMAKE_ARGS carry -DCMAKE_INSTALL_PREFIX=$PREFIX; build.sh drops it. setup.py
    # installs into the source's torch/, scikit-build-core into its wheel directory.
    cache = flow.conda.src_dir / "build" / "CMakeCache.txt"
    value = run(
        [sys.executable, RECIPE_DIR / "cmake_cache", "get", cache, "CMAKE_INSTALL_PREFIX"]
    ).stdout.strip()
    assert value != str(flow.conda.prefix)
    if flow.conda.layout == SETUPTOOLS:
        assert value == str(flow.conda.src_dir / "torch")


@pytest.mark.slow
def test_cmake_args_other_than_the_install_prefix_reach_the_first_configure(flow: Flow) -> None:
    cache = flow.conda.src_dir / "build" / "CMakeCache.txt"
    value = run(
        [sys.executable, RECIPE_DIR / "cmake_cache", "get", cache, "CMAKE_INSTALL_LIBDIR"]
    ).stdout.strip()
    assert value == "lib"


@pytest.mark.slow
def test_generic_blas_links_the_switchable_interfaces_not_openblas(flow: Flow) -> None:
    # blas_impl=generic: libtorch must follow the BLAS users switch to at install time.
    linked = needed(flow.libtorch.root / "lib" / "libtorch_cpu.so")
    blas = {name for name in linked if "blas" in name or "lapack" in name}
    assert blas == {"libcblas.so", "libblas.so", "liblapack.so"}


def _source_activation(script: str, preset: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CF_TORCH_CUDA_ARCH_LIST")}
    if preset is not None:
        env["CF_TORCH_CUDA_ARCH_LIST"] = preset
    return subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.slow
def test_activation_exports_the_arch_list_the_build_used(flow: Flow) -> None:
    activate = flow.libtorch.root / "etc/conda/activate.d/libtorch_activate.sh"
    out = _source_activation(f'. "{activate}"; printf %s "$CF_TORCH_CUDA_ARCH_LIST"', None)
    # The row build.sh read (FakeCondaBuild's recipe copy cuts the list to its last entry).
    rows = read_rows(flow.conda.recipe_dir / "cuda_arch_lists.txt")
    full = read_rows(RECIPE_DIR / "cuda_arch_lists.txt")[("13.0", "linux-64")]
    assert out == rows[("13.0", "linux-64")] == full.split(";")[-1]


@pytest.mark.slow
def test_the_recipes_arch_list_decides_the_fatbin_not_nvccs_cudaarchs(flow: Flow) -> None:
    # The build ran with CUDAARCHS set as conda-forge's cuda-nvcc activation sets it (every
    # GPU generation); the device code is the row build.sh exported, and nothing else.
    assert flow.conda.environment("libtorch", {})["CUDAARCHS"].startswith("75-real;")
    row = read_rows(flow.conda.recipe_dir / "cuda_arch_lists.txt")[("13.0", "linux-64")]
    promise = parse_arch_list(row)
    with (flow.libtorch.root / "lib" / "libtorch_cuda.so").open("rb") as stream:
        code = read_elf(stream).device_code
    assert {c.arch for c in code if c.kind == "sass"} == promise.sass
    assert {c.arch for c in code if c.kind == "ptx"} == promise.ptx


@pytest.mark.slow
def test_activation_and_deactivation_keep_a_users_arch_list(flow: Flow) -> None:
    root = flow.libtorch.root / "etc/conda"
    script = (
        f'. "{root}/activate.d/libtorch_activate.sh"; '
        f'. "{root}/deactivate.d/libtorch_deactivate.sh"; '
        'printf %s "$CF_TORCH_CUDA_ARCH_LIST"'
    )
    assert _source_activation(script, "8.0") == "8.0"


@pytest.mark.slow
def test_deactivation_removes_what_activation_set(flow: Flow) -> None:
    root = flow.libtorch.root / "etc/conda"
    script = (
        f'. "{root}/activate.d/libtorch_activate.sh"; '
        f'. "{root}/deactivate.d/libtorch_deactivate.sh"; '
        'printf %s "${CF_TORCH_CUDA_ARCH_LIST-unset}"'
    )
    assert _source_activation(script, None) == "unset"


# ---------------------------------------------------------------- libtorch-cuda-linalg


@pytest.mark.slow
def test_both_linalg_flavours_compile_no_object_outside_linalg_twice(flow: Flow) -> None:
    # The miniature's libtorch_cuda sources reach the generated MAGMA switch
    # (ATen/cuda/CUDAConfig.h) as PyTorch's do: switching USE_MAGMA between two builds
    # recompiles them, which on the real tree means hundreds of nvcc translation units.
    counted = count_compiles(flow.libtorch_compiles, linalg_prefix="torch_cuda_linalg")
    assert counted.repeated_outside_linalg == ()
    # The log did record the CUDA sources: the check above is not vacuous.
    assert "aten/src/ATen/native/cuda/UnarySpecialOpsKernel.cu" in counted.once


@pytest.mark.slow
def test_each_linalg_flavour_ships_only_its_library(flow: Flow) -> None:
    assert {name: package.files for name, package in flow.linalg.items()} == {
        "magma": {"lib/libtorch_cuda_linalg.so"},
        "nomagma": {"lib/libtorch_cuda_linalg.so"},
    }


@pytest.mark.slow
def test_linalg_flavours_differ_in_needed_exactly_by_magma(flow: Flow) -> None:
    with_magma = needed(flow.linalg["magma"].root / "lib/libtorch_cuda_linalg.so")
    without = needed(flow.linalg["nomagma"].root / "lib/libtorch_cuda_linalg.so")
    assert (with_magma - without, without - with_magma) == ({"libmagma.so"}, set())


# ---------------------------------------------------------------- pytorch


@pytest.mark.slow
def test_pytorch_packages_one_site_packages_per_python(flow: Flow) -> None:
    tags = [site_packages_of(p) for p in flow.pytorch]
    assert tags == [f"lib/python{python.tag}/site-packages" for python in flow.pythons]


@pytest.mark.slow
def test_pytorch_puts_libtorch_python_in_prefix_lib(flow: Flow) -> None:
    for package in flow.pytorch:
        library = package.root / "lib/libtorch_python.so"
        assert library.is_file() and not library.is_symlink(), package.name


@pytest.mark.slow
def test_torch_lib_in_site_packages_holds_only_symlinks_and_the_header_folder(
    flow: Flow,
) -> None:
    for package in flow.pytorch:
        torch_lib = package.root / site_packages_of(package) / "torch" / "lib"
        assert sorted(p.name for p in torch_lib.iterdir() if not p.is_symlink()) == ["libshm"]
        headers = sorted(f"lib/libshm/{p.name}" for p in (torch_lib / "libshm").iterdir())
        assert headers == sorted(LIBSHM_HEADERS)


@pytest.mark.slow
def test_torch_version_has_no_post_suffix(flow: Flow) -> None:
    for package in flow.pytorch:
        assert any(f.endswith("/torch-2.13.0.dist-info/METADATA") for f in package.files)


@pytest.mark.slow
def test_pytorch_ships_bytecode_only_for_its_own_python(flow: Flow) -> None:
    # The megabuild's code generator imports a module the package ships as data
    # (torch/packaged/, like torchgen/packaged/), leaving bytecode in the shared tree.
    if flow.pythons[0].version == flow.pythons[1].version:
        pytest.skip("one Python version only: foreign bytecode cannot be told apart")
    major, minor = flow.pythons[1].version
    own = f".cpython-{major}{minor}."
    pyc = sorted(f for f in flow.pytorch[1].files if f.endswith(".pyc"))
    assert any(own in f for f in pyc), pyc
    assert [f for f in pyc if own not in f] == []


@pytest.mark.slow
def test_second_python_rebuilds_only_python_bound_targets(flow: Flow) -> None:
    python_independent = {
        "libc10.so",
        "libtorch_cpu.so",
        "libtorch.so",
        "libtorch_global_deps.so",
        "libtorch_cuda.so",
        "libtorch_cuda_linalg.so",
    }
    assert flow.ran_for_second_python.isdisjoint(python_independent)
    if flow.pythons[0].version != flow.pythons[1].version:
        assert "libtorch_python.so" in flow.ran_for_second_python


@pytest.mark.slow
def test_every_python_independent_object_is_compiled_once_for_all_outputs(flow: Flow) -> None:
    # The megabuild's promise, from .ninja_log after every output ran: the backend did not
    # throw the tree away for the second Python (scikit-build-core would, unaided).
    python_independent = {
        name.removeprefix("lib").removesuffix(".so") for name in PYTHON_INDEPENDENT
    }
    core = [c for c in flow.every_compile if c.target in python_independent]
    assert {c.target for c in core} >= {"c10", "torch_cpu", "torch", "torch_cuda"}
    assert len(core) == len(set(core)), sorted(c.source for c in core)


@pytest.mark.slow
def test_pytorch_stage_refuses_a_build_option_the_compile_stage_did_not_configure(
    flow: Flow,
) -> None:
    # Silently, the forwarding would rewrite the cache and the tree would rebuild for this
    # Python only; build.sh stops before configuring anything.
    assert flow.changed_option.returncode == 2, flow.changed_option.stdout[-2000:]
    line = build_sh_error(flow.changed_option.stderr)
    assert "USE_DISTRIBUTED='1' is set here but was not in the compile stage" in line
    assert flow.ran_for_changed_option == set()


@pytest.mark.slow
def test_the_core_compiles_once_and_the_bindings_once_per_python(flow: Flow) -> None:
    # Counted from the compiler launcher: .ninja_log is recompacted on every reconfigure.
    # The other output order is tests/e2e/test_build_sh_output_order.py's.
    launched = flow.conda.launched_objects()
    core = ("c10/c10.cpp.o", "aten/src/ATen/Context.cpp.o", "torch/csrc/global_deps.c.o")
    assert {o: launched[o] for o in core} == dict.fromkeys(core, 1), launched
    pythons = len({python.version for python in flow.pythons})
    assert launched["torch/csrc/Module.cpp.o"] == pythons, launched


@pytest.mark.slow
def test_top_level_build_compiles_through_the_compiler_cache(flow: Flow) -> None:
    assert any("c10.cpp" in call for call in flow.conda.compiler_cache_calls())


@pytest.mark.slow
def test_pytorch_outputs_keep_the_compiler_cache_the_tree_was_configured_with(flow: Flow) -> None:
    if flow.pythons[0].version == flow.pythons[1].version:
        pytest.skip("one Python version only: nothing recompiles")
    assert any("Module.cpp" in call for call in flow.compiler_cache_calls_for_second_python)


# ---------------------------------------------------------------- the packages together


@pytest.mark.slow
def test_no_file_belongs_to_two_packages_that_install_together(flow: Flow) -> None:
    # The two linalg flavours are alternatives, and so are the pytorch builds for
    # different Pythons; every installable combination must be disjoint.
    for linalg, pytorch in itertools.product(flow.linalg.values(), flow.pytorch):
        packages = [flow.magma, flow.blas, flow.libtorch, linalg, pytorch]
        for one, other in itertools.combinations(packages, 2):
            assert not one.files & other.files, (one.name, other.name, one.files & other.files)


@pytest.mark.slow
@pytest.mark.parametrize("which", [0, 1], ids=["first-python", "second-python"])
def test_installed_environment_symlinks_resolve_and_torch_imports(
    flow: Flow, which: int, tmp_path: Path
) -> None:
    # Installed somewhere else than the build prefix: nothing may point back at it.
    env = flow.conda.assemble(
        tmp_path / "env",
        flow.venvs[which],
        [flow.magma, flow.blas, flow.libtorch, flow.linalg["nomagma"], flow.pytorch[which]],
    )
    torch_dir = env / site_packages_of(flow.pytorch[which]) / "torch"
    links = [p for p in torch_dir.rglob("*") if p.is_symlink()]
    assert links and all(p.resolve().is_relative_to(env.resolve()) and p.exists() for p in links)
    probe = run(
        [
            venv_python(env),
            "-c",
            (
                "import sys, torch; print(torch.__version__, torch.add(2, 3), "
                "torch.built_for(), sys.version.split()[0])"
            ),
        ],
        cwd=tmp_path,
        env=clean_env(),
    )
    version, result, built_for, running = probe.stdout.split()
    assert (version, result) == ("2.13.0", "5")
    assert built_for == running, f"torch._C built for Python {built_for}, imported by {running}"


@pytest.mark.slow
@pytest.mark.parametrize("flavour", ["magma", "nomagma"])
def test_has_magma_tells_the_truth_for_the_installed_linalg_flavour(
    flow: Flow, flavour: str, tmp_path: Path
) -> None:
    # libtorch_cuda is compiled once, with MAGMA; hasMAGMA() (patch 0001) must still say
    # "no" where the nomagma flavour keeps libmagma out of the environment, and "yes"
    # where the magma flavour brings it, however the loader reached libtorch_cuda.
    magma = [flow.magma] if flavour == "magma" else []
    env = flow.conda.assemble(
        tmp_path / "env",
        flow.venvs[0],
        [*magma, flow.blas, flow.libtorch, flow.linalg[flavour], flow.pytorch[0]],
    )
    probe = run(
        [venv_python(env), "-c", "import torch; print(torch.has_magma())"],
        cwd=tmp_path,
        env=clean_env(),
    )
    assert probe.stdout.strip() == str(flavour == "magma")


@pytest.mark.slow
@pytest.mark.parametrize("where", ["lib", "site-packages/torch/lib"])
def test_extensions_link_libtorch_python_from_prefix_lib_and_torch_lib(
    flow: Flow, where: str, tmp_path: Path
) -> None:
    # find_package(Torch) users look in $PREFIX/lib, torch.utils.cpp_extension in torch/lib.
    env = flow.conda.assemble(
        tmp_path / "env",
        flow.venvs[0],
        [flow.magma, flow.blas, flow.libtorch, flow.linalg["magma"], flow.pytorch[0]],
    )
    lib_dir = (
        env / "lib" if where == "lib" else env / site_packages_of(flow.pytorch[0]) / "torch" / "lib"
    )
    source = tmp_path / "extension.c"
    source.write_text(
        "extern void *initModule(void);\nvoid *entry(void) { return initModule(); }\n"
    )
    extension = tmp_path / "extension.so"
    run(["cc", "-shared", "-fPIC", source, "-o", extension, f"-L{lib_dir}", "-ltorch_python"])
    assert "libtorch_python.so" in needed(extension)
