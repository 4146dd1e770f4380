"""Upstream claims from the vendored libraries under ``third_party/`` of a PyTorch source tree:
each one's own version file (a header, CMake or make fragment), read through ``PROBES``."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tools.drift.model import ANYWHERE, Condition, Kind, Scope, UpstreamClaim
from tools.foundation.files import read_user_file


def _assigned(text: str, name: str) -> str | None:
    """The value of ``name`` as a C macro, a CMake ``set()`` or a make/shell assignment."""
    pattern = (
        rf"(?m)^\s*(?:#\s*define\s+{name}\s+|set\s*\(\s*{name}\s+|{name}\s*:?=\s*)"
        r"\"?(?P<value>[0-9A-Za-z_.]+)\"?"
    )
    match = re.search(pattern, text)
    return match["value"] if match else None


def joined(*names: str, optional: Sequence[str] = ()) -> Callable[[str], str | None]:
    """Version from separate major/minor/patch definitions (``optional`` ones may be absent)."""

    def extract(text: str) -> str | None:
        parts = [_assigned(text, name) for name in names]
        if any(part is None for part in parts):
            return None
        parts += [p for p in (_assigned(text, name) for name in optional) if p is not None]
        return ".".join(parts)  # type: ignore[arg-type]

    return extract


def packed(name: str, base: int, width: int = 3) -> Callable[[str], str | None]:
    """Version packed into one integer: ``FMT_VERSION 110200`` (base 100) is 11.2.0."""

    def extract(text: str) -> str | None:
        value = _assigned(text, name)
        if value is None or not value.isdigit():
            return None
        number, parts = int(value), []
        for _ in range(width - 1):
            number, rest = divmod(number, base)
            parts.append(rest)
        parts.append(number)
        return ".".join(str(p) for p in reversed(parts))

    return extract


def regex(pattern: str) -> Callable[[str], str | None]:
    def extract(text: str) -> str | None:
        match = re.search(pattern, text, re.MULTILINE)
        return match.group(1) if match else None

    return extract


def cmake_project(text: str) -> str | None:
    match = re.search(r"(?m)^\s*project\s*\(\s*\S+\s+VERSION\s+\"?([0-9][0-9.]*)", text)
    return match.group(1) if match else None


def whole_file(text: str) -> str | None:
    value = text.strip()
    return value if re.fullmatch(r"[0-9][0-9A-Za-z.+-]*", value) else None


@dataclass(frozen=True)
class Probe:
    """Where a vendored library records its version; the first readable file wins."""

    package: str
    files: tuple[tuple[str, Callable[[str], str | None]], ...]
    condition: Condition = field(default_factory=Condition)


CUDA_ONLY = Condition({"cuda_compiler_version": r"\d+"}, label="CUDA")
_TP = "third_party/"

# fmt: off
PROBES: tuple[Probe, ...] = (
    Probe("sleef", (
        (_TP + "sleef/CMakeLists.txt",
         joined("SLEEF_VERSION_MAJOR", "SLEEF_VERSION_MINOR", "SLEEF_VERSION_PATCHLEVEL")),
        (_TP + "sleef/CMakeLists.txt", cmake_project),
    )),
    Probe("pybind11", (
        (_TP + "pybind11/include/pybind11/detail/common.h",
         joined("PYBIND11_VERSION_MAJOR", "PYBIND11_VERSION_MINOR", "PYBIND11_VERSION_PATCH")),
    )),
    Probe("fmt", (
        (_TP + "fmt/include/fmt/base.h", packed("FMT_VERSION", 100)),  # fmt >= 11
        (_TP + "fmt/include/fmt/core.h", packed("FMT_VERSION", 100)),
    )),
    Probe("eigen", (
        (_TP + "eigen/Eigen/Version",  # Eigen >= 5
         joined("EIGEN_MAJOR_VERSION", "EIGEN_MINOR_VERSION", "EIGEN_PATCH_VERSION")),
        (_TP + "eigen/Eigen/src/Core/util/Macros.h",
         joined("EIGEN_WORLD_VERSION", "EIGEN_MAJOR_VERSION", "EIGEN_MINOR_VERSION")),
    )),
    Probe("protobuf", (
        (_TP + "protobuf/src/google/protobuf/port_def.inc", packed("PROTOBUF_VERSION", 1000)),
        (_TP + "protobuf/src/google/protobuf/stubs/common.h",
         packed("GOOGLE_PROTOBUF_VERSION", 1000)),
    )),
    Probe("onednn", (
        (_TP + "ideep/mkl-dnn/CMakeLists.txt",
         regex(r'set\s*\(\s*PROJECT_VERSION\s+"([0-9.]+)"')),
        (_TP + "ideep/mkl-dnn/CMakeLists.txt", cmake_project),
    )),
    Probe("nccl", (
        (_TP + "nccl/nccl/makefiles/version.mk",
         joined("NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH", optional=("PKG_REVISION",))),
    ), CUDA_ONLY),
    Probe("kineto", ((_TP + "kineto/libkineto/CMakeLists.txt", cmake_project),)),
    Probe("cudnn-frontend", (
        (_TP + "cudnn_frontend/include/cudnn_frontend_version.h",
         joined("CUDNN_FRONTEND_MAJOR_VERSION", "CUDNN_FRONTEND_MINOR_VERSION",
                "CUDNN_FRONTEND_PATCH_VERSION")),
    ), CUDA_ONLY),
    Probe("cutlass", (
        (_TP + "cutlass/include/cutlass/version.h",
         joined("CUTLASS_MAJOR", "CUTLASS_MINOR", "CUTLASS_PATCH")),
    ), CUDA_ONLY),
    Probe("nvtx", ((_TP + "NVTX/c/CMakeLists.txt", cmake_project),), CUDA_ONLY),
    Probe("libuv", (
        (_TP + "tensorpipe/third_party/libuv/include/uv/version.h",
         joined("UV_VERSION_MAJOR", "UV_VERSION_MINOR", "UV_VERSION_PATCH")),
    )),
    Probe("onnx", ((_TP + "onnx/VERSION_NUMBER", whole_file),)),
    Probe("flatbuffers", (
        (_TP + "flatbuffers/include/flatbuffers/base.h",
         joined("FLATBUFFERS_VERSION_MAJOR", "FLATBUFFERS_VERSION_MINOR",
                "FLATBUFFERS_VERSION_REVISION")),
    )),
    Probe("nlohmann-json", tuple(
        (_TP + f"nlohmann/include/nlohmann/{header}",
         joined("NLOHMANN_JSON_VERSION_MAJOR", "NLOHMANN_JSON_VERSION_MINOR",
                "NLOHMANN_JSON_VERSION_PATCH"))
        for header in ("detail/abi_macros.hpp", "json.hpp")
    )),
    Probe("cpp-httplib", (
        (_TP + "cpp-httplib/httplib.h", regex(r'#define\s+CPPHTTPLIB_VERSION\s+"([^"]+)"')),
    )),
    Probe("opentelemetry-cpp", (
        (_TP + "opentelemetry-cpp/api/include/opentelemetry/version.h",
         regex(r'#define\s+OPENTELEMETRY_VERSION\s+"([^"]+)"')),
    )),
)
# fmt: on


def claim_tested(
    package: str, version: str, source: str, condition: Condition = ANYWHERE, priority: int = 60
) -> UpstreamClaim:
    return UpstreamClaim(
        package=package,
        spec=f"=={version}",
        text=version,
        kind=Kind.TESTED,
        scope=Scope.HOST,
        source=source,
        condition=condition,
        priority=priority,
    )


def vendored(root: Path) -> tuple[list[UpstreamClaim], list[str]]:
    claims, notes = [], []
    for probe in PROBES:
        present = [(rel, extract) for rel, extract in probe.files if (root / rel).is_file()]
        if not present:
            continue
        for rel, extract in present:
            version = extract(read_user_file(root / rel, errors="replace"))
            if version:
                claims.append(
                    claim_tested(probe.package, version, rel, probe.condition, priority=70)
                )
                break
        else:
            notes.append(f"{present[0][0]}: no version found for {probe.package}")
    return claims, notes
