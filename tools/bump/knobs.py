"""The settings the new source's CMake takes that no build script names: the options
its top-level CMakeLists.txt declares, and the environment variables a configure reads.

A configure reads the environment two ways. Any CMake file can read ``$ENV{NAME}`` (or test
``ENV{NAME}``). And since 2.14, ``cmake/EnvVarForwarding.cmake`` copies variables into the
cache on every configure: those it lists by name (FLASH_ATTENTION_MAX_JOBS, BLAS, ...) and
every one whose name starts with a forwarded prefix (``BUILD_``, ``USE_``, ``CMAKE_``, read
from the pattern it matches names with), which makes each option so named, wherever it is
declared, a knob of the environment."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from tools.bump.source import cmake_code, project_cmake
from tools.foundation.files import read_user_file
from tools.foundation.repo import PACKAGE_ROOT, recipe_script

FORWARDING = "cmake/EnvVarForwarding.cmake"
TOP_LEVEL = "CMakeLists.txt"

OPTION = re.compile(r"^\s*(?:cmake_dependent_)?option\(\s*(?P<name>[A-Z][A-Z0-9_]*)", re.M)
_ENV = re.compile(r"\bENV\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)\}")
# The forwarded prefixes, as the name pattern spells them: ^(BUILD_|USE_|CMAKE_)
_PREFIXES = re.compile(r"\^\((?P<alts>[A-Z][A-Z0-9]*_(?:\|[A-Z][A-Z0-9]*_)*)\)")

# Read by a configure, yet no build setting: the shell's own variables.
NOT_KNOBS = frozenset({"HOME", "PATH", "PWD", "TEMP", "TMP", "TMPDIR", "USER"})
# The recipe's files that name the build's settings: both build scripts, the files build.sh
# sources (build_*.sh) and bld.bat calls (bld_*.bat), the table of the variables both set
# (build_env.txt), and the cmake_cache helper (a directory of modules).
BUILD_SCRIPTS = (
    "build.sh",
    "build_*.sh",
    "build_env.txt",
    "bld.bat",
    "bld_*.bat",
    "cmake_cache/*.py",
)


def build_scripts(recipe_dir: Path) -> list[Path]:
    """The files of ``recipe_dir`` that BUILD_SCRIPTS names."""
    return sorted({path for pattern in BUILD_SCRIPTS for path in recipe_dir.glob(pattern)})


def new_options(tree: Path, scripts: Sequence[Path]) -> list[str]:
    """Options the source's top-level CMakeLists.txt declares that no build script names."""
    path = tree / TOP_LEVEL
    if not path.is_file():
        return []
    declared = OPTION.finditer(cmake_code(read_user_file(path, errors="replace")))
    return unnamed(dict.fromkeys(m["name"] for m in declared), scripts)


def unnamed(names: Iterable[str], scripts: Sequence[Path]) -> list[str]:
    """``names`` that no build script mentions (setting, unsetting or explaining it)."""
    text = "\n".join(p.read_text("utf-8") for p in scripts if p.is_file())
    return [name for name in names if not re.search(rf"\b{re.escape(name)}\b", text)]


def forwarding(
    text: str, recipe_dir: Path = PACKAGE_ROOT / "recipe"
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(prefixes, names)`` that a forwarding file copies from the environment, as the
    recipe's stage_environment.py reads it (the names of the lists it loops over; the
    prefixes its selecting expression spells ``^(BUILD_|USE_|CMAKE_)``)."""
    reader = recipe_script(recipe_dir, "stage_environment.py", "the recipe's forwarding reader")
    expression, names = reader.read_forwarding(text)
    found = _PREFIXES.finditer(expression or "")
    prefixes = tuple(alt for match in found for alt in match["alts"].split("|"))
    return tuple(dict.fromkeys(prefixes)), tuple(dict.fromkeys(names))


def environment(recipe_dir: Path, tree: Path, files: Iterable[str]) -> dict[str, str]:
    """{name: the first file that reads it} for every environment variable the source's own
    CMake reads at configure time.  ``*Config.cmake.in`` files are left out: a consumer's
    configure reads those (TORCH_INSTALL_PREFIX), not the build's."""
    texts = {
        rel: cmake_code(read_user_file(tree / rel, errors="replace"))
        for rel in sorted(files)
        if project_cmake(rel) and (tree / rel).is_file()
    }
    found: dict[str, str] = {}
    for rel, text in texts.items():
        if rel.endswith("Config.cmake.in"):
            continue
        for match in _ENV.finditer(text):
            found.setdefault(match["name"], rel)
    if FORWARDING in texts:
        prefixes, listed = forwarding(texts[FORWARDING], recipe_dir)
        for name in listed:
            found.setdefault(name, FORWARDING)
        # Options of the top-level CMakeLists.txt have their own checklist line.
        for rel, text in texts.items():
            if rel == TOP_LEVEL:
                continue
            for match in OPTION.finditer(text):
                if match["name"].startswith(prefixes):
                    found.setdefault(match["name"], f"option in {rel}, forwarded by prefix")
    return {name: rel for name, rel in found.items() if name not in NOT_KNOBS}
