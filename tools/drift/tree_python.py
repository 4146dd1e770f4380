"""Upstream claims from a PyTorch source tree's Python requirements: ``pyproject.toml``
(build-system, project dependencies and extras, dependency groups) and the top-level
``requirements*.txt``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from tools.drift import pep440
from tools.drift.model import Condition, Kind, Scope, UpstreamClaim
from tools.foundation.errors import UserError
from tools.foundation.files import read_user_file

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]


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
    for line in read_user_file(path, errors="replace").splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if line and not line.startswith("-"):
            lines.append(line)
    return lines


def python_requirements(root: Path) -> list[UpstreamClaim]:
    claims: list[UpstreamClaim] = []
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(read_user_file(pyproject, errors="replace"))
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
