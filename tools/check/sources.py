"""What each command-line PATH of ``tools check`` is (a package, a folder of them, a
wheel, an installed prefix), and reading them all with tools/check/archive.py's readers."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from tools.check.archive import (
    PACKAGE_SUFFIXES,
    Package,
    SourceKind,
    read_conda,
    read_prefix,
    read_wheel,
)
from tools.foundation.errors import UserError

# A channel's platform folder: noarch, linux-64, osx-arm64, win-64, emscripten-wasm32 ...
_SUBDIR = re.compile(
    r"^(?:noarch|[a-z]+-(?:64|32|aarch64|arm64|armv[67]l|ppc64le|ppc64|s390x|riscv64|wasm32))$"
)

_NEVER_PACKAGES = frozenset({"pkg_cache", "src_cache", "git_cache", "work", "info", "old-logs"})


def packages_under(directory: Path) -> list[Path]:
    """The packages in ``directory`` and, at any depth, in its channel subdirectories.

    ``build_artifacts/`` holds the built packages in ``<subdir>/`` and, beside them,
    conda-build's ``pkg_cache/`` of downloaded dependencies and work folders: only
    packages directly in the given folder or in a folder named like a subdir count.
    """
    found = []
    for root, dirs, files in os.walk(directory):
        # Caches, work trees and environments can hold 100k files and never our packages.
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in _NEVER_PACKAGES
            and not d.startswith(("_", "."))
            and not (Path(root, d) / "conda-meta").is_dir()
        )
        here = Path(root)
        if here != directory and not _SUBDIR.match(here.name):
            continue
        found.extend(here / name for name in sorted(files) if name.endswith(PACKAGE_SUFFIXES))
    return found


def discover(paths: Iterable[Path]) -> Iterator[tuple[SourceKind, Path]]:
    """What each command-line PATH is; directories expand to the packages they hold."""
    for path in paths:
        if not path.exists():
            raise UserError(f"{path}: no such file or directory")
        if path.is_dir():
            if (path / "conda-meta").is_dir():
                yield "prefix", path
                continue
            found = packages_under(path)
            if not found:
                raise UserError(
                    f"{path}: holds no .conda or .tar.bz2 packages (searched it and its channel "
                    "subdirectories such as linux-64/) and is not a conda prefix"
                )
            for package in found:
                yield "conda", package
        elif path.name.endswith(PACKAGE_SUFFIXES):
            yield "conda", path
        elif path.name.endswith(".whl"):
            yield "wheel", path
        else:
            raise UserError(
                f"{path}: not a .conda, .tar.bz2 or .whl file; "
                "pass packages, a directory of them, or a prefix"
            )


def read_all(paths: Iterable[Path], workdir: Path) -> list[Package]:
    packages: list[Package] = []
    for kind, path in discover(paths):
        if kind == "conda":
            packages.append(read_conda(path, workdir))
        elif kind == "wheel":
            packages.append(read_wheel(path, workdir))
        else:
            packages.extend(read_prefix(path, workdir))
    return packages
