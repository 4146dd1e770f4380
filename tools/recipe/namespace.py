"""The names selectors and jinja see for one platform and one variant (conda-build's
``get_selectors``): platform booleans, ``py``, ``build_platform``/``target_platform``,
``os``/``environ``, the environment, and every variant key with int/bool coercion."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from tools.recipe.errors import RecipeError
from tools.recipe.selectors import OsSubset

# The subdirs conda knows; every OS and architecture in them becomes a selector name.
KNOWN_SUBDIRS = (
    "emscripten-wasm32",
    "wasi-wasm32",
    "freebsd-64",
    "linux-32",
    "linux-64",
    "linux-aarch64",
    "linux-armv6l",
    "linux-armv7l",
    "linux-ppc64",
    "linux-ppc64le",
    "linux-riscv64",
    "linux-s390x",
    "osx-64",
    "osx-arm64",
    "win-32",
    "win-64",
    "win-arm64",
    "zos-z",
)
_ARCH_NAMES = {"32": "x86", "64": "x86_64"}

# conda-build falls back to these when a variant lacks python/numpy/perl/lua.
DEFAULT_PYTHON = "3.11"
DEFAULT_NUMPY = "1.26"


def python_series(version: str) -> str:
    """The major.minor of a Python variant value: ``"3.12.* *_cpython"`` -> ``"3.12"``."""
    return ".".join(version.split(" ")[0].split(".")[:2])


def free_threaded(version: str) -> bool:
    """Whether a Python variant value names a free-threaded build: ``"3.14.* *_cp314t"``
    (conda-forge's python314t migration) is, ``"3.14.* *_cp314"`` is not."""
    parts = version.split(" ")
    return len(parts) > 1 and re.search(r"_cp\d+t$", parts[1]) is not None


def python_label(version: str) -> str:
    """The Python a variant value names, its ABI included: ``3.14t`` for a free-threaded
    build, ``3.14`` for the one with the GIL (``"3.14.* *_cp314t"`` -> ``"3.14t"``)."""
    return python_series(version) + ("t" if free_threaded(version) else "")


def python_int(version: str) -> int:
    """``"3.12.* *_cpython"`` -> 312, ``"3"`` -> 3, as conda-build's ``py`` selector name."""
    try:
        return int("".join(python_series(version).split(".")))
    except ValueError:
        raise RecipeError(
            "variant", f"python {version!r} is not a Python version; give it as 3.12"
        ) from None


def platform_names(subdir: str) -> dict[str, bool]:
    names: dict[str, bool] = {
        "linux32": subdir == "linux-32",
        "linux64": subdir == "linux-64",
        "arm": subdir.startswith("linux-arm"),
        "unix": subdir.startswith(("linux-", "osx-", "emscripten-")),
        "win32": subdir == "win-32",
        "win64": subdir == "win-64",
    }
    subdirs = (*KNOWN_SUBDIRS, subdir)
    for os_name in {s.split("-")[0] for s in subdirs}:
        names[os_name] = subdir.startswith(f"{os_name}-")
    for arch in {s.split("-")[1] for s in subdirs}:
        names[_ARCH_NAMES.get(arch, arch)] = subdir.endswith(f"-{arch}")
    names["x86"] = subdir.endswith(("-32", "-64"))
    return names


def selector_namespace(
    subdir: str,
    variant: Mapping[str, Any],
    *,
    build_subdir: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Names for selectors and jinja when rendering for ``subdir`` with ``variant``."""
    env = dict(environ or {})
    names: dict[str, Any] = dict(platform_names(subdir))
    os_subset = OsSubset(env)
    names["os"] = os_subset
    names["environ"] = os_subset.environ
    names["nomkl"] = bool(int(env.get("FEATURE_NOMKL", 0) or 0))
    names["build_platform"] = build_subdir or subdir
    python = variant.get("python", DEFAULT_PYTHON)
    if not isinstance(python, str):
        python = python[0]
    py = python_int(python)
    major = str(py)[0]
    names.update(
        py=py,
        py3k=major == "3",
        py2k=major == "2",
        **{f"py{v}": py == v for v in (26, 27, 33, 34, 35, 36)},
    )
    numpy = variant.get("numpy") or DEFAULT_NUMPY
    names["np"] = int("".join(str(numpy).split(".")[:2]))
    names["pl"] = variant.get("perl", "5.26.2")
    lua = variant.get("lua", "5")
    names["lua"] = lua
    names["luajit"] = str(lua)[:1] == "2"
    names.update(env)
    for key, value in variant.items():
        if key in names:
            continue
        try:
            names[key] = int(value)
        except (TypeError, ValueError):
            if isinstance(value, str) and value.lower() in ("true", "false"):
                value = value.lower() == "true"
            names[key] = value
    return names


def known_names(subdir: str, variants: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """What a selector may read when rendering for ``subdir``, the environment aside:
    conda-build's own names (platforms, ``py``, ``np``, ``os``, ...), the functions a selector
    may call, and every key of ``variants``."""
    from tools.recipe.selectors import FUNCTIONS

    names = set(selector_namespace(subdir, {})) | set(FUNCTIONS)
    for variant in variants:
        names.update(variant)
    return frozenset(names)
