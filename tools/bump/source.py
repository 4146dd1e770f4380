"""What the new source demands, read from its own build files (no wheel needed): the
Pythons it supports (``[project] requires-python`` in pyproject.toml), the C++ standard its
installed ``TorchConfig.cmake`` imposes on every consumer (``cxx_std_NN``), and the oldest
CUDA its CMake accepts (an ``if(CUDA_VERSION VERSION_LESS X)`` that stops the configure)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from tools.foundation.errors import UserError
from tools.foundation.files import read_user_file, safe_yaml

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

PYPROJECT = "pyproject.toml"
# The template of the TorchConfig.cmake that libtorch installs, and so every consumer reads.
TORCH_CONFIG = "cmake/TorchConfig.cmake.in"
# recipe/cmake_test: the downstream project the libtorch and pytorch tests build.


def project_cmake(path: str) -> bool:
    """A CMake file of PyTorch's own build (not of a vendored project under third_party/)."""
    name = path.rsplit("/", 1)[-1]
    own = not path.startswith("third_party/")
    return own and (name == "CMakeLists.txt" or name.endswith((".cmake", ".cmake.in")))


def wanted(path: str) -> bool:
    """What extract() takes out of the archive for this stage and the knobs'."""
    return path == PYPROJECT or project_cmake(path)


def pyproject(tree: Path) -> dict:
    """The source's pyproject.toml as data (empty when it has none)."""
    path = tree / PYPROJECT
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(read_user_file(path, errors="replace"))
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"the new source's {PYPROJECT}: invalid TOML: {exc}") from None


def requires_python(tree: Path) -> str | None:
    """``[project] requires-python``; a setup.py-only source, or one that declares it dynamic,
    has none."""
    value = pyproject(tree).get("project", {}).get("requires-python")
    return str(value) if value else None


_CXX_STD = re.compile(r"\bcxx_std_(?P<std>\d+)\b")


def cxx_standard(tree: Path) -> int | None:
    """The C++ standard TorchConfig.cmake asks of consumers with ``target_compile_features``
    (2.15: ``cxx_std_20``).  2.13's ``CXX_STANDARD 20`` target property is not read: CMake
    does not pass an imported target's CXX_STANDARD on to the targets that link it."""
    path = tree / TORCH_CONFIG
    if not path.is_file():
        return None
    text = cmake_code(read_user_file(path, errors="replace"))
    found = [int(m["std"]) for m in _CXX_STD.finditer(text)]
    return max(found) if found else None


@dataclass(frozen=True)
class CudaMinimum:
    version: str  # "13.0"
    where: str  # the file that stops an older CUDA


# `if(CUDA_VERSION VERSION_LESS 12.6)` (cmake/public/cuda.cmake) whose block starts with a
# message(FATAL_ERROR ...): the configure refuses that CUDA outright.
_CUDA_FLOOR = re.compile(
    r"if\s*\(\s*(?:CUDA|CUDAToolkit|CMAKE_CUDA_COMPILER)_VERSION\s+VERSION_LESS\s+"
    r"\"?(?P<version>\d+(?:\.\d+)*)\"?\s*\)\s*message\s*\(\s*FATAL_ERROR",
    re.I,
)


def cuda_minimum(tree: Path, files: Iterable[str]) -> CudaMinimum | None:
    """The highest CUDA floor any of the source's own CMake files sets."""
    best: CudaMinimum | None = None
    for rel in sorted(files):
        path = tree / rel
        if not project_cmake(rel) or not path.is_file():
            continue
        for match in _CUDA_FLOOR.finditer(cmake_code(read_user_file(path, errors="replace"))):
            if best is None or _version(match["version"]) > _version(best.version):
                best = CudaMinimum(match["version"], rel)
    return best


def configs_below(ci_support: Path, minimum: CudaMinimum) -> Mapping[str, Sequence[str]]:
    """{CUDA version: the .ci_support configs (file stems) that build it} for each CUDA the
    configs build below ``minimum``."""
    below: dict[str, list[str]] = {}
    for path in sorted(ci_support.glob("*.yaml")):
        data = safe_yaml(path.read_text(encoding="utf-8")) or {}
        for value in data.get("cuda_compiler_version", []) or []:
            if str(value) != "None" and _version(str(value)) < _version(minimum.version):
                below.setdefault(str(value), []).append(path.stem)
    return dict(sorted(below.items(), key=lambda item: _version(item[0]), reverse=True))


def _version(text: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        return Version("0")


def cmake_code(text: str) -> str:
    """CMake text without its comments (a comment that mentions a check is not one)."""
    return re.sub(r"#[^\n]*", "", text)
