"""recipe/build.sh and the table of variables it shares with bld.bat (recipe/build_env.txt):
build.sh exports every line of it before it configures, reads it as bld.bat does (nothing
expanded, CRLF line ends taken), and stops at a line bld.bat would read otherwise, naming the
file and line. Sourced, without building: fast."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from helpers.bld_bat import build_env
from helpers.build_scripts import build_sh_files, build_sh_text
from helpers.minitorch.support import RECIPE_DIR, clean_env


def _export_table(tmp_path: Path, table: bytes | None = None) -> subprocess.CompletedProcess[str]:
    """export_build_env run from a copy of build.sh's files, with ``table`` as its
    build_env.txt (the recipe's own when None), then the environment it leaves."""
    recipe = tmp_path / "recipe"
    recipe.mkdir()
    for path in build_sh_files():
        shutil.copy(path, recipe / path.name)
    (recipe / "build_env.txt").write_bytes(
        (RECIPE_DIR / "build_env.txt").read_bytes() if table is None else table
    )
    env = clean_env(
        CF_TORCH_BUILD_STAGE="compile",
        PKG_VERSION="0",
        SRC_DIR=str(tmp_path / "src"),
        PREFIX=str(tmp_path / "prefix"),
        RECIPE_DIR=str(recipe),
        PYTHON=sys.executable,
        target_platform="linux-64",
    )
    return subprocess.run(
        ["bash", "-c", f'source "{recipe / "build.sh"}" && export_build_env && env'],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def _exported(result: subprocess.CompletedProcess[str]) -> dict[str, str]:
    return dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)


def test_every_line_of_the_table_is_exported(tmp_path: Path) -> None:
    table = build_env()
    assert "USE_SYSTEM_PYBIND11" in table and "CMAKE_GENERATOR" in table
    result = _export_table(tmp_path)
    assert result.returncode == 0, result.stderr
    exported = _exported(result)
    assert {name: exported.get(name) for name in table} == table


def test_a_table_with_crlf_line_ends_exports_the_same_values(tmp_path: Path) -> None:
    crlf = (RECIPE_DIR / "build_env.txt").read_bytes().replace(b"\n", b"\r\n")
    result = _export_table(tmp_path, crlf)
    assert result.returncode == 0, result.stderr
    exported = _exported(result)
    assert {name: exported.get(name) for name in build_env()} == build_env()


def test_a_line_that_is_not_name_value_stops_naming_the_file_and_line(tmp_path: Path) -> None:
    result = _export_table(tmp_path, b"# comment\nCMAKE_GENERATOR=Ninja\nUSE_X 1\n")
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("build.sh: error: ") and "build_env.txt:3: 'USE_X 1'" in line


def test_a_value_bld_bat_would_expand_stops_naming_the_file_and_line(tmp_path: Path) -> None:
    result = _export_table(tmp_path, b"CMAKE_PREFIX_PATH=$PREFIX\n")
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert "build_env.txt:1: the value of CMAKE_PREFIX_PATH" in line


def test_no_file_of_build_sh_sets_a_table_variable_itself() -> None:
    # One place for each value: the table. A script line setting one would be a second.
    text = build_sh_text()
    again = [name for name in build_env() if re.search(rf"^\s*(export\s+)?{name}=", text, re.M)]
    assert again == []
