"""cmake_cache on caches scikit-build-core wrote: the miniature's >= 2.14 layout.

One tree is built for Python 3.12 with a kept build-dir (scikit-build-core 1.1, each Python
from its own venv and so with its own scikit-build-core). A copy of its cache and
.skbuild-info.json is retargeted to 3.13; then the tree is built for 3.13 without help,
which shows the first trap (the backend deletes the tree and compiles the core again) and
leaves the cache scikit-build-core and FindPython write for 3.13 from scratch. The retarget
must have written exactly that for every entry it touched, and nothing else. The second
trap (switching Python_EXECUTABLE alone) is shown on the same tree. That a retargeted tree
is kept and compiles the core once is tests/e2e/test_build_sh.py's flow, on this layout too.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.minitorch.build_records import ninja_log, ran_between
from helpers.minitorch.support import (
    SCIKIT_BUILD_CORE,
    Interpreter,
    backend_wheel,
    base_venv,
    clean_env,
    copy_project,
    run,
    two_interpreters,
    venv_python,
)
from helpers.recipe_helpers import CMAKE_CACHE, recipe_module

cache_file = recipe_module("cmake_cache/cache_file")

pytestmark = pytest.mark.slow


def retarget(cache: Path, python: Path) -> None:
    run([sys.executable, CMAKE_CACHE, "retarget-python", cache, "--python", python])


def skbuild_dir(python: Path) -> str:
    probe = (
        "import pathlib, scikit_build_core as s; print(pathlib.Path(s.__file__).parent.resolve())"
    )
    return run([python, "-c", probe]).stdout.strip()


@dataclass(frozen=True)
class Megabuild:
    pythons: tuple[Interpreter, Interpreter]
    executables: tuple[Path, Path]
    project: Path
    first_cache: str
    first_info: dict
    retargeted_cache: str
    retargeted_info: dict
    second_cache: str
    ran_for_second_python: set[str]


@pytest.fixture(scope="module")
def megabuild(tmp_path_factory: pytest.TempPathFactory) -> Megabuild:
    """One tree built for the first Python; its cache and record retargeted to the second
    (in a copy); then the tree built for the second Python unaided, which shows the trap
    and leaves the cache scikit-build-core writes for that Python from scratch."""
    first, second = two_interpreters()
    if first.version == second.version:
        pytest.skip("needs two Python versions")
    pythons = tuple(venv_python(base_venv(i, layout=SCIKIT_BUILD_CORE)) for i in (first, second))
    scratch = tmp_path_factory.mktemp("skbuild")
    project = copy_project(scratch / "minitorch", SCIKIT_BUILD_CORE)
    build = project / "build"
    backend_wheel(pythons[0], project)
    first_cache = (build / "CMakeCache.txt").read_text()
    first_info = json.loads((build / ".skbuild-info.json").read_text())
    copy = scratch / "retargeted"
    copy.mkdir()
    for name in ("CMakeCache.txt", ".skbuild-info.json"):
        shutil.copy2(build / name, copy / name)
    retarget(copy / "CMakeCache.txt", pythons[1])
    before = ninja_log(build)
    backend_wheel(pythons[1], project)
    return Megabuild(
        (first, second),
        pythons,
        project,
        first_cache,
        first_info,
        (copy / "CMakeCache.txt").read_text(),
        json.loads((copy / ".skbuild-info.json").read_text()),
        (build / "CMakeCache.txt").read_text(),
        ran_between(before, ninja_log(build)),
    )


def entries(text: str) -> dict[str, cache_file.Entry]:
    return {e.name: e for e in cache_file.parse(text).entries}


def changed_names(old: str, new: str) -> set[str]:
    before, after = entries(old), entries(new)
    return {n for n in before.keys() | after.keys() if before.get(n) != after.get(n)}


def test_the_retarget_writes_what_the_backend_then_writes_itself(megabuild: Megabuild) -> None:
    retargeted, real = entries(megabuild.retargeted_cache), entries(megabuild.second_cache)
    rewritten = changed_names(megabuild.first_cache, megabuild.retargeted_cache)
    # FindPython's signatures hash its own search state: dropped, and written afresh.
    kept = {n for n in rewritten if n in retargeted}
    assert {"Python_EXECUTABLE", "_Python_EXECUTABLE", "_Python_INCLUDE_DIR"} <= kept
    assert {"Python_INCLUDE_DIR", "Python_ROOT_DIR", "SKBUILD_SOABI", "CMAKE_PREFIX_PATH"} <= kept
    assert {n: retargeted[n].value for n in kept} == {n: real[n].value for n in kept}


def test_the_retarget_touches_no_entry_that_is_not_pythons(megabuild: Megabuild) -> None:
    rewritten = changed_names(megabuild.first_cache, megabuild.retargeted_cache)
    not_python = {
        n for n in rewritten if not n.startswith(("Python", "_Python", "PYTHON", "FIND_PACKAGE"))
    }
    assert not_python == {"SKBUILD_SOABI", "CMAKE_PREFIX_PATH"}


def test_every_untouched_line_keeps_its_bytes(megabuild: Megabuild) -> None:
    rewritten = changed_names(megabuild.first_cache, megabuild.retargeted_cache)
    before = [
        line.text
        for line in cache_file.parse(megabuild.first_cache).lines
        if line.entry is None or line.entry.name not in rewritten
    ]
    after = [
        line.text
        for line in cache_file.parse(megabuild.retargeted_cache).lines
        if line.entry is None or line.entry.name not in rewritten
    ]
    # Dropped signatures take their (empty) help text with them; nothing else differs.
    assert [t for t in before if t not in after] == []
    assert [t for t in after if t not in before] == []


def test_the_backend_record_names_the_second_pythons_scikit_build_core(
    megabuild: Megabuild,
) -> None:
    new = megabuild.retargeted_info
    assert new["skbuild_path"] == skbuild_dir(megabuild.executables[1])
    assert new["skbuild_path"] != megabuild.first_info["skbuild_path"]
    same = {k: v for k, v in new.items() if k not in ("skbuild_path", "python_executable")}
    assert same == {
        k: v
        for k, v in megabuild.first_info.items()
        if k not in ("skbuild_path", "python_executable")
    }


# ---------------------------------------------------------------- the traps, shown real


def test_without_the_retarget_scikit_build_core_recompiles_the_core(megabuild: Megabuild) -> None:
    # The fear of conda-forge/pytorch-cpu-feedstock#538: another environment's
    # scikit-build-core deletes CMakeCache.txt and CMakeFiles/ (.skbuild-info.json).
    assert {"c10.cpp.o", "Context.cpp.o", "libc10.so"} <= megabuild.ran_for_second_python


def test_switching_python_executable_alone_breaks_findpython(megabuild: Megabuild) -> None:
    # Back to the first Python by its executable only: FindPython's internal entries
    # (_Python_EXECUTABLE, _Python_INCLUDE_DIR, ...) still describe the second one.
    build = megabuild.project / "build"
    cache = build / "CMakeCache.txt"
    first = megabuild.executables[0]
    run([sys.executable, CMAKE_CACHE, "set", cache, f"Python_EXECUTABLE:FILEPATH={first}"])
    broken = run(["cmake", build], env=clean_env(), check=False)
    assert broken.returncode != 0
    assert "Could NOT find Python" in broken.stdout + broken.stderr
    retarget(cache, first)
    fixed = run(["cmake", build], env=clean_env(), check=False)
    assert fixed.returncode == 0, (fixed.stdout + fixed.stderr)[-3000:]
