"""What a Windows build of the miniature torch produces, as files (no compiler runs):
tests/helpers/wine/standins.py "compiles" a product by copying it into the build tree."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def write_files(root: Path, files: Mapping[str, bytes]) -> None:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


# The libraries a Windows build of the miniature installs into torch\lib (PyTorch's names).
CORE_DLLS = ("c10", "torch", "torch_cpu", "torch_global_deps")
CUDA_DLLS = ("c10_cuda", "torch_cuda")
_TARGETS = """get_filename_component(_IMPORT_PREFIX "${CMAKE_CURRENT_LIST_FILE}" PATH)
get_filename_component(_IMPORT_PREFIX "${_IMPORT_PREFIX}" PATH)
get_filename_component(_IMPORT_PREFIX "${_IMPORT_PREFIX}" PATH)
get_filename_component(_IMPORT_PREFIX "${_IMPORT_PREFIX}" PATH)
file(GLOB _cmake_config_files "${CMAKE_CURRENT_LIST_DIR}/Caffe2Targets-*.cmake")
"""


def miniature_products(
    folder: Path, *, cuda: bool, extra: Mapping[str, bytes] | None = None
) -> Path:
    """What a Windows build of the miniature installs under torch\\ (standins.py compiles
    from here): torch's DLLs and import libraries in lib\\ with the runtime DLLs upstream
    copies beside them (uv.dll; with CUDA cudart), torch_python and the _C extension, the
    headers, and CMake's exports naming lib\\*.dll as upstream's install rules write them."""
    libraries = CORE_DLLS + (CUDA_DLLS if cuda else ())
    files: dict[str, bytes] = {"lib/uv.dll": b"libuv's DLL\n"}
    if cuda:
        files["lib/cudart64_12.dll"] = b"the CUDA runtime\n"
    release = ""
    for name in (*libraries, "torch_python"):
        files[f"lib/{name}.dll"] = f"{name}.dll\n".encode()
        files[f"lib/{name}.lib"] = f"{name}.lib\n".encode()
    for name in libraries:
        dll, lib = f'"${{_IMPORT_PREFIX}}/lib/{name}.dll"', f'"${{_IMPORT_PREFIX}}/lib/{name}.lib"'
        release += (
            f"set_target_properties({name} PROPERTIES IMPORTED_LOCATION_RELEASE {dll})\n"
            f"list(APPEND _cmake_import_check_files_for_{name} {lib} {dll} )\n"
        )
    files["_C.@PYTAG@.pyd"] = b"torch._C\n"
    files["include/ATen/ATen.h"] = b"#pragma once\n"
    files["include/torch/torch.h"] = b"#pragma once\n"
    files["include/fmt/core.h"] = b"// fmt's header, vendored\n"
    files["share/cmake/Torch/TorchConfig.cmake"] = b"include(../Caffe2/Caffe2Targets.cmake)\n"
    files["share/cmake/Caffe2/Caffe2Targets.cmake"] = _TARGETS.encode()
    files["share/cmake/Caffe2/Caffe2Targets-release.cmake"] = release.encode()
    files.update(extra or {})
    write_files(folder, files)
    return folder
