"""The pins of the CUDA stand-ins (cuda.py): NVIDIA's wheel of each CUDA component per CUDA
version, conda-forge's targets folder per subdir, and the CUDAARCHS cuda-nvcc's activation
exports. A new CUDA version is a new row here."""

from __future__ import annotations

#: The wheel (PyPI name, version) of each CUDA component, per CUDA version. 13.0 is the
#: CUDA 13.0 update 2 set conda-forge builds against; 12.9's and 12.8's nvcc wheels ship
#: ptxas and NVVM but no nvcc driver (nor cicc), so only ptxas-level checks run for them.
WHEELS: dict[str, dict[str, tuple[str, str]]] = {
    "13.0": {
        "nvcc": ("nvidia-cuda-nvcc", "13.0.88"),
        "nvvm": ("nvidia-nvvm", "13.0.88"),
        "crt": ("nvidia-cuda-crt", "13.0.88"),
        "runtime": ("nvidia-cuda-runtime", "13.0.96"),
        "cccl": ("nvidia-cuda-cccl", "13.0.85"),
        "cublas": ("nvidia-cublas", "13.0.2.14"),
        "cusolver": ("nvidia-cusolver", "12.0.4.66"),
        "cusparse": ("nvidia-cusparse", "12.6.3.3"),
        "nvjitlink": ("nvidia-nvjitlink", "13.0.88"),
    },
    "12.9": {
        "nvcc": ("nvidia-cuda-nvcc-cu12", "12.9.86"),
        "runtime": ("nvidia-cuda-runtime-cu12", "12.9.79"),
        "cccl": ("nvidia-cuda-cccl-cu12", "12.9.27"),
    },
    # Windows builds CUDA 12.8 (recipe/cuda_arch_lists.txt); only its ptxas is used, to
    # assemble the win-64 row (device code does not depend on the host).
    "12.8": {"nvcc": ("nvidia-cuda-nvcc-cu12", "12.8.93")},
}
#: conda-forge's targets folder per conda subdir (cuda-nvcc's activation script).
TARGETS = {"linux-64": "targets/x86_64-linux", "linux-aarch64": "targets/sbsa-linux"}
#: The CUDAARCHS conda-forge's cuda-nvcc activation exports in a build when it is unset
#: (CMake's default CMAKE_CUDA_ARCHITECTURES): DEFAULT_CUDAARCHS of cuda-nvcc-feedstock's
#: recipe/conda_build_config.yaml for the nvcc of WHEELS (13.0.88: main@382eb33; 12.9.86:
#: branch 12.x@a214294), per CUDA version and subdir (linux-aarch64: the sbsa row).
_CUDAARCHS_12 = (
    "50-real;52-real;60-real;61-real;70-real;75-real;80-real;86-real;89-real;"
    "90a-real;100f-real;103f-real;120a-real;121f-real;121-virtual"
)
CUDAARCHS = {
    ("12.9", "linux-64"): _CUDAARCHS_12,
    ("12.9", "linux-aarch64"): _CUDAARCHS_12,
    ("13.0", "linux-64"): "75-real;80-real;86-real;89-real;90a-real;100f-real;103f-real;"
    "120a-real;121f-real;121-virtual",
    ("13.0", "linux-aarch64"): "75-real;80-real;86-real;87-real;89-real;90a-real;100f-real;"
    "103f-real;110-real;120a-real;121f-real;121-virtual",
}
