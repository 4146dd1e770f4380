#!/usr/bin/env python
"""Which build system a PyTorch source tree declares: setup.py or scikit-build-core.

PyTorch built with setuptools through ``setup.py`` up to 2.13; from 2.14 on its
``pyproject.toml`` names scikit-build-core (pytorch/pytorch#180247, #180248) and
``setup.py`` is gone. The recipe's build scripts drive the two differently, and
``python -m tools bump`` reports the backend of a new release, so both ask this one
module. The answer comes from what the source declares (PEP 517's
``[build-system] build-backend``, or a bare ``setup.py``), never from a version number.

Usage (standard library only; runs with the build environment's Python 3.10+)::

    python build_backend.py SOURCE_DIR     # prints "setuptools" or "scikit-build-core"

A tree that declares neither, or a backend this recipe does not build, gets one line
``build_backend.py: error: FILE: what was found`` and exit status 2.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10, still a pytorch output of the 2.13 recipe
    tomllib = None  # type: ignore[assignment]

SETUPTOOLS = "setuptools"
SCIKIT_BUILD_CORE = "scikit-build-core"

# PEP 517 backend objects, by the kind of build the recipe runs for them.
KNOWN_BACKENDS = {
    "setuptools.build_meta": SETUPTOOLS,
    "setuptools.build_meta:__legacy__": SETUPTOOLS,
    "scikit_build_core.build": SCIKIT_BUILD_CORE,
}


class BackendError(Exception):
    """The source declares no backend, or one the recipe cannot build."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(f"{source}: {problem}")


@dataclass(frozen=True)
class BuildBackend:
    kind: str  # SETUPTOOLS or SCIKIT_BUILD_CORE
    declared: str  # the build-backend string, or "setup.py" for a tree without one
    requires: tuple[str, ...]  # [build-system] requires, as written
    source: str  # the file that decided


def _build_system_table(text: str, source: str) -> dict:
    if tomllib is not None:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise BackendError(source, f"not valid TOML ({exc})") from None
        table = data.get("build-system", {})
        return table if isinstance(table, dict) else {}
    return _build_system_table_py310(text)


_TABLE_HEADER = re.compile(r"^\s*\[\s*([^\]]+?)\s*\]\s*(?:#.*)?$")
_STRING_KEY = re.compile(r"""^\s*(build-backend)\s*=\s*(["'])(.*?)\2\s*(?:#.*)?$""")


def _build_system_table_py310(text: str) -> dict:
    # Without tomllib: only the one string this module needs, from the [build-system]
    # table as pyproject.toml files write it (a quoted value on one line). requires is
    # reported as unknown (empty) there; nothing in the build depends on it.
    table: dict = {}
    section = None
    for line in text.splitlines():
        header = _TABLE_HEADER.match(line)
        if header:
            section = header[1]
            continue
        if section == "build-system":
            found = _STRING_KEY.match(line)
            if found:
                table["build-backend"] = found[3]
    return table


def classify(pyproject_text: str | None, has_setup_py: bool, source: str) -> BuildBackend:
    """The backend of a tree, from its pyproject.toml text (None: no such file) and
    whether it has a setup.py. ``source`` names the tree in messages."""
    pyproject = f"{source}/pyproject.toml"
    setup_py = f"{source}/setup.py"
    if pyproject_text is None:
        if has_setup_py:
            return BuildBackend(SETUPTOOLS, "setup.py", (), setup_py)
        raise BackendError(
            source, "has neither pyproject.toml nor setup.py; is this a PyTorch source tree?"
        )
    table = _build_system_table(pyproject_text, pyproject)
    declared = table.get("build-backend")
    requires = tuple(str(r) for r in table.get("requires", ()) if isinstance(r, str))
    if declared is None:
        # PEP 517: without build-backend, a tree is built by setuptools' legacy backend.
        if has_setup_py:
            return BuildBackend(SETUPTOOLS, "setup.py", requires, setup_py)
        raise BackendError(
            pyproject,
            "declares no [build-system] build-backend and the tree has no setup.py; "
            f"the recipe builds {', '.join(sorted(KNOWN_BACKENDS))}",
        )
    if not isinstance(declared, str) or declared not in KNOWN_BACKENDS:
        raise BackendError(
            pyproject,
            f"[build-system] build-backend = {declared!r} is not one the recipe builds "
            f"({', '.join(sorted(KNOWN_BACKENDS))}); teach recipe/build.sh and "
            "recipe/bld.bat the new backend",
        )
    kind = KNOWN_BACKENDS[declared]
    if kind == SETUPTOOLS and not has_setup_py:
        raise BackendError(
            pyproject,
            f"build-backend = {declared!r} but the tree has no setup.py, "
            "which the recipe's setuptools build runs",
        )
    return BuildBackend(kind, declared, requires, pyproject)


def detect(source_dir: str | Path) -> BuildBackend:
    """The backend a source tree on disk declares."""
    root = Path(source_dir)
    if not root.is_dir():
        raise BackendError(str(root), "is not a directory")
    pyproject = root / "pyproject.toml"
    try:
        text = pyproject.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = None
    except (OSError, UnicodeDecodeError) as exc:
        raise BackendError(str(pyproject), f"cannot read: {exc}") from None
    return classify(text, (root / "setup.py").is_file(), str(root))


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: build_backend.py SOURCE_DIR", file=sys.stderr)
        return 2
    try:
        print(detect(args[0]).kind)
    except BackendError as exc:
        print(f"build_backend.py: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
