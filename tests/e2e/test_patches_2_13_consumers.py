"""Patches 0008 and 0009 against PyTorch 2.13.0's text: what consumers of the installed
files compile, run for real against the unpatched and the patched text
(tests/fixtures/upstream_2_13/; the patches apply without fuzz: tests/e2e/test_patches_2_13.py):

- 0008: the ATenConfig.cmake CMake writes, read by recipe/cmake_test next to the real 2.13.0
  wheel's headers;
- 0009: the patched cuDSS calls compiled against the real cudss.h of cuDSS 0.7.1 and 0.8.0.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
from helpers.cache import cached_dir, unpacked_wheel
from helpers.patched_upstream import (
    ROOT,
    cmake,
    installed_aten_config,
    patched,
    torch_tree_with,
)

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
