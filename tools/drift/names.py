"""Upstream names (PyPI projects, vendored libraries, CI installs) to conda-forge package names."""

from __future__ import annotations

import re

# Upstream name -> conda-forge names, the one the recipe most likely uses first.  The recipe is
# searched for every candidate; the conda-forge column uses the first one the channel carries.
_CONDA_NAMES: dict[str, tuple[str, ...]] = {
    "torch": ("pytorch",),
    "protobuf": ("libprotobuf",),
    "onednn": ("onednn",),
    "nvtx": ("nvtx-c",),
    "cuda": ("cuda-version",),
    "cudnn": ("libcudnn-dev", "cudnn", "libcudnn"),
    "cudnn-frontend": ("cudnn-frontend",),
    "cusparselt": ("cusparselt", "libcusparselt-dev", "libcusparselt"),
    "cudss": ("libcudss-dev", "libcudss"),
    "magma": ("libmagma-devel", "libmagma", "magma"),
    "mkl": ("mkl-devel", "mkl"),
    "nccl": ("nccl",),
    "nvshmem": ("libnvshmem-dev", "libnvshmem3"),
    "googletest": ("gtest",),
    "nlohmann-json": ("nlohmann_json",),
    "opt-einsum": ("opt_einsum",),
    "typing-extensions": ("typing_extensions", "typing-extensions"),
}

# NVIDIA's PyPI wheels (nvidia-<lib>-cu12) and the conda-forge packages carrying the same library.
_NVIDIA_WHEELS: dict[str, tuple[str, ...]] = {
    "cudnn": ("cudnn", "libcudnn-dev", "libcudnn"),
    "nccl": ("nccl",),
    "cusparselt": ("cusparselt", "libcusparselt-dev", "libcusparselt"),
    "cublas": ("libcublas", "libcublas-dev"),
    "cuda-runtime": ("cuda-cudart", "cuda-cudart-dev"),
    "cuda-nvrtc": ("cuda-nvrtc", "cuda-nvrtc-dev"),
    "cuda-cupti": ("cuda-cupti", "cuda-cupti-dev"),
    "cufft": ("libcufft", "libcufft-dev"),
    "curand": ("libcurand", "libcurand-dev"),
    "cusolver": ("libcusolver", "libcusolver-dev"),
    "cusparse": ("libcusparse", "libcusparse-dev"),
    "nvjitlink": ("libnvjitlink", "libnvjitlink-dev"),
    "nvtx": ("cuda-nvtx", "cuda-nvtx-dev", "nvtx-c"),
    "cufile": ("libcufile", "libcufile-dev"),
    "nvshmem": ("libnvshmem3", "libnvshmem-dev"),
}

_NVIDIA_WHEEL = re.compile(r"nvidia-(?P<lib>.+?)-cu\d+")

# NVIDIA's cuda-toolkit metapackage (PyTorch >= 2.14 wheels) names its components as extras;
# most extras are the nvidia-<lib> wheel's own name, these three are not.
_TOOLKIT_EXTRA_LIBS = {"cudart": "cuda-runtime", "cupti": "cuda-cupti", "nvrtc": "cuda-nvrtc"}


def canonical(name: str) -> str:
    """PEP 503 normalisation; conda-forge spells some names with ``_`` and PyPI with ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def conda_names(upstream_name: str) -> tuple[str, ...]:
    """Candidate conda-forge names for an upstream name, most likely first (never empty)."""
    key = canonical(upstream_name)
    nvidia = _NVIDIA_WHEEL.fullmatch(key)
    if nvidia and nvidia["lib"] in _NVIDIA_WHEELS:
        return _NVIDIA_WHEELS[nvidia["lib"]]
    return _CONDA_NAMES.get(key, (key,))


def nvidia_library(upstream_name: str) -> str | None:
    """The library an NVIDIA wheel ships (``nvidia-nvshmem-cu13`` -> ``nvshmem``), if it is one
    whose conda-forge package this module knows."""
    nvidia = _NVIDIA_WHEEL.fullmatch(canonical(upstream_name))
    return nvidia["lib"] if nvidia and nvidia["lib"] in _NVIDIA_WHEELS else None


def toolkit_component(extra: str) -> tuple[str, tuple[str, ...]] | None:
    """``(library, conda-forge names)`` of a ``cuda-toolkit[extra]`` component; ``None`` for
    an extra this module does not know."""
    lib = _TOOLKIT_EXTRA_LIBS.get(canonical(extra), canonical(extra))
    return (lib, _NVIDIA_WHEELS[lib]) if lib in _NVIDIA_WHEELS else None
