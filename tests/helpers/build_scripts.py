"""recipe/build.sh as the tests read its text: the dispatcher and every file it sources
(its stages, the shared files and the build backends'). The table of variables it exports,
recipe/build_env.txt, is read by helpers/bld_bat.py's build_env()."""

from __future__ import annotations

import re
from pathlib import Path

RECIPE = Path(__file__).resolve().parents[2] / "recipe"
# How build.sh and its files source one another: `source "${RECIPE_DIR}/name.sh"`.
_SOURCED = re.compile(r'^\s*source "\$\{RECIPE_DIR\}/([\w.-]+\.sh)"', re.M)


def build_sh_files(recipe: Path = RECIPE) -> list[Path]:
    """build.sh, then each file it sources (transitively), once each, in the order met."""
    found: list[Path] = []
    todo = [recipe / "build.sh"]
    while todo:
        path = todo.pop(0)
        if path in found:
            continue
        found.append(path)
        todo += [recipe / name for name in _SOURCED.findall(path.read_text(encoding="utf-8"))]
    return found


def build_sh_text(recipe: Path = RECIPE) -> str:
    """The text of build.sh and every file it sources, one after the other."""
    return "\n".join(path.read_text(encoding="utf-8") for path in build_sh_files(recipe))
