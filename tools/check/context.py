"""The inputs every check receives: the packages, their install views, the config."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from tools.check.archive import TORCH_PACKAGES, Package
from tools.check.expectations import (
    Expectations,
    build_string_python,
    python_minor,
)
from tools.check.tree import Tree

_VARIANT_TOKEN = re.compile(r"^(?:cpu|cuda\d+)$")


def group_key(package: Package) -> tuple[str, ...]:
    """Packages that one config installs together share a key.

    Conda builds of this feedstock start their build string with the variant
    (``cpu_…``, ``cuda129_…``); packages from other feedstocks group alone.
    A prefix is one environment; a wheel stands alone.
    """
    if package.kind == "prefix":
        return ("prefix", str(package.source))
    if package.kind == "wheel":
        return ("wheel", str(package.source))
    token = package.build.split("_", 1)[0]
    if _VARIANT_TOKEN.match(token):
        return ("conda", package.subdir, token)
    return ("conda", package.subdir, package.name, package.build)


def is_torch(package: Package) -> bool:
    return package.name in TORCH_PACKAGES or (package.kind == "wheel" and package.name == "torch")


def package_python(package: Package, expect: Expectations) -> str | None:
    """The Python a package was built for, from the config, its build string or files."""
    output = expect.output_for(package.name, build_string_python(package.build), package.build)
    if output is not None and output.python:
        return output.python
    from_build = build_string_python(package.build)
    if from_build:
        return from_build
    for spec in package.depends:
        if spec.split()[0] == "python_abi" or spec.split()[0] == "python":
            found = python_minor(spec.split()[1] if len(spec.split()) > 1 else "")
            if found:
                return found
    if package.kind == "wheel":
        match = re.search(r"-cp(\d)(\d+)-", package.source.name)
        if match:
            return f"{match.group(1)}.{match.group(2)}"
    for member in package.members:
        match = re.match(r"lib/python(\d+\.\d+)/site-packages/", member.path)
        if match:
            return match.group(1)
    return None


@dataclass
class Context:
    packages: Sequence[Package]
    expect: Expectations = field(default_factory=Expectations)

    def __post_init__(self) -> None:
        self._trees: dict[tuple[str, ...], Tree] = {}

    def analysed(self) -> list[Package]:
        return [p for p in self.packages if p.analysed]

    def tree_for(self, package: Package) -> Tree:
        """Every file the packages of ``package``'s platform (or prefix) could install."""
        if package.kind == "prefix":
            key: tuple[str, ...] = ("prefix", str(package.source))
            members = [
                p for p in self.packages if p.kind == "prefix" and p.source == package.source
            ]
        elif package.kind == "wheel":
            key = ("wheel", str(package.source))
            members = [package]
        else:
            key = ("conda", package.subdir)
            members = [
                p
                for p in self.packages
                if p.kind == "conda" and p.subdir in (package.subdir, "noarch")
            ]
        if key not in self._trees:
            self._trees[key] = Tree(members)
        return self._trees[key]

    def groups(self) -> dict[tuple[str, ...], list[Package]]:
        grouped: dict[tuple[str, ...], list[Package]] = {}
        for package in self.packages:
            grouped.setdefault(group_key(package), []).append(package)
        return grouped
