"""Device-code records and the real nvcc 13.0 for the tests of `tools check`'s CUDA rules
(tests/e2e/test_check_fatbin.py, tests/e2e/test_check_native_aot.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from helpers.check_records import elf, package

from tools.check import Expectations
from tools.check.readers.fatbin import DeviceCode

CUDA13 = Expectations(
    config="linux_64_cuda13",
    subdir="linux-64",
    cuda_compiler_version="13.0",
    cuda_arch_list="8.0;9.0;12.0+PTX",
)


def sass(*archs: int) -> tuple[DeviceCode, ...]:
    return tuple(DeviceCode("sass", a) for a in archs)


def ptx(*archs: int) -> tuple[DeviceCode, ...]:
    return tuple(DeviceCode("ptx", a) for a in archs)


def torch_cuda(code: tuple[DeviceCode, ...]):
    """A CUDA 13 libtorch package record whose libtorch_cuda.so holds ``code``."""
    return package(
        build="cuda130_generic_h1_200",
        elves={"lib/libtorch_cuda.so": replace(elf(["libcudart.so.13"]), device_code=code)},
    )


def nvcc13() -> Path:
    """NVIDIA's nvcc 13.0 from its wheels (the tests cache's); a skip naming why without it."""
    from helpers.standin_channel.cuda import CudaWheelError, toolkit

    try:
        return toolkit("13.0") / "bin" / "nvcc"
    except CudaWheelError as error:
        pytest.skip(f"no CUDA 13.0 nvcc: {error}")
