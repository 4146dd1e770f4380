"""scikit-build-core's record of a build tree, ``.skbuild-info.json``, retargeted.

Part of recipe/cmake_cache; standard library only. scikit-build-core writes
``<build-dir>/.skbuild-info.json`` on every build, with the directory it runs from
(``skbuild_path``). A build from another installation of scikit-build-core finds a
different path there, takes the tree for another isolated environment's and deletes the
top-level ``CMakeCache.txt`` and ``CMakeFiles/`` (``CMaker.__post_init__`` in
scikit_build_core/cmake.py, 1.1): the configuration, not PyTorch's objects, which live in
per-directory ``CMakeFiles/``. The next configure then starts from an empty cache, decides
every setting anew and regenerates what depends on them, so each pytorch output (whose host
environment has its own scikit-build-core) would rebuild whatever that changes, and the
settings the compile stage made once would be lost. Recording the next interpreter's
scikit-build-core there first keeps the cache.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from cache_file import CacheError, atomic_write
from interpreters import PythonFacts

INFO_NAME = ".skbuild-info.json"


def info_path(cache_path: str | os.PathLike[str]) -> Path:
    """Where scikit-build-core keeps its record of the build tree holding ``cache_path``."""
    return Path(cache_path).parent / INFO_NAME


def load_info(path: Path) -> dict[str, Any] | None:
    """The record at ``path``; None when the tree was not configured by scikit-build-core."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CacheError(f"cannot read: {exc.strerror or exc}", path) from None
    try:
        info = json.loads(raw)
    except ValueError as exc:
        problem = f"not valid JSON ({exc}); scikit-build-core would clear the tree"
        raise CacheError(problem, path) from None
    if not isinstance(info, dict) or not isinstance(info.get("skbuild_path"), str):
        raise CacheError("has no skbuild_path; scikit-build-core would clear the tree", path)
    return info


def retarget_info(info: dict[str, Any], new: PythonFacts, source: Path) -> dict[str, Any]:
    """``info`` as the new interpreter's scikit-build-core would have written it; every
    other field (source_dir, build_dir, cmake_path, the version) stays as it was."""
    if not new.skbuild_path:
        raise CacheError(
            f"the tree was configured by scikit-build-core ({info['skbuild_path']}) but "
            f"{new.executable} cannot import scikit_build_core; add scikit-build-core to "
            "this output's host requirements",
            source,
        )
    return {**info, "skbuild_path": new.skbuild_path, "python_executable": new.executable}


def save_info(path: Path, old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Write ``new`` to ``path`` in scikit-build-core's own format, if it changed."""
    if new == old:
        return False
    try:
        atomic_write(path, json.dumps(new, indent=2).encode("utf-8"), path.stat().st_mode)
    except OSError as exc:
        raise CacheError(f"cannot write: {exc.strerror or exc}", path) from None
    return True
