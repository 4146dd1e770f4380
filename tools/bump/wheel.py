"""What the release's wheel says about the recipe: the Pythons it supports
(``Requires-Python``), the CUDA release it was built with (``cuda-toolkit[...]==X`` or
``nvidia-cuda-runtime``), the commit it was built from (``torch/version.py``'s
``git_version``, which the recipes record), and the pins that moved (drift's comparison,
reused)."""

from __future__ import annotations

import ast
import re
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.metadata import Metadata
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from tools.drift.upstream_wheel import WheelCuda, read_metadata, wheel_cuda
from tools.foundation.errors import UserError
from tools.foundation.files import safe_yaml
from tools.recipe.namespace import python_series


@dataclass(frozen=True)
class WheelFacts:
    path: Path
    version: str
    requires_python: str | None
    cuda: WheelCuda | None
    git_version: str  # the release's commit


def read(path: Path, version: str) -> WheelFacts:
    """The wheel's facts; a wheel of another release than ``version`` is bad input."""
    text = read_metadata(path)
    try:
        metadata = Metadata.from_email(text, validate=False)
        requirements = list(metadata.requires_dist or [])
        wheel_version = str(metadata.version or "")
        requires_python = str(metadata.requires_python) if metadata.requires_python else None
    except Exception as exc:  # InvalidMetadata, or an ExceptionGroup of them
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise UserError(f"{path}: invalid METADATA: {first}") from None
    if wheel_version.split("+")[0] != version:
        raise UserError(
            f"--wheel {path}: the wheel is torch {wheel_version}, not {version}; "
            "pass the wheel of the release you bump to"
        )
    return WheelFacts(
        path, wheel_version, requires_python, wheel_cuda(requirements), release_commit(path)
    )


#: The module upstream's tools/generate_torch_version.py writes into every wheel.
VERSION_MODULE = "torch/version.py"


def release_commit(path: Path) -> str:
    """``torch.version.git_version`` as the wheel records it: the commit PyTorch built the
    release from (its tag's; a build without .git says "Unknown", which is refused)."""
    with zipfile.ZipFile(path) as archive:
        try:
            text = archive.read(VERSION_MODULE).decode("utf-8")
        except KeyError:
            raise UserError(
                f"--wheel {path}: the wheel has no {VERSION_MODULE}; pass PyTorch's release "
                "wheel (pip download torch==VERSION --no-deps)"
            ) from None
    values = [v for v in _assigned(text, "git_version") if isinstance(v, str)]
    if len(values) != 1 or not re.fullmatch(r"[0-9a-f]{40}", values[0]):
        found = repr(values[0]) if len(values) == 1 else "no one git_version string"
        raise UserError(
            f"--wheel {path}: {VERSION_MODULE} has {found}, not a commit; pass PyTorch's release "
            "wheel, built from the release's checkout (pip download torch==VERSION --no-deps)"
        )
    return values[0]


def _assigned(module: str, name: str) -> list[object]:
    """The constants the module's top level assigns to ``name`` (``git_version = '...'``)."""
    values = []
    for node in ast.parse(module).body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        named = any(isinstance(t, ast.Name) and t.id == name for t in targets)
        if named and isinstance(node.value, ast.Constant):
            values.append(node.value.value)
    return values


def recipe_pythons(ci_support: Path) -> tuple[str, ...]:
    """The Python series the CI configs list (``3.10`` ...), oldest first."""
    found: set[str] = set()
    for path in sorted(ci_support.glob("*.yaml")):
        data = safe_yaml(path.read_text(encoding="utf-8")) or {}
        for value in data.get("python", []) or []:
            found.add(python_series(str(value).split()[0]))
    return tuple(sorted(found, key=_key))


def _key(series: str) -> Version:
    try:
        return Version(series.rstrip(".*"))
    except InvalidVersion:
        return Version("0")


@dataclass(frozen=True)
class PythonRange:
    floor: str | None  # the oldest Python kept, when older ones are dropped (the skip)
    dropped: tuple[str, ...]  # below the floor: skipped by the bump
    rejected_above: tuple[str, ...]  # rejected for an upper bound: a person decides
    # The wheel and the CI configs both told: the skip is written (added, moved or removed).
    # Without either, the recipes' skip is left as it is.
    known: bool = True


UNKNOWN_RANGE = PythonRange(None, (), (), known=False)


def python_range(requires_python: str | None, pythons: Iterable[str]) -> PythonRange:
    pythons = sorted(pythons, key=_key)
    if not requires_python or not pythons:
        return UNKNOWN_RANGE
    try:
        spec = SpecifierSet(requires_python)
    except InvalidSpecifier:
        raise UserError(
            f"Requires-Python {requires_python!r} is not a valid specifier; fix the source's "
            "pyproject.toml or pass the archive of a released version"
        ) from None
    admitted = [p for p in pythons if spec.contains(f"{p}.0", prereleases=True)]
    if not admitted:  # a person decides what a feedstock without a Python builds
        return PythonRange(None, (), tuple(pythons), known=False)
    lowest = _key(admitted[0])
    dropped = tuple(p for p in pythons if p not in admitted and _key(p) < lowest)
    above = tuple(p for p in pythons if p not in admitted and _key(p) > lowest)
    return PythonRange(admitted[0] if dropped else None, dropped, above)


def cuda_majors(ci_support: Path) -> tuple[str, ...]:
    """The CUDA versions the CI configs build (``12.9``, ``13.0``)."""
    found: set[str] = set()
    for path in sorted(ci_support.glob("*.yaml")):
        data = safe_yaml(path.read_text(encoding="utf-8")) or {}
        for value in data.get("cuda_compiler_version", []) or []:
            if str(value) != "None":
                found.add(str(value))
    return tuple(sorted(found, key=_key))


def moved_pins(rows: Sequence) -> list[str]:
    """drift's rows that are not ok, as checklist lines."""
    from tools.drift import present
    from tools.drift.model import Status

    lines = []
    for row in rows:
        # Python and the CUDA release have their own lines in the bump's report.
        if row.status in (Status.OK, Status.UNKNOWN) or row.upstream.package in ("python", "cuda"):
            continue
        lines.append(
            f"{row.package}: upstream {present.upstream_cell(row.upstream)}, recipe "
            f"{present.recipe_cell(row, '; ')}: {row.status.value} ({row.reason})"
        )
    return lines
