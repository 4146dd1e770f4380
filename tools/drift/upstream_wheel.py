"""Upstream claims from a PyTorch wheel's ``*.dist-info/METADATA`` (``Requires-Dist``)."""

from __future__ import annotations

import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.metadata import Metadata
from packaging.requirements import Requirement

from tools.drift import pep440
from tools.drift.model import Condition, Kind, Scope, UpstreamClaim
from tools.drift.names import canonical
from tools.foundation.errors import UserError

# The local version names the build flavour: ``2.13.0+cpu``, ``2.13.0+cu129``.
_CUDA_LOCAL = re.compile(r"cu(?P<major>\d+?)(?P<minor>\d)")
# Requirements only a CUDA flavour has; every other requirement is the same in every flavour
# and is compared with every configuration.
_FLAVOUR_SPECIFIC = re.compile(r"(nvidia-|cuda-|triton$|pytorch-triton)")
_CUDA_RUNTIME = re.compile(r"nvidia-cuda-runtime(?:-cu\d+)?")
_CUDA_TOOLKIT = "cuda-toolkit"


def read_metadata(path: Path) -> str:
    """The METADATA text of the wheel at ``path``."""
    if not path.is_file():
        raise UserError(f"{path}: no such wheel file")
    try:
        with zipfile.ZipFile(path) as archive:
            names = [n for n in archive.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
            if len(names) != 1:
                raise UserError(
                    f"{path}: expected one *.dist-info/METADATA in the wheel, found {len(names)}"
                )
            return archive.read(names[0]).decode("utf-8")
    except zipfile.BadZipFile as exc:
        raise UserError(
            f"{path}: not a wheel (unreadable zip archive: {exc}); download it again"
        ) from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: METADATA is not UTF-8 text") from None


def flavour_condition(version: str, requirements: Sequence[Requirement] = ()) -> Condition:
    """The configurations a wheel's CUDA-specific requirements speak for: the local version
    label (``+cu129``), else the CUDA runtime the wheel requires (PyPI's default wheels carry
    no label), else any CUDA configuration when it requires NVIDIA wheels at all."""
    local = version.partition("+")[2].lower()
    if local == "cpu":
        return Condition({"cuda_compiler_version": "None"}, label="CPU")
    cuda = _CUDA_LOCAL.fullmatch(local)
    if cuda:
        series = f"{cuda['major']}.{cuda['minor']}"
        return Condition({"cuda_compiler_version": re.escape(series)}, label=f"CUDA {series}")
    cuda = wheel_cuda(requirements)
    if cuda is not None and cuda.from_toolkit:
        # NVIDIA's cuda-toolkit metapackage names a whole CUDA release; conda-forge builds one
        # release per major (13.0) and CUDA keeps minor-version compatibility within a major,
        # so the wheel speaks for the configurations of its major only.
        return Condition({"cuda_compiler_version": cuda.major}, label=f"CUDA {cuda.major}")
    if cuda is not None:
        series = ".".join(cuda.version.split(".")[:2])
        return Condition({"cuda_compiler_version": re.escape(series)}, label=f"CUDA {series}")
    if any(canonical(r.name).startswith("nvidia-") for r in requirements):
        return Condition({"cuda_compiler_version": r"\d+"}, label="CUDA")
    return Condition()


@dataclass(frozen=True)
class WheelCuda:
    """The CUDA release a wheel requires, and the requirement that says so."""

    version: str  # 13.2.2
    text: str  # the requirement, as the wheel writes it
    from_toolkit: bool  # cuda-toolkit[...]==X (2.14 and later) rather than nvidia-cuda-runtime

    @property
    def major(self) -> str:
        return self.version.split(".")[0]


def wheel_cuda(requirements: Sequence[Requirement]) -> WheelCuda | None:
    """The CUDA version pinned by ``cuda-toolkit[...]==X`` (PyTorch >= 2.14) or by
    ``nvidia-cuda-runtime[-cuNN]==X`` (earlier wheels); ``None`` for a CPU wheel."""
    for requirement in requirements:
        pinned = [s.version for s in requirement.specifier if s.operator == "=="]
        name = canonical(requirement.name)
        if pinned and (name == _CUDA_TOOLKIT or _CUDA_RUNTIME.fullmatch(name)):
            return WheelCuda(pinned[0], str(requirement), name == _CUDA_TOOLKIT)
    return None


def claims_from_metadata(text: str, where: str) -> tuple[UpstreamClaim, ...]:
    try:
        metadata = Metadata.from_email(text, validate=False)
        requirements = metadata.requires_dist or []
        extras = [str(e) for e in (metadata.provides_extra or [])]
        version = str(metadata.version) if metadata.version else ""
        name = str(metadata.name) if metadata.name else ""
        requires_python = metadata.requires_python
    except Exception as exc:  # InvalidMetadata or an ExceptionGroup of them
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"{where}: invalid METADATA: {message}") from None
    if not name:
        raise UserError(f"{where}: METADATA has no Name; is this a wheel?")
    flavour = flavour_condition(version, requirements)
    source = f"{name}-{version} wheel METADATA"
    claims = []
    for requirement in requirements:
        marker = str(requirement.marker) if requirement.marker else None
        extra = pep440.extra_of(marker, extras)
        scoped = flavour if _FLAVOUR_SPECIFIC.match(canonical(requirement.name)) else Condition()
        shown = pep440.without_extra(marker)
        condition = Condition(
            scoped.variant,
            marker=shown,
            label=" ".join(x for x in (scoped.label, shown or "") if x),
        )
        claims.append(
            UpstreamClaim(
                package=requirement.name,
                spec=pep440.conda_spec(requirement.specifier),
                text=str(requirement),
                kind=Kind.REQUIREMENT,
                scope=Scope.RUN,
                source=source,
                condition=condition,
                extra=extra,
                priority=10,
            )
        )
    claims += _release_claims(requirements, requires_python, flavour, source)
    return tuple(claims)


def _release_claims(
    requirements: Sequence[Requirement],
    requires_python: object,
    flavour: Condition,
    source: str,
) -> list[UpstreamClaim]:
    """What the wheel says beyond Requires-Dist: the Pythons it supports (a row for Python
    itself) and the CUDA release it was built with, compared with the recipe's cuda-version."""
    claims = []
    if requires_python is not None and str(requires_python):
        claims.append(
            UpstreamClaim(
                package="python",
                spec=pep440.conda_spec(requires_python),
                text=f"Requires-Python: {requires_python}",
                kind=Kind.REQUIREMENT,
                scope=Scope.RUN,
                source=source,
                priority=10,
            )
        )
    cuda = wheel_cuda(requirements)
    if cuda is not None:
        requirement = Requirement(cuda.text)
        marker = str(requirement.marker) if requirement.marker else None
        claims.append(
            UpstreamClaim(
                package="cuda",
                spec=f"=={cuda.version}",
                text=f"{requirement.name}=={cuda.version}",
                kind=Kind.TESTED,
                scope=Scope.HOST,
                source=source,
                condition=Condition(
                    flavour.variant,
                    marker=marker,
                    label=" ".join(x for x in (flavour.label, marker or "") if x),
                ),
                priority=10,
            )
        )
    return claims


def metadata_version(text: str) -> str:
    """The ``Version:`` of a METADATA text (``2.13.0+cpu``); empty when it has none."""
    try:
        version = Metadata.from_email(text, validate=False).version
    except Exception:  # claims_from_metadata reports invalid METADATA with its reason
        return ""
    return str(version) if version else ""


def read_wheel(path: Path) -> tuple[UpstreamClaim, ...]:
    return claims_from_metadata(read_metadata(path), str(path))
