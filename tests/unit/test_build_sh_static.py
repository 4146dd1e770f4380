"""recipe/build.sh and recipe/bld.bat as conda-build reads them: text it scans.

conda-build decides which variant keys an output uses partly by scanning its build
script for `$key`/`${key}` (shell) and `%key%` (batch). A key only one output varies
by, spelt that way in the shared script, would make every output vary by it and split
the CI jobs; the scripts get those values through script_env instead.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import bld_bat
from helpers.build_scripts import build_sh_text

from tools.recipe.text import used_in_shell_script

RECIPE = Path(__file__).resolve().parents[2] / "recipe"
# Keys the recipe hands over through script_env or PYTHON/PY_VER instead.
OUTPUT_ONLY_KEYS = ("python", "cuda_linalg_flavor")


@pytest.mark.parametrize("key", OUTPUT_ONLY_KEYS)
def test_build_sh_never_expands_an_output_only_variant_key(key: str) -> None:
    # Stricter than conda-build's scan, which looks only at the first `$` of a line.
    text = build_sh_text()
    assert not re.search(rf"\$\{{?\s*{key}\b", text)


@pytest.mark.parametrize("key", OUTPUT_ONLY_KEYS)
def test_bld_bat_never_expands_an_output_only_variant_key(key: str) -> None:
    # In the files bld.bat runs too, which conda-build does not scan.
    assert not re.search(rf"[%!]{key}[%!:]", bld_bat.all_text())


def test_bld_bat_drops_stale_bytecode_before_installing_torch() -> None:
    # No Windows runner here: the behaviour is proven for build.sh on the miniature
    # (test_build_sh.py); bld.bat is held to the same step textually.
    pytorch = bld_bat.text("bld_pytorch.bat")
    assert "(__pycache__) do @if exist" in pytorch
    assert pytorch.index("(__pycache__)") < pytorch.index("-m pip install")


def test_build_sh_reads_the_arch_list_through_the_helper_bld_bat_uses() -> None:
    # One reader of recipe/cuda_arch_lists.txt in the build (recipe/cuda_arch_list.py):
    # the row build.sh exports is found by the same code as bld.bat's, comments included.
    text = build_sh_text().replace("\\\n", " ")
    code = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    readers = [line for line in code if "cuda_arch_lists.txt" in line]
    assert len(readers) == 1, readers
    assert (
        '"${PYTHON}" -B "${RECIPE_DIR}/cuda_arch_list.py" "${RECIPE_DIR}/cuda_arch_lists.txt"'
        in readers[0]
    )


def _helpers_importing_siblings() -> list[str]:
    """The recipe's Python helpers that import another module of their folder, by the path
    the build runs them under: NAME.py, or a folder run as a program (its __main__.py)."""
    found = set()
    for folder in [RECIPE, *(main.parent for main in RECIPE.glob("*/__main__.py"))]:
        modules = {path.stem for path in folder.glob("*.py")}
        for path in folder.glob("*.py"):
            imported = re.findall(r"^(?:from|import)\s+(\w+)", path.read_text(), flags=re.M)
            if any(name in modules and name != path.stem for name in imported):
                found.add(path.name if folder == RECIPE else folder.name)
    return sorted(found)


def test_the_cmake_cache_helper_imports_its_siblings() -> None:
    # What the rule below guards: without such a helper it would hold nothing.
    assert "cmake_cache" in _helpers_importing_siblings()


@pytest.mark.parametrize(
    ("script", "python"), [("build.sh", '"${PYTHON}"'), ("bld.bat", '"%PYTHON%"')]
)
def test_recipe_helpers_run_without_writing_bytecode_into_the_recipe(
    script: str, python: str
) -> None:
    # Importing a sibling writes $RECIPE_DIR/__pycache__, and both engines copy the recipe
    # folder into every package's info/recipe afterwards: bytecode holding the engine's
    # random work path (rattler-build's /tmp/rattler-build-XXXX/recipe/). -B writes none.
    text = build_sh_text() if script == "build.sh" else bld_bat.all_text()
    runs = [
        line
        for helper in _helpers_importing_siblings()
        for line in text.splitlines()
        if f'{helper}"' in line and python in line
    ]
    assert any('cmake_cache"' in line for line in runs), f"{script} never runs cmake_cache"
    assert [line for line in runs if f"{python} -B " not in line] == []


def _variant_keys() -> set[str]:
    """Every key a variant of this feedstock can hold: the recipe's and CI's configuration
    keys, and the platform keys conda-build adds itself."""
    files = [RECIPE / "conda_build_config.yaml", *(RECIPE.parent / ".ci_support").glob("*.yaml")]
    keys = {"target_platform", "build_platform"}
    for path in files:
        keys |= set(re.findall(r"^(\w+):", path.read_text(), flags=re.M))
    return keys


def test_conda_builds_scan_of_build_sh_sees_every_key_its_sourced_files_use() -> None:
    # conda-build scans only the script an output names (build.sh) for the variant keys it
    # uses; the files build.sh sources must not use one that build.sh does not name.
    keys = _variant_keys()
    whole = used_in_shell_script(keys, build_sh_text())
    assert "target_platform" in whole
    assert used_in_shell_script(keys, (RECIPE / "build.sh").read_text()) == whole
