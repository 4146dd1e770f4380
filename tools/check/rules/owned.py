"""Files a conda-forge package owns, shipped by one of ours (check ``layout.dependency-owned``).

PyTorch's install tree carries copies of the libraries it vendors under third_party/: the
2.13.0 wheel's torch/include holds oneDNN's ``dnnl*.h`` and ``oneapi/``, ``cpuinfo.h``,
``pthreadpool.h``, ``fp16.h``, ``psimd.h``, ``fxdiv.h``, protobuf's ``google/``, ittapi's
headers, and a source build installs static libraries beside them. conda-forge packages own
the same paths in ``$PREFIX``. A package of ours that ships one of them clobbers that package
in every environment holding both, or is clobbered by it; where the owner is a run dependency
of ours, that is every environment.

Who owns what comes from two places: the dependency packages themselves, when they are among
the checked packages (their file lists are exact), and :data:`OWNERS`, the paths of the
conda-forge packages PyTorch vendors copies of. A path a dependency owns fails; a path another
conda-forge package in :data:`OWNERS` owns is a warning (it clashes once a user installs that
package too).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping

from tools.check.archive import TORCH_PACKAGES, Package
from tools.check.context import Context
from tools.check.findings import Finding, failed, member_path, warned
from tools.check.rules import each_package, verdict

CHECK = "layout.dependency-owned"
IDS = (CHECK,)

# conda-forge package -> path patterns (relative to $PREFIX) its packages install, for the
# libraries whose copies PyTorch's install tree carries (the top-level names of the 2.13.0
# wheel's torch/include that are not PyTorch's own ATen, c10, caffe2, torch, tensorpipe).
OWNERS: Mapping[str, tuple[str, ...]] = {
    "onednn": ("include/dnnl*.h", "include/dnnl*.hpp", "include/oneapi/dnnl/*", "lib/libdnnl*"),
    "cpuinfo": ("include/cpuinfo.h", "lib/libcpuinfo*"),
    "pthreadpool": ("include/pthreadpool.h", "lib/libpthreadpool*"),
    "fp16": ("include/fp16.h", "include/fp16/*"),
    "psimd": ("include/psimd.h",),
    "fxdiv": ("include/fxdiv.h",),
    "libprotobuf": (
        "include/google/protobuf/*",
        "lib/libprotobuf*",
        "lib/libprotoc*",
        "bin/protoc*",
        "Library/bin/protoc.exe",
    ),
    "ittapi": (
        "include/ittnotify.h",
        "include/jitprofiling.h",
        "include/libittnotify.h",
        "include/advisor-annotate.h",
        "include/legacy/ittnotify.h",
        "lib/libittnotify*",
    ),
    "pybind11": ("include/pybind11/*",),
    "fmt": ("include/fmt/*", "lib/libfmt*", "lib/cmake/fmt/*"),
    "sleef": ("include/sleef*.h", "lib/libsleef*"),
    "eigen": ("include/eigen3/*",),
    "libuv": ("include/uv.h", "include/uv/*", "lib/libuv*", "Library/bin/uv.dll"),
    # OpenMP runtimes upstream's install step copies next to torch's libraries (2.14+,
    # cmake/PostBuildSteps.cmake; recipe/package_files.py leaves them to these packages).
    "llvm-openmp": (
        "lib/libomp.dylib",
        "lib/libomp.so*",
        "include/omp.h",
        "Library/bin/libomp*.dll",
    ),
    "intel-openmp": (
        "lib/libiomp5*",
        "Library/bin/libiomp5md.dll",
        "Library/bin/libiompstubs5md.dll",
    ),
    "libgomp": ("lib/libgomp.so*",),
    "libgfortran": ("lib/libgfortran.so*",),
    "libabseil": ("include/absl/*", "lib/libabsl_*"),
    "nccl": ("include/nccl.h", "lib/libnccl*"),
    "nvtx-c": ("include/nvtx3/*",),
    "zlib": ("include/zlib.h", "include/zconf.h", "lib/libz.*"),
}


def dependency_names(package: Package) -> set[str]:
    """The names of a package's run requirements (index.json ``depends``)."""
    return {spec.split()[0] for spec in package.depends if spec.strip()}


def _compiled(owners: Mapping[str, tuple[str, ...]]) -> list[tuple[re.Pattern[str], str]]:
    return [
        (re.compile("|".join(fnmatch.translate(p) for p in patterns)), name)
        for name, patterns in owners.items()
    ]


# tools layout asks for every file of a release (~10,000 paths).
_OWNERS = _compiled(OWNERS)


def owner_by_pattern(path: str, owners: Mapping[str, tuple[str, ...]] = OWNERS) -> str | None:
    for expression, name in _OWNERS if owners is OWNERS else _compiled(owners):
        if expression.match(path):
            return name
    return None


def given_owners(packages: Iterable[Package]) -> dict[str, str]:
    """path -> name, for the checked packages that are not this feedstock's outputs."""
    owned: dict[str, str] = {}
    for package in packages:
        if package.kind != "conda" or package.name in TORCH_PACKAGES:
            continue
        for member in package.members:
            if member.kind != "dir" and not member.path.startswith("info/"):
                owned.setdefault(member.path, package.name)
    return owned


def owned_files(package: Package, given: Mapping[str, str]) -> list[tuple[str, str, bool]]:
    """(path, owner, owner is a dependency) for every file of ``package`` another package owns."""
    depends = dependency_names(package)
    found = []
    for member in package.members:
        if member.kind == "dir":
            continue
        owner = given.get(member.path) or owner_by_pattern(member.path)
        if owner is not None and owner != package.name:
            found.append((member.path, owner, owner in depends))
    return found


def check_dependency_owned(ctx: Context) -> list[Finding]:
    given = given_owners(ctx.packages)
    return each_package(
        ctx,
        lambda package: _dependency_owned(package, given),
        lambda p: p.kind == "conda" and p.name in TORCH_PACKAGES,
    )


def _dependency_owned(package: Package, given: Mapping[str, str]) -> list[Finding]:
    problems = []
    for path, owner, is_dependency in owned_files(package, given):
        where = member_path(package.label, path)
        if is_dependency:
            problems.append(failed(CHECK, where, f"{owner} owns this path and is a run dependency"))
        else:
            problems.append(
                warned(CHECK, where, f"{owner} owns this path; installing it clobbers one")
            )
    return verdict(CHECK, package, problems, "no file a conda-forge package owns")
