"""Which file of PyTorch's build goes to which package: the one place the rules live.

build.sh and bld.bat run it in their `libtorch` and `pytorch` stages (`--platform`: conda's
target_platform); `python -m tools layout` and the tests run its functions over upstream's
wheels. Standard library only (the build environment's Python). Errors: one line
(`package_files.py: error: ...`), exit 2.

  libtorch  copies each install-tree file `libtorch_path` places to $PREFIX (Windows: under
            Library/) and prints it; a path a host package installed (pytorch-cpu-feedstock
            issue 212), or a share/ or bin/ file no release installs, stops the build.
  pytorch   after `pip install`, in site-packages' torch/: torch_python goes to $PREFIX too,
            libtorch's files become links to it (Windows: are deleted), what a host package
            provides and Windows' vendored static libraries are dropped; any other library
            stops the build: it belongs in libtorch.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

# PyTorch's own header trees and files. The rest of upstream's include/ is copies of the
# libraries it vendors (oneDNN's dnnl*.h and oneapi/, cpuinfo.h, pthreadpool.h, fp16.h,
# protobuf's google/, sleef.h, fmt/, pybind11/ ...), paths conda-forge packages own
# (python -m tools check: layout.dependency-owned). THC/ (THCAtomics.cuh) and libshm.h are
# PyTorch's own, as are the copies of fbgemm/, kineto/ and qnnpack_func.h: public ATen and
# profiler headers include them (ATen/native/EmbeddingBag.h includes fbgemm/, in the 2.15.0
# wheel) and no conda-forge package provides them.
OWN_HEADER_TREES = ("ATen", "c10", "caffe2", "torch", "tensorpipe", "THC", "fbgemm", "kineto")
OWN_HEADER_FILES = ("libshm.h", "qnnpack_func.h")

# Runtime libraries upstream's install step copies next to torch's own (for wheels;
# pytorch#180239 moved the macOS libomp copy into cmake/PostBuildSteps.cmake, which has no
# conda exception): each belongs to the host package named, whose copy libtorch links.
LEFT_TO_HOST = {
    "lib/libomp.dylib": "llvm-openmp",
    "include/omp.h": "llvm-openmp",
    "lib/libgomp.so*": "libgomp",
    "lib/libgfortran.so*": "libgfortran",
    "lib/libiomp5*": "intel-openmp",
    "lib/libiompstubs5*": "intel-openmp",
    "lib/uv.dll": "libuv",
    "lib/zlibwapi.dll": "zlib-wapi",
    # Windows CUDA: every DLL of the toolkit's bin/ (the host's CUDA packages provide them).
    "lib/cudart64_*.dll": "cuda-cudart",
    "lib/cublas*64_*.dll": "libcublas",
    "lib/cudnn*.dll": "cudnn",
    "lib/cufft*64_*.dll": "libcufft",
    "lib/curand64_*.dll": "libcurand",
    "lib/cusolver*64_*.dll": "libcusolver",
    "lib/cusparse*64_*.dll": "libcusparse",
    "lib/cupti64_*.dll": "cuda-cupti",
    "lib/nvrtc*.dll": "cuda-nvrtc",
    "lib/nvJitLink*.dll": "libnvjitlink",
    "bin/protoc*": "libprotobuf",
}

# Windows: torch's own DLLs (and their import libraries), by name. Upstream's lib/ also holds
# OpenMP's, libuv's, every CUDA toolkit DLL and zlibwapi.dll (PostBuildSteps.cmake, 2.14+),
# and the vendored static libraries (cpuinfo.lib, fmt.lib, sleef.lib, mimalloc ...).
WINDOWS_OWN_LIBRARIES = (
    "c10",
    "c10_cuda",
    "caffe2_nvrtc",
    "shm",
    "torch",
    "torch_cpu",
    "torch_cuda",
    "torch_global_deps",
)

# What a release installs into share/ and bin/ (the 2.13.0 and 2.15.0 wheels' torch/share
# and torch/bin; protoc is the host's, LEFT_TO_HOST). Anything else there comes from a
# vendored dependency's install rules and stops the libtorch stage.
RELEASE_SHARE = ("cmake/ATen/", "cmake/Caffe2/", "cmake/Tensorpipe/", "cmake/Torch/")
RELEASE_BIN = ("torch_shm_manager",)
# What upstream's wheels up to 2.13 also hold in bin/: its C++ test programs and their data,
# installed by INSTALL_TEST=1. build.sh and bld.bat export INSTALL_TEST=0, so in a build they
# stop the libtorch stage like any other stray; `python -m tools layout` names them apart.
INSTALL_TEST_FILES = ("bin/test_*", "bin/*Test", "bin/*.pt", "bin/*.ptl", "bin/upgrader_models/*")

PYTHON_LIBRARY = {"win-64": "torch_python"}
# Windows: the Python-bound import libraries torch.utils.cpp_extension links from torch/lib.
WINDOWS_PYTHON_IMPORT_LIBRARIES = ("torch_python.lib", "_C.lib")
PLATFORMS = ("linux-64", "linux-aarch64", "linux-ppc64le", "osx-64", "osx-arm64", "win-64")


class RuleError(Exception):
    """The stage cannot go on; the message is the one line to print."""


def is_windows(platform: str) -> bool:
    return platform.startswith("win-")


# One expression for all of LEFT_TO_HOST: every file of a release's tree is asked (~10,000).
_LEFT_TO_HOST = re.compile(
    "|".join(f"(?P<p{i}>{fnmatch.translate(p)})" for i, p in enumerate(LEFT_TO_HOST))
)
_OWNERS = list(LEFT_TO_HOST.values())


def host_owner(rel: str) -> str | None:
    """The host package whose file install-tree path ``rel`` is a copy of, if any."""
    found = _LEFT_TO_HOST.match(rel)
    return _OWNERS[int(found.lastgroup[1:])] if found else None


def _own_header(rel: str) -> bool:
    inside = rel.removeprefix("include/")
    return inside.split("/")[0] in OWN_HEADER_TREES or inside in OWN_HEADER_FILES


def libtorch_path(rel: str, platform: str) -> str | None:
    """Where libtorch installs install-tree file ``rel`` (relative to $PREFIX), or None."""
    if host_owner(rel) is not None:
        return None
    top, _, rest = rel.partition("/")
    if top == "include":
        return (f"Library/{rel}" if is_windows(platform) else rel) if _own_header(rel) else None
    if is_windows(platform):
        return _windows_libtorch_path(top, rest)
    if top == "lib":
        name = rest
        # Subfolders (libshm/, libshm_windows/) hold headers setup.py packages as data: they
        # stay with the pytorch package. Static libraries are the vendored dependencies'.
        if "/" in name or name.endswith(".a"):
            return None
        # Python-bound (each pytorch package), and the CUDA linear algebra library
        # (libtorch-cuda-linalg, one flavour at a time).
        if name.startswith(("libtorch_python.", "libtorch_cuda_linalg.")):
            return None
        return rel
    if top in ("share", "bin"):
        return rel if release_installs(rel, platform) else None
    return None


def release_installs(rel: str, platform: str) -> bool:
    """Whether install-tree path ``rel`` of share/ or bin/ is one a release installs."""
    top, _, rest = rel.partition("/")
    if top == "share":
        return rest.startswith(RELEASE_SHARE)
    if top == "bin":
        return not is_windows(platform) and rest in RELEASE_BIN
    return True


def unreleased(tree_files: Iterable[str], platform: str) -> list[str]:
    """share/ and bin/ files of the install tree no release installs (host copies aside)."""
    return [
        rel
        for rel in tree_files
        if rel.startswith(("share/", "bin/"))
        and host_owner(rel) is None
        and not release_installs(rel, platform)
    ]


def install_test_file(rel: str) -> bool:
    """Whether install-tree path ``rel`` is one of upstream's C++ tests (INSTALL_TEST)."""
    return any(fnmatch.fnmatchcase(rel, pattern) for pattern in INSTALL_TEST_FILES)


def unreleased_error(path: object) -> str:
    return (
        f"{path} is not a file a PyTorch release installs (share/cmake/"
        "{ATen,Caffe2,Tensorpipe,Torch}, bin/torch_shm_manager): a vendored dependency's, "
        "which could clobber a conda-forge package; build against the system copy "
        "(USE_SYSTEM_*), or if PyTorch installs it now, add it to RELEASE_SHARE/RELEASE_BIN "
        "in recipe/package_files.py"
    )


def _windows_libtorch_path(top: str, rest: str) -> str | None:
    if top == "share":
        return f"Library/share/{rest}" if rest.startswith(RELEASE_SHARE) else None
    if top != "lib" or "/" in rest:
        return None
    stem, dot, extension = rest.rpartition(".")
    if not dot or stem not in WINDOWS_OWN_LIBRARIES:
        return None
    folder = {"dll": "bin", "lib": "lib"}.get(extension.lower())
    return f"Library/{folder}/{rest}" if folder else None


def python_library(name: str, platform: str) -> bool:
    """Whether torch/lib/``name`` is torch_python (shared or import library)."""
    stem = PYTHON_LIBRARY.get(platform, "libtorch_python")
    return name.split(".")[0] == stem


def pytorch_counterpart(rel: str, platform: str) -> str | None:
    """The $PREFIX path (relative) whose presence makes site-packages' ``torch/<rel>`` a
    duplicate of libtorch's file, or None. Headers stay real files: symlinked include/
    trees broke downstream include paths
    (https://github.com/conda-forge/pytorch-cpu-feedstock/issues/447)."""
    top, _, rest = rel.partition("/")
    if is_windows(platform):
        if top == "share":
            return f"Library/share/{rest}"
        if top != "lib" or "/" in rest:
            return None
        extension = rest.rpartition(".")[2].lower()
        folder = {"dll": "bin", "lib": "lib"}.get(extension)
        return f"Library/{folder}/{rest}" if folder else None
    return rel if top in ("lib", "bin", "share") else None


def is_library(name: str, platform: str) -> bool:
    if is_windows(platform):
        return name.lower().endswith((".dll", ".pyd"))
    return ".so" in name or name.endswith(".dylib")


# ---------------------------------------------------------------- the stages, planned


@dataclass(frozen=True)
class PytorchPlan:
    """What the pytorch stage does to site-packages' torch/ (paths relative to it)."""

    python_libraries: tuple[tuple[str, str], ...]  # (torch/ path, $PREFIX path)
    duplicates: tuple[tuple[str, str], ...]  # (torch/ path, libtorch's $PREFIX path)
    dropped: tuple[tuple[str, str], ...]  # (torch/ path, host package providing it)
    strays: tuple[str, ...]  # libraries that are none of these: the build stops
    # Windows: static libraries of vendored dependencies (linked into torch's DLLs).
    static: tuple[str, ...] = ()


def plan_libtorch(tree_files: Iterable[str], platform: str) -> list[tuple[str, str]]:
    """(install-tree path, $PREFIX path) for every file libtorch installs."""
    return [(rel, dest) for rel in tree_files if (dest := libtorch_path(rel, platform))]


def plan_pytorch(
    torch_files: Iterable[str], in_prefix: Callable[[str], bool], platform: str
) -> PytorchPlan:
    """``torch_files``: site-packages' torch/ after `pip install` (links excluded);
    ``in_prefix``: whether a $PREFIX path exists once torch_python is placed there."""
    pythons, duplicates, dropped, strays, static = [], [], [], [], []
    for rel in torch_files:
        top, _, rest = rel.partition("/")
        name = rel.rpartition("/")[2]
        if top == "lib" and "/" not in rest and python_library(name, platform):
            counterpart = pytorch_counterpart(rel, platform)
            if counterpart is not None:
                pythons.append((rel, counterpart))
            if is_windows(platform):
                # torch_python.lib stays: torch.utils.cpp_extension links it from torch/lib.
                continue
        owner = host_owner(rel)
        if owner is not None:
            dropped.append((rel, owner))
            continue
        counterpart = pytorch_counterpart(rel, platform)
        if counterpart is not None and (in_prefix(counterpart) or (rel, counterpart) in pythons):
            duplicates.append((rel, counterpart))
        elif top == "lib" and not python_library(name, platform) and is_library(name, platform):
            strays.append(rel)
        elif (
            is_windows(platform)
            and top == "lib"
            and name.lower().endswith(".lib")
            and name not in WINDOWS_PYTHON_IMPORT_LIBRARIES
        ):
            static.append(rel)
    return PytorchPlan(*map(tuple, (pythons, duplicates, dropped, strays, static)))


# ---------------------------------------------------------------- file operations


def _files(root: Path) -> list[str]:
    """Relative paths of every file under ``root`` (links excluded), sorted."""
    found = []
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            if not path.is_symlink():
                found.append(path.relative_to(root).as_posix())
    return sorted(found)


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def install_libtorch(tree: Path, prefix: Path, platform: str) -> list[str]:
    if not tree.is_dir():
        raise RuleError(f"{tree} is not a directory; the compile stage lays out the install tree")
    files = _files(tree)
    stray = unreleased(files, platform)
    if stray:
        raise RuleError(unreleased_error(tree / stray[0]))
    placed = plan_libtorch(files, platform)
    if not placed:
        raise RuleError(f"{tree} holds no files for libtorch; did the build install anything?")
    for _, dest in placed:
        if _exists(prefix / dest):
            raise RuleError(clobber_error(prefix / dest))
    for rel, dest in placed:
        (prefix / dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(tree / rel, prefix / dest, follow_symlinks=False)
    return [dest for _, dest in placed]


def clobber_error(path: object) -> str:
    return (
        f"{path} already exists (installed by a host dependency); libtorch must not "
        "overwrite it: build against the system copy (USE_SYSTEM_*) or leave it to that "
        "package in recipe/package_files.py"
    )


def stray_error(path: object, platform: str) -> str:
    return (
        f"{path} is neither {PYTHON_LIBRARY.get(platform, 'libtorch_python')} nor a file "
        "libtorch installed; a new library must go to libtorch (libtorch_path in "
        "recipe/package_files.py)"
    )


def place_pytorch(site_packages: Path, prefix: Path, platform: str) -> list[str]:
    """The pytorch stage after `pip install`; returns what it did, one line each."""
    torch = site_packages / "torch"
    plan = plan_pytorch(_files(torch), lambda rel: _exists(prefix / rel), platform)
    if not any(is_library(rel, platform) for rel, _ in plan.python_libraries):
        raise RuleError(f"pip install left no torch_python library in {torch / 'lib'}")
    if plan.strays:
        raise RuleError(stray_error(torch / plan.strays[0], platform))
    done = []
    for rel, dest in plan.python_libraries:
        (prefix / dest).parent.mkdir(parents=True, exist_ok=True)
        if is_windows(platform) and rel.lower().endswith(".dll"):
            # Found next to libtorch's DLLs; torch/__init__.py adds Library/bin to the path.
            shutil.move(torch / rel, prefix / dest)
        else:
            # In $PREFIX for find_package(Torch) users; linked back below for
            # torch.utils.cpp_extension, which links torch_python from torch/lib.
            # https://github.com/conda-forge/pytorch-cpu-feedstock/issues/313
            shutil.copy2(torch / rel, prefix / dest)
        done.append(f"torch_python: {prefix / dest}")
    for rel, owner in plan.dropped:
        (torch / rel).unlink()
        done.append(f"dropped {torch / rel} (the host's {owner} provides it)")
    for rel in plan.static:
        (torch / rel).unlink()
        done.append(f"dropped {torch / rel} (a vendored static library torch's DLLs hold)")
    for rel, dest in plan.duplicates:
        entry = torch / rel
        if not _exists(entry):
            continue
        entry.unlink()
        if not is_windows(platform):
            entry.symlink_to(os.path.relpath(prefix / dest, entry.parent))
        done.append(f"libtorch's: {entry}")
    return done


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="package_files.py", description=__doc__.split("\n")[0])
    parser.add_argument("stage", choices=("libtorch", "pytorch"))
    parser.add_argument("--platform", required=True, help="conda's target_platform")
    parser.add_argument("--prefix", required=True, type=Path)
    parser.add_argument("--tree", type=Path, help="the install tree (libtorch)")
    parser.add_argument("--site-packages", type=Path, help="SP_DIR (pytorch)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    try:
        if args.platform not in PLATFORMS:
            raise RuleError(
                f"--platform '{args.platform}' is not one of {', '.join(PLATFORMS)}; "
                "pass conda's target_platform"
            )
        if args.stage == "libtorch":
            if args.tree is None:
                raise RuleError("the libtorch stage needs --tree INSTALL_TREE")
            lines = install_libtorch(args.tree, args.prefix, args.platform)
        else:
            if args.site_packages is None:
                raise RuleError("the pytorch stage needs --site-packages SP_DIR")
            lines = place_pytorch(args.site_packages, args.prefix, args.platform)
    except (RuleError, OSError) as error:
        print(f"package_files.py: error: {error}", file=sys.stderr)
        return 2
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
