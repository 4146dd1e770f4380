"""Upstream claims from an unpacked PyTorch source tree (release tarball or git checkout).

Three kinds of files speak about versions:

- vendored libraries under ``third_party/``: each one's own version file (a header, CMake or
  make fragment), read through the ``PROBES`` table;
- the CI images' pins under ``.ci/docker/``: ``ci_commit_pins/*.txt``, ``triton_version.txt``
  and the ``common/install_*.sh`` scripts (CUDA, cuDNN, NCCL, magma, MKL, cuDSS, cuSPARSELt),
  where a value inside ``install_129`` or under an ``if`` on ``CUDA_VERSION`` applies to
  that CUDA series only;
- Python requirements: ``pyproject.toml`` and the top-level ``requirements*.txt``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tools.drift import pep440
from tools.drift.model import ANYWHERE, Condition, Kind, Scope, UpstreamClaim
from tools.errors import UserError

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]


@dataclass(frozen=True)
class TreeResult:
    claims: tuple[UpstreamClaim, ...]
    notes: tuple[str, ...] = ()  # things found but not understood, for a warning


# ---------------------------------------------------------------------------------------------
# Vendored libraries
# ---------------------------------------------------------------------------------------------


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


_CUDA_ONLY = Condition({"cuda_compiler_version": r"\d+"}, label="CUDA")
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
    ), _CUDA_ONLY),
    Probe("kineto", ((_TP + "kineto/libkineto/CMakeLists.txt", cmake_project),)),
    Probe("cudnn-frontend", (
        (_TP + "cudnn_frontend/include/cudnn_frontend_version.h",
         joined("CUDNN_FRONTEND_MAJOR_VERSION", "CUDNN_FRONTEND_MINOR_VERSION",
                "CUDNN_FRONTEND_PATCH_VERSION")),
    ), _CUDA_ONLY),
    Probe("cutlass", (
        (_TP + "cutlass/include/cutlass/version.h",
         joined("CUTLASS_MAJOR", "CUTLASS_MINOR", "CUTLASS_PATCH")),
    ), _CUDA_ONLY),
    Probe("nvtx", ((_TP + "NVTX/c/CMakeLists.txt", cmake_project),), _CUDA_ONLY),
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


def _tested(
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


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror}") from None


def vendored(root: Path) -> tuple[list[UpstreamClaim], list[str]]:
    claims, notes = [], []
    for probe in PROBES:
        present = [(rel, extract) for rel, extract in probe.files if (root / rel).is_file()]
        if not present:
            continue
        for rel, extract in present:
            version = extract(_read(root / rel))
            if version:
                claims.append(_tested(probe.package, version, rel, probe.condition, priority=70))
                break
        else:
            notes.append(f"{present[0][0]}: no version found for {probe.package}")
    return claims, notes


# ---------------------------------------------------------------------------------------------
# CI images (.ci/docker)
# ---------------------------------------------------------------------------------------------

_ANY_CUDA = _CUDA_ONLY
_FUNCTION = re.compile(
    r"^\s*(?:function\s+)?install_(?P<major>1\d)(?P<minor>\d)\s*(?:\(\s*\))?\s*\{?\s*$"
)
_CUDA_TEST = re.compile(r"^\s*(?:if|elif)\b.*CUDA_VERSION")
_CUDA_LITERAL = re.compile(r"1\d(?:\\?\.[0-9\[\]\-]+)?")


def cuda_condition(label: str) -> Condition:
    """``12.9``, ``13`` or ``12.[5-9]`` (as upstream's scripts write it) as a Condition."""
    return Condition({"cuda_compiler_version": label.replace(".", r"\.")}, label=f"CUDA {label}")


def _scoped_lines(text: str) -> Iterator[tuple[str | None, str]]:
    """Each line of a shell script with the CUDA series it applies to (``None``: any)."""
    function: str | None = None
    branch: str | None = None
    for line in text.splitlines():
        stripped = line.strip()
        started = _FUNCTION.match(line)
        if started:
            function = f"{started['major']}.{started['minor']}"
            yield function, line
            continue
        if re.match(r"^}\s*$", line):
            function = None
        if _CUDA_TEST.match(line):
            literal = _CUDA_LITERAL.search(line.split("CUDA_VERSION", 1)[1])
            branch = literal.group(0).replace("\\", "") if literal else None
        elif re.match(r"^(?:else\b|fi\b)", stripped):
            branch = None
        yield function or branch, line


def _pin_version(text: str) -> str | None:
    """``v2.27.5-1`` (a git tag) -> ``2.27.5.1``; a commit hash is not a version."""
    value = text.strip()
    if re.fullmatch(r"[0-9a-f]{40}", value):
        return None
    match = re.fullmatch(r"v?(\d+(?:\.\d+)*)(?:-(\d+))?", value)
    if not match:
        return None
    return match[1] + (f".{match[2]}" if match[2] else "")


def ci_images(root: Path) -> tuple[list[UpstreamClaim], list[str]]:
    docker = root / ".ci" / "docker"
    claims: list[UpstreamClaim] = []
    notes: list[str] = []
    if not docker.is_dir():
        return claims, notes
    pins = docker / "ci_commit_pins"
    triton_version = docker / "triton_version.txt"
    if triton_version.is_file() and (version := _pin_version(_read(triton_version))):
        claims.append(
            _tested("triton", version, ".ci/docker/triton_version.txt", _ANY_CUDA, priority=40)
        )
    elif (pins / "triton.txt").is_file():
        text = _read(pins / "triton.txt").strip()
        if version := _pin_version(text):
            claims.append(
                _tested(
                    "triton",
                    version,
                    ".ci/docker/ci_commit_pins/triton.txt",
                    _ANY_CUDA,
                    priority=40,
                )
            )
        else:
            notes.append(
                f".ci/docker/ci_commit_pins/triton.txt pins commit {text[:12]}, not a version"
            )
    for path in sorted(pins.glob("nccl*.txt")) if pins.is_dir() else []:
        flavour = re.fullmatch(r"nccl(?:-cu(\d+))?\.txt", path.name)
        if not flavour:
            continue  # nccl-extensions.txt, nccl-legacy.txt: not what the binaries ship
        version = _pin_version(_read(path))
        if version is None:
            notes.append(
                f".ci/docker/ci_commit_pins/{path.name}: "
                f"{_read(path).strip()[:40]!r} is not a version"
            )
            continue
        condition = cuda_condition(flavour[1]) if flavour[1] else _ANY_CUDA
        claims.append(
            _tested(
                "nccl", version, f".ci/docker/ci_commit_pins/{path.name}", condition, priority=40
            )
        )
    common = docker / "common"
    scripts = {
        "install_cuda.sh": _install_cuda,
        "install_cuda_aarch64.sh": _install_cuda,
        "install_cudnn.sh": _install_cudnn,
        "install_cusparselt.sh": _archive_versions(
            "cusparselt", r"libcusparse_lt-linux-\S*?-(\d+(?:\.\d+)+)-archive"
        ),
        "install_cudss.sh": _archive_versions("cudss", r"libcudss-linux-\S*?-(\d+(?:\.\d+)+)_cuda"),
        "install_magma.sh": _variable("magma", "MAGMA_VERSION", _ANY_CUDA),
        "install_magma_conda.sh": _variable("magma", "MAGMA_VERSION", _ANY_CUDA),
        "install_mkl.sh": _variable(
            "mkl", "MKL_VERSION", Condition({"blas_impl": "mkl"}, label="MKL")
        ),
    }
    for name, reader in scripts.items():
        path = common / name
        if path.is_file():
            claims.extend(reader(_read(path), f".ci/docker/common/{name}"))
    return claims, notes


def _condition_for(series: str | None) -> Condition:
    return cuda_condition(series) if series else _ANY_CUDA


def _install_cuda(text: str, source: str) -> list[UpstreamClaim]:
    claims = []
    for series, line in _scoped_lines(text):
        toolkit = re.match(r"^\s*install_cuda\s+(\d+\.\d+(?:\.\d+)?)\b", line)
        if toolkit and series:
            # cuda-version is a major.minor package; the patch level is in the text.
            version = toolkit[1]
            claims.append(
                UpstreamClaim(
                    package="cuda",
                    spec="==" + ".".join(version.split(".")[:2]),
                    text=version,
                    kind=Kind.TESTED,
                    scope=Scope.HOST,
                    source=source,
                    condition=_condition_for(series),
                    priority=40,
                )
            )
        for package, variable in (("cudnn", "CUDNN_VERSION"), ("nvshmem", "NVSHMEM_VERSION")):
            assigned = re.match(rf"^\s*(?:local\s+)?{variable}=\"?([0-9][0-9.]*)\"?\s*$", line)
            if assigned:
                claims.append(
                    _tested(package, assigned[1], source, _condition_for(series), priority=40)
                )
    return claims


def _install_cudnn(text: str, source: str) -> list[UpstreamClaim]:
    claims = []
    for _, line in _scoped_lines(text):
        archive = re.search(r"cudnn-linux-[^\s\"]*?-(\d+(?:\.\d+)+)_cuda(\d+)-archive", line)
        if archive:
            claims.append(
                _tested("cudnn", archive[1], source, cuda_condition(archive[2]), priority=45)
            )
    return claims


def _archive_versions(package: str, pattern: str) -> Callable[[str, str], list[UpstreamClaim]]:
    def read(text: str, source: str) -> list[UpstreamClaim]:
        claims = []
        for series, line in _scoped_lines(text):
            found = re.search(pattern, line)
            if found:
                claims.append(
                    _tested(package, found[1], source, _condition_for(series), priority=40)
                )
        return claims

    return read


def _variable(
    package: str, variable: str, condition: Condition
) -> Callable[[str, str], list[UpstreamClaim]]:
    def read(text: str, source: str) -> list[UpstreamClaim]:
        found = re.search(rf"(?m)^\s*(?:local\s+)?{variable}=\"?([0-9][0-9.]*)\"?", text)
        return [_tested(package, found[1], source, condition, priority=40)] if found else []

    return read


# ---------------------------------------------------------------------------------------------
# Python requirements
# ---------------------------------------------------------------------------------------------


def _requirement_claims(
    lines: Sequence[str],
    source: str,
    scope: Scope,
    priority: int,
    development: bool = False,
    extra: str | None = None,
) -> list[UpstreamClaim]:
    claims = []
    for text in lines:
        requirement = pep440.parse_requirement(text, source)
        marker = str(requirement.marker) if requirement.marker else None
        claims.append(
            UpstreamClaim(
                package=requirement.name,
                spec=pep440.conda_spec(requirement.specifier),
                text=str(requirement),
                kind=Kind.REQUIREMENT,
                scope=scope,
                source=source,
                condition=Condition(marker=marker, label=marker or ""),
                extra=extra,
                priority=priority,
                development=development,
            )
        )
    return claims


def requirements_file(path: Path, rel: str) -> list[str]:
    """Requirement lines of a pip requirements file (options, includes and comments dropped)."""
    lines = []
    for line in _read(path).splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if line and not line.startswith("-"):
            lines.append(line)
    return lines


def python_requirements(root: Path) -> list[UpstreamClaim]:
    claims: list[UpstreamClaim] = []
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(_read(pyproject))
        except tomllib.TOMLDecodeError as exc:
            raise UserError(f"{pyproject}: invalid TOML: {exc}") from None
        build = data.get("build-system", {}).get("requires", [])
        claims += _requirement_claims(build, "pyproject.toml [build-system]", Scope.HOST, 20)
        project = data.get("project", {})
        claims += _requirement_claims(
            project.get("dependencies", []), "pyproject.toml [project]", Scope.RUN, 15
        )
        for extra, items in project.get("optional-dependencies", {}).items():
            claims += _requirement_claims(
                items,
                f"pyproject.toml [project.optional-dependencies] {extra}",
                Scope.RUN,
                30,
                extra=extra,
            )
        for group, items in data.get("dependency-groups", {}).items():
            strings = [
                item for item in items if isinstance(item, str)
            ]  # skip {include-group = ...}
            claims += _requirement_claims(
                strings,
                f"pyproject.toml [dependency-groups] {group}",
                Scope.RUN,
                45,
                development=True,
            )
    for path in sorted(root.glob("requirements*.txt")):
        lines = requirements_file(path, path.name)
        if path.name == "requirements-build.txt":
            claims += _requirement_claims(lines, path.name, Scope.HOST, 25)
        else:
            claims += _requirement_claims(lines, path.name, Scope.RUN, 40, development=True)
    return claims


# ---------------------------------------------------------------------------------------------


def check_tree(root: Path) -> None:
    if not root.is_dir():
        raise UserError(
            f"{root}: no such directory; pass --source the unpacked PyTorch source tree"
        )
    pyproject = root / "pyproject.toml"
    names_torch = pyproject.is_file() and re.search(r'(?m)^\s*name\s*=\s*"torch"', _read(pyproject))
    if not (names_torch or ((root / "setup.py").is_file() and (root / "torch").is_dir())):
        raise UserError(
            f"{root}: not a PyTorch source tree (no pyproject.toml naming torch, "
            "no setup.py beside torch/); pass --source the unpacked source directory"
        )


def read_tree(root: Path) -> TreeResult:
    check_tree(root)
    claims: list[UpstreamClaim] = []
    notes: list[str] = []
    for found, found_notes in (vendored(root), ci_images(root)):
        claims += found
        notes += found_notes
    claims += python_requirements(root)
    return TreeResult(tuple(claims), tuple(notes))
