"""Which conda-forge package ships a library that torch links, on each platform.

A library a binary loads that is not among the checked packages resolves when a run
dependency of the package ships it: ``libomp.dylib`` needs ``llvm-openmp`` among the
depends, ``uv.dll`` ``libuv``. Patterns are matched against the file name alone (a Mach-O
``@rpath/libomp.dylib``'s last component), without regard to case on Windows.
"""

from __future__ import annotations

import fnmatch

import rattler
from rattler.exceptions import InvalidMatchSpecError, InvalidPackageNameError

from tools.check.archive import Package

PROVIDERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # Linux (ELF NEEDED)
    ("libstdc++.so.6", ("libstdcxx", "libstdcxx-ng")),
    ("libgcc_s.so.1", ("libgcc", "libgcc-ng")),
    ("libgomp.so.1", ("libgomp", "_openmp_mutex")),
    ("libomp.so*", ("llvm-openmp",)),
    ("libz.so.1", ("libzlib", "zlib")),
    ("libprotobuf.so.*", ("libprotobuf",)),
    ("libsleef.so.*", ("sleef",)),
    ("libuv.so.*", ("libuv",)),
    ("libdnnl.so.*", ("onednn",)),
    ("libblas.so.*", ("libblas",)),
    ("libcblas.so.*", ("libcblas",)),
    ("liblapack.so.*", ("liblapack",)),
    ("libopenblas*.so*", ("libopenblas",)),
    ("libmkl_*.so*", ("mkl",)),
    ("libabsl_*.so*", ("libabseil",)),
    ("libfmt.so.*", ("fmt",)),
    ("libnuma.so.*", ("libnuma",)),
    ("libpython3*.so*", ("python",)),
    ("libcudart.so.*", ("cuda-cudart",)),
    ("libcublas*.so.*", ("libcublas",)),
    ("libcufft*.so.*", ("libcufft",)),
    ("libcurand.so.*", ("libcurand",)),
    ("libcusolver*.so.*", ("libcusolver",)),
    ("libcusparse.so.*", ("libcusparse",)),
    ("libcusparseLt.so.*", ("cusparselt", "libcusparselt")),
    ("libnvrtc*.so*", ("cuda-nvrtc",)),
    ("libcupti.so.*", ("cuda-cupti",)),
    ("libnvToolsExt.so.*", ("cuda-nvtx",)),
    ("libnvJitLink.so.*", ("libnvjitlink",)),
    ("libcudnn*.so.*", ("cudnn", "libcudnn")),
    ("libnccl.so.*", ("nccl",)),
    ("libcudss.so.*", ("libcudss",)),
    ("libcufile*.so.*", ("libcufile",)),
    ("libnvshmem*.so*", ("libnvshmem",)),
    ("libmagma*.so*", ("libmagma",)),
    # macOS (LC_LOAD_DYLIB), conda-forge's install names
    ("libc++.1.dylib", ("libcxx",)),
    ("libc++abi.1.dylib", ("libcxx",)),
    ("libomp.dylib", ("llvm-openmp",)),
    ("libz.1.dylib", ("libzlib", "zlib")),
    ("libprotobuf.*.dylib", ("libprotobuf",)),
    ("libsleef.*.dylib", ("sleef",)),
    ("libuv.*.dylib", ("libuv",)),
    ("libdnnl.*.dylib", ("onednn",)),
    ("libblas.*.dylib", ("libblas",)),
    ("libcblas.*.dylib", ("libcblas",)),
    ("liblapack.*.dylib", ("liblapack",)),
    ("libopenblas*.dylib", ("libopenblas",)),
    ("libmkl_*.dylib", ("mkl",)),
    ("libabsl_*.dylib", ("libabseil",)),
    ("libfmt.*.dylib", ("fmt",)),
    ("libpython3*.dylib", ("python",)),
    # Windows (PE imports; matched in lower case), conda-forge's Library/bin names
    ("libiomp5md.dll", ("intel-openmp",)),
    ("libomp*.dll", ("llvm-openmp",)),
    ("uv.dll", ("libuv",)),
    ("libprotobuf*.dll", ("libprotobuf",)),
    ("zlib*.dll", ("libzlib", "zlib")),
    ("sleef*.dll", ("sleef",)),
    ("dnnl*.dll", ("onednn",)),
    ("libblas.dll", ("libblas",)),
    ("libcblas.dll", ("libcblas",)),
    ("liblapack.dll", ("liblapack",)),
    ("mkl_*.dll", ("mkl",)),
    ("abseil_dll.dll", ("libabseil",)),
    ("fmt*.dll", ("fmt",)),
    ("python3*.dll", ("python",)),
    ("cudart64_*.dll", ("cuda-cudart",)),
    ("cublas*64_*.dll", ("libcublas",)),
    ("cufft*64_*.dll", ("libcufft",)),
    ("curand64_*.dll", ("libcurand",)),
    ("cusolver*64_*.dll", ("libcusolver",)),
    ("cusparse64_*.dll", ("libcusparse",)),
    ("nvrtc*64_*.dll", ("cuda-nvrtc",)),
    ("cupti64_*.dll", ("cuda-cupti",)),
    ("nvtoolsext64_*.dll", ("cuda-nvtx",)),
    ("nvjitlink_*.dll", ("libnvjitlink",)),
    ("cudnn*64_*.dll", ("cudnn", "libcudnn")),
    ("libmagma*.dll", ("libmagma",)),
)


def providers_of(library: str, *, windows: bool = False) -> tuple[str, ...]:
    """The conda-forge packages that ship ``library`` (a file name), or ()."""
    name = library.lower() if windows else library
    return next((names for pattern, names in PROVIDERS if fnmatch.fnmatchcase(name, pattern)), ())


def dependency_names(package: Package) -> set[str]:
    """The normalized names of a package's run dependencies (index.json ``depends``)."""
    names = set()
    for spec in package.depends:
        try:
            names.add(rattler.MatchSpec(spec).name.normalized)
        except (InvalidMatchSpecError, InvalidPackageNameError):  # the metadata check's business
            names.add(spec.split()[0])
    return names
