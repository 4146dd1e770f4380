"""recipe/package_files.py: the rules build.sh and bld.bat run to place each file (issue 37).

Each rule on the paths upstream's wheels hold (2.13.0, 2.15.0), and the two stages on small
hand-made trees; the replays over the real wheels are tests/e2e/test_layout_replay.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers.recipe_helpers import RECIPE, recipe_module

rules = recipe_module("package_files")


@pytest.mark.parametrize("platform", ["linux-64", "osx-arm64"])
@pytest.mark.parametrize(
    ("rel", "where"),
    [
        ("lib/libtorch_cpu.so", "lib/libtorch_cpu.so"),
        ("lib/libtorch_python.so", None),
        ("lib/libtorch_cuda_linalg.so", None),
        ("lib/libcpuinfo.a", None),
        ("lib/libshm/libshm.h", None),
        ("lib/libshm_windows/libshm.h", None),
        ("lib/libgomp.so.1", None),
        ("bin/torch_shm_manager", "bin/torch_shm_manager"),
        ("bin/protoc", None),
        ("include/ATen/ATen.h", "include/ATen/ATen.h"),
        ("include/THC/THCAtomics.cuh", "include/THC/THCAtomics.cuh"),
        ("include/libshm.h", "include/libshm.h"),
        ("include/fbgemm/Fbgemm.h", "include/fbgemm/Fbgemm.h"),
        ("include/dnnl.h", None),
        ("include/pybind11/pybind11.h", None),
        ("share/cmake/Torch/TorchConfig.cmake", "share/cmake/Torch/TorchConfig.cmake"),
        ("share/cmake/Caffe2/public/cuda.cmake", "share/cmake/Caffe2/public/cuda.cmake"),
        (
            "share/cmake/Tensorpipe/TensorpipeTargets.cmake",
            "share/cmake/Tensorpipe/TensorpipeTargets.cmake",
        ),
        ("share/doc/fmt/README.md", None),
        ("share/pkgconfig/sleef.pc", None),
        ("bin/flatc", None),
    ],
)
def test_unix_libtorch_paths(platform: str, rel: str, where: str | None) -> None:
    assert rules.libtorch_path(rel, platform) == where


def test_macos_libomp_and_omp_h_are_left_to_llvm_openmp() -> None:
    # pytorch#180239 (2.14+) installs both; libtorch links the host's.
    assert rules.libtorch_path("lib/libomp.dylib", "osx-arm64") is None
    assert rules.libtorch_path("include/omp.h", "osx-arm64") is None
    assert rules.host_owner("lib/libomp.dylib") == "llvm-openmp"


@pytest.mark.parametrize(
    ("rel", "where"),
    [
        ("lib/c10.dll", "Library/bin/c10.dll"),
        ("lib/torch_cpu.dll", "Library/bin/torch_cpu.dll"),
        ("lib/torch_cpu.lib", "Library/lib/torch_cpu.lib"),
        ("lib/shm.dll", "Library/bin/shm.dll"),
        ("lib/torch_python.dll", None),
        ("lib/torch_python.lib", None),
        ("lib/libiomp5md.dll", None),
        ("lib/libiompstubs5md.dll", None),
        ("lib/uv.dll", None),
        ("lib/zlibwapi.dll", None),
        ("lib/cudart64_13.dll", None),
        ("lib/cudnn64_9.dll", None),
        ("lib/cublas64_13.dll", None),
        ("lib/sleef.lib", None),
        ("lib/mimalloc-2.5/mimalloc.lib", None),
        ("bin/protoc.exe", None),
        ("include/c10/core/Device.h", "Library/include/c10/core/Device.h"),
        ("include/dnnl.h", None),
        ("share/cmake/Torch/TorchConfig.cmake", "Library/share/cmake/Torch/TorchConfig.cmake"),
        ("share/cmake/fmt/fmt-config.cmake", None),
    ],
)
def test_windows_libtorch_paths(rel: str, where: str | None) -> None:
    assert rules.libtorch_path(rel, "win-64") == where


def _stage(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(RECIPE / "package_files.py"), *args],
        capture_output=True,
        text=True,
        check=False,
    )


def _tree(root: Path, *files: str) -> Path:
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    return root


def test_libtorch_stage_copies_its_files_and_lists_them(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree", "lib/libc10.so", "lib/libomp.dylib", "include/omp.h")
    done = _stage(
        "libtorch",
        "--platform",
        "osx-arm64",
        "--tree",
        str(tree),
        "--prefix",
        str(tmp_path / "prefix"),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["lib/libc10.so"]
    assert sorted(p.name for p in (tmp_path / "prefix").rglob("*") if p.is_file()) == ["libc10.so"]


def test_libtorch_stage_never_overwrites_a_host_file(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree", "include/c10/c10.h", "lib/libc10.so")
    prefix = _tree(tmp_path / "prefix", "include/c10/c10.h")
    done = _stage(
        "libtorch", "--platform", "linux-64", "--tree", str(tree), "--prefix", str(prefix)
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"package_files.py: error: {prefix}/include/c10/c10.h already exists (installed by a "
        "host dependency); libtorch must not overwrite it: build against the system copy "
        "(USE_SYSTEM_*) or leave it to that package in recipe/package_files.py"
    ]
    assert not (prefix / "lib").exists()


@pytest.mark.parametrize(
    "stray",
    ["share/doc/fmt/README.md", "share/cmake/fmt/fmt-config.cmake", "bin/flatc", "bin/test_api"],
)
def test_libtorch_stage_stops_at_a_share_or_bin_file_no_release_installs(
    tmp_path: Path, stray: str
) -> None:
    # A vendored dependency's install rules put it there; shipped, it could clobber the
    # conda-forge package that owns the path, which is not in this build's host.
    tree = _tree(tmp_path / "tree", "lib/libc10.so", "share/cmake/Torch/TorchConfig.cmake", stray)
    prefix = tmp_path / "prefix"
    done = _stage(
        "libtorch", "--platform", "linux-64", "--tree", str(tree), "--prefix", str(prefix)
    )
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert line.startswith(f"package_files.py: error: {tree / stray} is not a file a PyTorch")
    assert "RELEASE_SHARE/RELEASE_BIN in recipe/package_files.py" in line
    assert not prefix.exists()


def test_windows_pytorch_stage_keeps_no_copy_of_librarys_share_and_no_static_library(
    tmp_path: Path,
) -> None:
    # As conda-forge's bld.bat: torch/share is libtorch's Library/share again, and the
    # vendored static libraries are linked into torch's DLLs; torch_python.lib and _C.lib
    # stay for torch.utils.cpp_extension.
    sp = _tree(
        tmp_path / "sp",
        "torch/lib/torch_python.dll",
        "torch/lib/torch_python.lib",
        "torch/lib/_C.lib",
        "torch/lib/torch_cpu.lib",
        "torch/lib/sleef.lib",
        "torch/lib/cpuinfo.lib",
        "torch/share/cmake/Torch/TorchConfig.cmake",
    )
    prefix = _tree(
        tmp_path / "prefix",
        "Library/lib/torch_cpu.lib",
        "Library/share/cmake/Torch/TorchConfig.cmake",
    )
    done = _stage(
        "pytorch", "--platform", "win-64", "--site-packages", str(sp), "--prefix", str(prefix)
    )
    assert done.returncode == 0, done.stderr
    left = sorted(p.relative_to(sp).as_posix() for p in sp.rglob("*") if p.is_file())
    assert left == ["torch/lib/_C.lib", "torch/lib/torch_python.lib"]


def test_windows_pytorch_stage(tmp_path: Path) -> None:
    sp = _tree(
        tmp_path / "sp",
        "torch/lib/torch_python.dll",
        "torch/lib/torch_python.lib",
        "torch/lib/c10.dll",
        "torch/lib/libiomp5md.dll",
        "torch/lib/libshm/libshm.h",
    )
    prefix = _tree(tmp_path / "prefix", "Library/bin/c10.dll")
    done = _stage(
        "pytorch", "--platform", "win-64", "--site-packages", str(sp), "--prefix", str(prefix)
    )
    assert done.returncode == 0, done.stderr
    left = sorted(p.relative_to(sp).as_posix() for p in sp.rglob("*") if p.is_file())
    assert left == ["torch/lib/libshm/libshm.h", "torch/lib/torch_python.lib"]
    assert (prefix / "Library/bin/torch_python.dll").is_file()
    assert (prefix / "Library/lib/torch_python.lib").is_file()


def test_windows_pytorch_stage_stops_at_a_dll_no_rule_places(tmp_path: Path) -> None:
    sp = _tree(tmp_path / "sp", "torch/lib/torch_python.dll", "torch/lib/newlib.dll")
    done = _stage(
        "pytorch",
        "--platform",
        "win-64",
        "--site-packages",
        str(sp),
        "--prefix",
        str(tmp_path / "prefix"),
    )
    assert done.returncode == 2
    assert "torch/lib/newlib.dll is neither torch_python nor a file libtorch" in done.stderr


def test_an_unknown_platform_is_one_error_line(tmp_path: Path) -> None:
    done = _stage("libtorch", "--platform", "win-32", "--tree", str(tmp_path), "--prefix", "x")
    assert done.returncode == 2
    assert done.stderr.startswith("package_files.py: error: --platform 'win-32'")
    assert len(done.stderr.splitlines()) == 1
