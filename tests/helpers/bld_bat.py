"""recipe/bld.bat and the batch files it runs, as text: what the static tests read.

bld.bat is the one script every Windows output names; it runs recipe/bld_common.bat, which
runs the stage's own file (``cmd /d /s /c ""!RECIPE_DIR!\\FILE""``). ``build_files()`` follows
those hand-overs from bld.bat, so a test over them covers every file a build runs.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipe"
DISPATCHER = RECIPE / "bld.bat"
#: NAME=VALUE lines both build.sh and bld.bat (bld_common.bat) set.
BUILD_ENV = RECIPE / "build_env.txt"
RUN_WIN_BUILD = ROOT / ".scripts" / "run_win_build.bat"
#: A batch file run in a second cmd: ``cmd /d /s /c ""!RECIPE_DIR!\\NAME"...``.
HAND_OVER = re.compile(r'^cmd /d /s /c ""!RECIPE_DIR!\\([\w.!]+)"')
STAGE_FILE = re.compile(r'^if "%STAGE%"=="([^"]+)" set "STAGE_FILE=([\w.]+)"$')


def code(text: str) -> list[str]:
    """The stripped lines of a batch text that are neither empty nor a ``rem``."""
    return [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.lstrip().lower().startswith(("rem", "@rem"))
    ]


def text(name: str) -> str:
    return (RECIPE / name).read_text()


def stage_files() -> dict[str, str]:
    """{stage name: file} as bld.bat's dispatch picks them."""
    found = (STAGE_FILE.match(line) for line in code(DISPATCHER.read_text()))
    return {match.group(1): match.group(2) for match in found if match}


def build_files() -> list[str]:
    """bld.bat and every file it runs, directly or through another, in the order met."""
    found = ["bld.bat"]
    for name in found:
        for line in code(text(name)):
            match = HAND_OVER.match(line)
            if not match:
                continue
            named = match.group(1)
            targets = stage_files().values() if named == "!STAGE_FILE!" else [named]
            found += [target for target in targets if target not in found]
    return found


def recipe_bat_files() -> list[Path]:
    """Every batch file in recipe/: the build's and the activation templates."""
    return sorted(RECIPE.glob("*.bat"))


def all_text() -> str:
    """The build's batch code, each file's text in build_files() order."""
    return "\n".join(text(name) for name in build_files())


def section(source: str, label: str) -> str:
    """The lines from ``:label`` up to the next label of ``source``."""
    start = source.index(f"\n:{label}\n")
    end = source.find("\n:", start + 1)
    return source[start : end if end != -1 else len(source)]


def build_env() -> dict[str, str]:
    """build_env.txt's NAME=VALUE lines (``#`` lines and empty ones skipped)."""
    lines = BUILD_ENV.read_text().splitlines()
    pairs = [line.split("=", 1) for line in lines if line.strip() and not line.startswith("#")]
    return dict(pairs)
