"""`tools check` reports whether libtorch_cuda holds native-AOT kernels (cuda.native-aot):
upstream's wheels do from 2.15 on (pytorch#194243), the recipe opts out with
TORCH_NATIVE_AOT=0, and the check names that difference from upstream's wheel.

The rule runs on records; the reader on a shared library the real nvcc 13.0 links (the
tests skip, naming the wheel, where it cannot be had)."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import cuda_device_code
from helpers.cuda_device_code import CUDA13, sass, torch_cuda

from tools.check import run_checks
from tools.check.readers.elf import read_elf
from tools.check.rules.cuda import NATIVE_AOT_SINCE


@pytest.fixture(scope="module")
def nvcc13() -> Path:
    return cuda_device_code.nvcc13()


SOURCE = "native_aot/topk/aot_topk_cuda.cpp"
FIRST = "{}.{}.0".format(*NATIVE_AOT_SINCE)
BEFORE = f"{NATIVE_AOT_SINCE[0]}.{NATIVE_AOT_SINCE[1] - 1}.0"


def libtorch_cuda(version: str, native_aot: tuple[str, ...] = ()):
    built = torch_cuda(sass(80))
    [(path, info)] = built.elves.items()
    return replace(built, version=version, elves={path: replace(info, native_aot=native_aot)})


def findings(package):
    return [f for f in run_checks([package], CUDA13) if f.check == "cuda.native-aot"]


def test_a_build_without_native_aot_kernels_is_reported_as_upstreams_difference() -> None:
    [finding] = findings(libtorch_cuda(FIRST))
    assert finding.status == "warn"
    assert "TORCH_NATIVE_AOT=0" in finding.detail and "upstream" in finding.detail


def test_native_aot_kernels_are_named_where_they_are() -> None:
    [finding] = findings(libtorch_cuda(FIRST, (SOURCE,)))
    assert (finding.status, finding.detail) == ("pass", f"holds native-AOT kernels from {SOURCE}")


def test_releases_before_native_aot_have_nothing_to_compare() -> None:
    assert findings(libtorch_cuda(BEFORE)) == []


KERNEL = (
    "#include <cstdio>\n__global__ void topk(float* x) { x[threadIdx.x] += 1; }\n"
    "void launch(float* x) { topk<<<1, 1>>>(x); if (cudaGetLastError())\n"
    '  std::fprintf(stderr, "%s: launch failed\\n", "/w/pytorch/build/' + SOURCE + '"); }\n'
)


@pytest.mark.slow
def test_the_reader_finds_the_generated_sources_path_in_a_linked_library(
    nvcc13: Path,
    tmp_path: Path,
) -> None:
    (tmp_path / "aot.cu").write_text(KERNEL)
    subprocess.run(
        [
            nvcc13,
            "-ccbin",
            "g++",
            "-gencode=arch=compute_80,code=sm_80",
            "-shared",
            "-Xcompiler",
            "-fPIC",
            "aot.cu",
            "-o",
            "libaot.so",
        ],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    with (tmp_path / "libaot.so").open("rb") as stream:
        info = read_elf(stream)
    assert info.device_code and info.native_aot == (SOURCE,)
