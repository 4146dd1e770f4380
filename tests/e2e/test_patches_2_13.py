"""Patches 0006-0012 against PyTorch 2.13.0's text, and what each one changes, run for real.

tests/fixtures/upstream_2_13/ holds the 2.13.0 lines each patch touches (README there). Every
patch must apply to them without fuzz; then each behaviour the patch exists for is run with the
real tool that decides it, against the unpatched and the patched text:

- 0006: CMake + an Objective-C++ compiler link a DispatchStub-shaped call from a .mm file;
- 0007: CMake's FindPython, cross-compiling, names a WITH_SOABI module;
- 0008: the ATenConfig.cmake CMake writes, read by recipe/cmake_test next to the real 2.13.0
  wheel's headers;
- 0009: the patched cuDSS calls compiled against the real cudss.h of cuDSS 0.7.1 and 0.8.0;
- 0011: the toolkit root FindCUDAToolkit computes, with and without the cache entry;
- 0012: the OpenMP flags FindOpenMP offers MSVC, computed by CMake (cmake -P).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

import pytest
from helpers.cache import cached_dir, unpacked_wheel
from helpers.debian import apt_install, can_install
from helpers.minitorch.support import find_interpreters
from helpers.patched_upstream import (
    PATCHES,
    ROOT,
    cmake,
    installed_aten_config,
    patched,
    torch_tree_with,
)

NEW_PATCHES = sorted(p for p in PATCHES.glob("*.patch") if p.name[:4] >= "0006")


@pytest.mark.parametrize("patch", NEW_PATCHES, ids=lambda p: p.name[:4])
def test_patch_applies_without_fuzz_to_the_2_13_text(patch: Path, tmp_path: Path):
    tree = patched(tmp_path)
    result = subprocess.run(
        ["patch", "-p1", "--fuzz=0", "--dry-run", "-i", str(patch)],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


# -- 0006: CPU capability defines and Objective-C++ ------------------------------------------

DISPATCH_H = """
// DispatchStub.h's shape: one parameter per capability the build announces.
struct DispatchStubImpl {
  void* get_call_ptr(int device_type
#ifdef HAVE_AVX512_CPU_DEFINITION
      , void* AVX512
#endif
#ifdef HAVE_AVX2_CPU_DEFINITION
      , void* AVX2
#endif
  );
};
"""
KERNELS_CPP = """
#include "dispatch.h"
void* DispatchStubImpl::get_call_ptr(int device_type
#ifdef HAVE_AVX512_CPU_DEFINITION
    , void* AVX512
#endif
#ifdef HAVE_AVX2_CPU_DEFINITION
    , void* AVX2
#endif
) { return reinterpret_cast<void*>(device_type + 1); }
"""
MPS_MM = """
// An MPS source: Objective-C++, compiled with CMAKE_OBJCXX_FLAGS.
#include "dispatch.h"
int main() {
  DispatchStubImpl stub;
  return stub.get_call_ptr(0
#ifdef HAVE_AVX512_CPU_DEFINITION
      , nullptr
#endif
#ifdef HAVE_AVX2_CPU_DEFINITION
      , nullptr
#endif
  ) ? 0 : 1;
}
"""


def build_dispatch_probe(tmp_path: Path, upstream: Path) -> subprocess.CompletedProcess:
    project = tmp_path / "dispatch"
    project.mkdir()
    (project / "dispatch.h").write_text(DISPATCH_H)
    (project / "kernels.cpp").write_text(KERNELS_CPP)
    (project / "mps.mm").write_text(MPS_MM)
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\n"
        "project(dispatch LANGUAGES CXX OBJCXX)\n"
        "# what osx-64's configure found: both x86 capabilities\n"
        "set(INTERN_BUILD_ATEN_OPS ON)\nset(CXX_AVX512_FOUND ON)\nset(CXX_AVX2_FOUND ON)\n"
        'set(OPT_FLAG "-O1")\n'
        f'include("{upstream}/cmake/Codegen.cmake")\n'
        "add_executable(probe kernels.cpp mps.mm)\n"
    )
    build = tmp_path / "dispatch-build"
    configured = cmake("-S", str(project), "-B", str(build), "-G", "Ninja")
    if configured.returncode != 0 and _no_objcxx(configured) and can_install():
        # CI runs as root on a fresh Debian machine: it installs what the test needs, as the
        # other Debian-package tests do (helpers/debian.py), and configures anew.
        apt_install("gobjc++")
        shutil.rmtree(build)
        configured = cmake("-S", str(project), "-B", str(build), "-G", "Ninja")
    if configured.returncode != 0:
        if _no_objcxx(configured):
            pytest.skip("no Objective-C++ compiler (Debian: apt-get install gobjc++)")
        raise AssertionError(configured.stdout + configured.stderr)
    return cmake("--build", str(build))


def _no_objcxx(configured: subprocess.CompletedProcess) -> bool:
    return "OBJCXX" in configured.stdout + configured.stderr


@pytest.mark.slow
def test_without_0006_objective_cxx_calls_a_get_call_ptr_nothing_defines(tmp_path: Path):
    built = build_dispatch_probe(tmp_path, patched(tmp_path))
    assert built.returncode != 0
    assert "undefined reference to `DispatchStubImpl::get_call_ptr" in built.stdout


@pytest.mark.slow
def test_with_0006_objective_cxx_links_against_the_kernels(tmp_path: Path):
    built = build_dispatch_probe(tmp_path, patched(tmp_path, "0006"))
    assert built.returncode == 0, built.stdout
    assert subprocess.run([str(tmp_path / "dispatch-build" / "probe")], check=False).returncode == 0


# -- 0007: torch._C's name when cross-compiling ----------------------------------------------


def configure_extension(tmp_path: Path, upstream: Path, *extra: str) -> subprocess.CompletedProcess:
    """torch._C's build as 2.13.0 does it, cross-compiling: CMAKE_SYSTEM_NAME set makes CMake
    treat the build as a cross build (CMAKE_CROSSCOMPILING), and FindPython then asks the
    interpreter nothing, as on conda-forge's linux-aarch64 and osx-64 builds."""
    project = tmp_path / "extension"
    project.mkdir()
    (project / "stub.c").write_text("int torch_c_stub;\n")
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\n"
        "project(torch_c LANGUAGES C)\n"
        "find_package(Python COMPONENTS Interpreter OPTIONAL_COMPONENTS Development.Module)\n"
        "macro(caffe2_update_option name value)\n  set(${name} ${value})\nendmacro()\n"
        "set(BUILD_PYTHON ON)\n"
        f'include("{upstream}/cmake/Dependencies.cmake")\n'
        "Python_add_library(_C MODULE WITH_SOABI stub.c)\n"
    )
    return cmake(
        "-S",
        str(project),
        "-B",
        str(tmp_path / "extension-build"),
        "-G",
        "Ninja",
        f"-DCMAKE_SYSTEM_NAME={os.uname().sysname}",
        f"-DPython_EXECUTABLE={sys.executable}",
        *extra,
    )


def built_modules(tmp_path: Path) -> list[str]:
    build = tmp_path / "extension-build"
    assert cmake("--build", str(build)).returncode == 0
    return sorted(p.name for p in build.glob("_C*.so"))


TARGET_MODULE = "_C" + sysconfig.get_config_var("EXT_SUFFIX")


@pytest.mark.slow
def test_without_0007_a_cross_build_names_torch_c_without_the_target_soabi(tmp_path: Path):
    configured = configure_extension(tmp_path, patched(tmp_path))
    assert configured.returncode == 0, configured.stderr
    # setup.py packages _C<EXT_SUFFIX> only: this module would not reach the wheel
    assert built_modules(tmp_path) == ["_C.so"] != [TARGET_MODULE]


@pytest.mark.slow
def test_with_0007_the_soabi_build_sh_passes_names_torch_c_for_the_target(tmp_path: Path):
    soabi = sysconfig.get_config_var("SOABI")
    configured = configure_extension(
        tmp_path, patched(tmp_path, "0007"), f"-DTORCH_PYTHON_SOABI={soabi}"
    )
    assert configured.returncode == 0, configured.stderr
    assert built_modules(tmp_path) == [TARGET_MODULE]


@pytest.mark.slow
def test_with_0007_a_cross_build_without_the_soabi_stops_at_configure(tmp_path: Path):
    configured = configure_extension(tmp_path, patched(tmp_path, "0007"))
    assert configured.returncode != 0
    assert "pass -DTORCH_PYTHON_SOABI=" in " ".join(configured.stderr.split())


def other_python() -> Path:
    """Another CPython minor than this one, with headers (the next pytorch output's Python)."""
    for interpreter in find_interpreters():
        if interpreter.version != sys.version_info[:2]:
            return interpreter.executable
    pytest.skip("needs a second CPython >= 3.10 with headers")


@pytest.mark.slow
def test_with_0007_each_pytorch_outputs_python_gets_its_own_soabi_after_retargeting(
    tmp_path: Path,
):
    # build.sh passes the megabuild Python's SOABI once; each pytorch output retargets the
    # tree's cache (recipe/cmake_cache), which must carry TORCH_PYTHON_SOABI along.
    soabi = sysconfig.get_config_var("SOABI")
    configure_extension(tmp_path, patched(tmp_path, "0007"), f"-DTORCH_PYTHON_SOABI={soabi}")
    assert built_modules(tmp_path) == [TARGET_MODULE]
    other = other_python()
    cache = tmp_path / "extension-build" / "CMakeCache.txt"
    retarget = subprocess.run(
        [
            sys.executable,
            str(ROOT / "recipe" / "cmake_cache"),
            "retarget-python",
            str(cache),
            "--python",
            str(other),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert retarget.returncode == 0, retarget.stderr
    other_suffix = subprocess.run(
        [str(other), "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert "_C" + other_suffix in built_modules(tmp_path)


# -- 0008: find_package(ATen) ----------------------------------------------------------------


def configure_cmake_test(tmp_path: Path, torch: Path) -> subprocess.CompletedProcess:
    if shutil.which("c++") is None or shutil.which("ninja") is None:
        pytest.skip("needs a C++ compiler and ninja")
    return cmake(
        "-S",
        str(ROOT / "recipe" / "cmake_test"),
        "-B",
        str(tmp_path / "consumer"),
        "-G",
        "Ninja",
        f"-DTorch_DIR={torch / 'share' / 'cmake' / 'Torch'}",
    )


@pytest.mark.slow
def test_the_real_2_13_wheels_aten_config_fails_recipe_cmake_test(torch_site_2_13, tmp_path):
    torch = torch_tree_with(torch_site_2_13, None, tmp_path / "site")
    configured = configure_cmake_test(tmp_path, torch)
    assert configured.returncode != 0
    assert "ATEN_INCLUDE_DIR=/__w/pytorch/pytorch/torch/include" in configured.stderr


@pytest.mark.slow
def test_with_0008_recipe_cmake_test_finds_aten_headers_next_to_its_config(
    torch_site_2_13, tmp_path
):
    config = installed_aten_config(tmp_path, patched(tmp_path, "0008"))
    torch = torch_tree_with(torch_site_2_13, config, tmp_path / "site")
    configured = configure_cmake_test(tmp_path, torch)
    assert configured.returncode == 0, configured.stderr
    assert f"ATen headers: {torch}/share/cmake/ATen/../../../include" in configured.stdout


@pytest.mark.slow
def test_recipe_cmake_test_compiles_with_the_cxx_standard_the_release_asks_for(
    torch_site_2_13, tmp_path
):
    # 2.13's TorchConfig.cmake sets CXX_STANDARD on the imported torch target, which CMake
    # does not pass on: a consumer that asks for less compiles PyTorch's headers as less.
    config = installed_aten_config(tmp_path, patched(tmp_path, "0008"))
    torch = torch_tree_with(torch_site_2_13, config, tmp_path / "site")
    torch_config = (torch / "share" / "cmake" / "Torch" / "TorchConfig.cmake").read_text()
    [standard] = re.findall(r"CXX_STANDARD (\d+)", torch_config)
    configured = configure_cmake_test(tmp_path, torch)
    assert configured.returncode == 0, configured.stderr
    commands = subprocess.run(
        ["ninja", "-C", str(tmp_path / "consumer"), "-t", "commands", "torch_consumer"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    compile_line = next(line for line in commands.splitlines() if "consumer.cpp" in line)
    assert re.search(rf"-std=(c|gnu)\+\+{standard}\b", compile_line), compile_line


@pytest.fixture(scope="session")
def torch_site_2_13(torch_wheel: Path) -> Path:
    """The real 2.13.0 wheel's torch/ share and include trees, unpacked once per cache."""
    return unpacked_wheel(
        torch_wheel,
        torch_wheel.parent / (torch_wheel.stem + ".cmake-trees"),
        prefixes=("torch/include/", "torch/share/", "torch/lib/"),
    )


# -- 0009: cuDSS 0.7 and 0.8 -----------------------------------------------------------------

CUDSS_VERSIONS = ("0.7.1.6", "0.8.0.10")


def _download_cudss_headers(version: str, include: Path) -> None:
    """cudss.h and its siblings from NVIDIA's nvidia-cudss-cu13 ``version`` wheel."""
    with tempfile.TemporaryDirectory(prefix="cudss-") as download:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                f"nvidia-cudss-cu13=={version}",
                "--no-deps",
                "--only-binary=:all:",
                "-d",
                download,
            ],
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
            env=dict(os.environ, PIP_CONSTRAINT=""),
        )
        wheels = sorted(Path(download).glob("*.whl"))
        if result.returncode != 0 or not wheels:
            pytest.skip(f"pip could not get nvidia-cudss-cu13=={version}")
        include.mkdir()
        with zipfile.ZipFile(wheels[0]) as wheel:
            for name in wheel.namelist():
                if name.endswith(".h") and "/include/" in name:
                    (include / Path(name).name).write_bytes(wheel.read(name))


@pytest.fixture(scope="session")
def cudss_headers(tests_cache_dir: Path):
    """cudss.h of each CUDSS_VERSIONS release, kept in the tests cache as bare include
    directories (the wheel itself is not kept)."""

    def get(version: str) -> Path:
        entry = cached_dir(
            tests_cache_dir / "cudss-headers" / version,
            lambda folder: _download_cudss_headers(version, folder / "include"),
            lambda found: (found / "include" / "cudss.h").is_file(),
        )
        return entry / "include"

    return get


CUDSS_PROBE = """
#include <cstdint>
#include <type_traits>
#include <cudss.h>
#define TORCH_CUDSS_CHECK(call) (void)(call)
// Just enough of at::Tensor for the excerpt's calls.
struct Tensor {{
  int64_t size(int) const {{ return 1; }}
  int64_t _nnz() const {{ return 1; }}
  template <class T> T* data_ptr() const {{ return nullptr; }}
}};
template <class scalar_t>
void solve(const Tensor& A, const Tensor& b, const Tensor& x, const Tensor& values,
           const Tensor& crow, int* rowOffsets, int* colIndices) {{
  cudssMatrix_t A_mt, b_mt, x_mt;
{body}
}}
template void solve<float>(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                           const Tensor&, int*, int*);
template void solve<double>(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                            const Tensor&, int*, int*);
"""


def compile_cudss_calls(upstream: Path, include: Path) -> subprocess.CompletedProcess:
    cuda_include = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include"
    if not (cuda_include / "library_types.h").is_file():
        pytest.skip(f"no CUDA headers in {cuda_include} (set CUDA_HOME)")
    lines = (upstream / "aten/src/ATen/native/sparse/cuda/SparseCsrTensorMath.cu").read_text()
    lines = lines.splitlines()
    start = next(i for i, line in enumerate(lines) if "values_ptr =" in line)
    end = next(i for i, line in enumerate(lines) if line.strip() == "}));")
    source = CUDSS_PROBE.format(body="\n".join(lines[start:end]))
    return subprocess.run(
        [
            "c++",
            "-std=c++17",
            "-fsyntax-only",
            "-I",
            str(include),
            "-I",
            str(cuda_include),
            "-x",
            "c++",
            "-",
        ],
        input=source,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_without_0009_the_cudss_calls_do_not_compile_against_cudss_0_8(cudss_headers, tmp_path):
    compiled = compile_cudss_calls(patched(tmp_path), cudss_headers("0.8.0.10"))
    assert compiled.returncode != 0
    assert "cannot convert" in compiled.stderr


@pytest.mark.slow
@pytest.mark.parametrize("version", CUDSS_VERSIONS)
def test_with_0009_the_cudss_calls_compile_against_each_cudss_api(cudss_headers, version, tmp_path):
    compiled = compile_cudss_calls(patched(tmp_path, "0009"), cudss_headers(version))
    assert compiled.returncode == 0, compiled.stderr


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
