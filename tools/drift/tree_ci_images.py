"""Upstream claims from the CI images' pins under ``.ci/docker/`` of a PyTorch source tree:
``ci_commit_pins/*.txt``, ``triton_version.txt`` and the ``common/install_*.sh`` scripts
(CUDA, cuDNN, NCCL, magma, MKL, cuDSS, cuSPARSELt), where a value inside ``install_129`` or
under an ``if`` on ``CUDA_VERSION`` applies to that CUDA series only."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

from tools.drift.model import Condition, Kind, Scope, UpstreamClaim
from tools.drift.tree_vendored import CUDA_ONLY, claim_tested
from tools.foundation.files import read_user_file


def _text(path: Path) -> str:
    return read_user_file(path, errors="replace")


_ANY_CUDA = CUDA_ONLY
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
    if triton_version.is_file() and (version := _pin_version(_text(triton_version))):
        claims.append(
            claim_tested("triton", version, ".ci/docker/triton_version.txt", _ANY_CUDA, priority=40)
        )
    elif (pins / "triton.txt").is_file():
        text = _text(pins / "triton.txt").strip()
        if version := _pin_version(text):
            claims.append(
                claim_tested(
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
        version = _pin_version(_text(path))
        if version is None:
            notes.append(
                f".ci/docker/ci_commit_pins/{path.name}: "
                f"{_text(path).strip()[:40]!r} is not a version"
            )
            continue
        condition = cuda_condition(flavour[1]) if flavour[1] else _ANY_CUDA
        claims.append(
            claim_tested(
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
            claims.extend(reader(_text(path), f".ci/docker/common/{name}"))
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
                    claim_tested(package, assigned[1], source, _condition_for(series), priority=40)
                )
    return claims


def _install_cudnn(text: str, source: str) -> list[UpstreamClaim]:
    claims = []
    for _, line in _scoped_lines(text):
        archive = re.search(r"cudnn-linux-[^\s\"]*?-(\d+(?:\.\d+)+)_cuda(\d+)-archive", line)
        if archive:
            claims.append(
                claim_tested("cudnn", archive[1], source, cuda_condition(archive[2]), priority=45)
            )
    return claims


def _archive_versions(package: str, pattern: str) -> Callable[[str, str], list[UpstreamClaim]]:
    def read(text: str, source: str) -> list[UpstreamClaim]:
        claims = []
        for series, line in _scoped_lines(text):
            found = re.search(pattern, line)
            if found:
                claims.append(
                    claim_tested(package, found[1], source, _condition_for(series), priority=40)
                )
        return claims

    return read


def _variable(
    package: str, variable: str, condition: Condition
) -> Callable[[str, str], list[UpstreamClaim]]:
    def read(text: str, source: str) -> list[UpstreamClaim]:
        found = re.search(rf"(?m)^\s*(?:local\s+)?{variable}=\"?([0-9][0-9.]*)\"?", text)
        return [claim_tested(package, found[1], source, condition, priority=40)] if found else []

    return read
