"""cmake_cache retarget-python on a cross-compiling cache, against real CMake.

A CMAKE_SYSTEM_NAME given on the command line makes CMake cross-compile, as conda-forge's
CMAKE_ARGS do on linux-aarch64 and osx-64. FindPython then takes the version from the
interpreter but finds the headers on its own, through a pythonX.Y-config tool on PATH
(FindPython/Support.cmake skips "use [the interpreter] to look-up for artifacts" when
CMAKE_CROSSCOMPILING). Here PATH offers the first Python's config tool, the way a build
environment offers the one of the Python it was made for; after the retarget, the
reconfigure must still find the second Python's headers and keep Development.Module.
scikit-build-core names the headers itself (Python_INCLUDE_DIR, Python_ROOT_DIR on every
configure); its cache must come through the retarget the same way.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.minitorch.support import (
    Interpreter,
    clean_env,
    run,
    two_interpreters,
)
from helpers.recipe_helpers import CMAKE_CACHE

CROSS_PROJECT = """\
cmake_minimum_required(VERSION 3.20)
project(probe C)
find_package(Python COMPONENTS Interpreter OPTIONAL_COMPONENTS Development.Module)
message(STATUS "probe: module=${Python_Development.Module_FOUND} headers=${Python_INCLUDE_DIRS}")
message(STATUS "probe: soabi=[${Python_SOABI}]")
"""


def ask(python: Path, expression: str) -> str:
    return subprocess.run(
        [str(python), "-c", f"import sys, sysconfig; print({expression})"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def include_dir(python: Path) -> str:
    return ask(python, "sysconfig.get_paths()['include']")


def skbuild_hints(python: Path) -> list[str]:
    """The FindPython hints scikit-build-core passes (builder.py, 1.1)."""
    return [
        f"-DPython_ROOT_DIR={ask(python, 'sys.base_exec_prefix')}",
        f"-DPython_INCLUDE_DIR={include_dir(python)}",
    ]


@dataclass(frozen=True)
class CrossRetarget:
    first: Interpreter
    second: Interpreter
    configured: str  # cmake's output for the first Python
    reconfigured: str  # cmake's output after the retarget to the second


def cross_retarget(tmp_path: Path, *, hinted: bool) -> CrossRetarget:
    """Cross-configure for the first Python, retarget to the second, reconfigure."""
    first, second = two_interpreters()
    if first.version == second.version:
        pytest.skip("needs two Python versions with headers")
    bindir = first.executable.parent
    if not (bindir / f"python{first.tag}-config").exists():
        pytest.skip(f"needs python{first.tag}-config beside {first.executable}")
    env = clean_env()
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):  # FindPython looks there before PATH
        env.pop(variable, None)
    env["PATH"] = os.pathsep.join([str(bindir), env["PATH"]])
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "CMakeLists.txt").write_text(CROSS_PROJECT)
    build = tmp_path / "build"
    configured = run(
        [
            "cmake",
            "-S",
            tmp_path / "src",
            "-B",
            build,
            "-G",
            "Ninja",
            f"-DCMAKE_SYSTEM_NAME={os.uname().sysname}",
            f"-DPython_EXECUTABLE={first.executable}",
            *(skbuild_hints(first.executable) if hinted else []),
        ],
        env=env,
    )
    cache = build / "CMakeCache.txt"
    run([sys.executable, CMAKE_CACHE, "retarget-python", cache, "--python", second.executable])
    reconfigured = run(["cmake", build], env=env)
    return CrossRetarget(first, second, configured.stdout, reconfigured.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("hinted", [False, True], ids=["findpython-alone", "skbuild-hints"])
def test_cross_retarget_keeps_development_module_with_the_new_pythons_headers(
    tmp_path: Path, hinted: bool
):
    ran = cross_retarget(tmp_path, hinted=hinted)
    assert f"probe: module=TRUE headers={include_dir(ran.first.executable)}" in ran.configured
    assert f"probe: module=TRUE headers={include_dir(ran.second.executable)}" in ran.reconfigured


@pytest.mark.slow
def test_cross_retarget_invents_no_soabi_that_cross_findpython_does_not_record(tmp_path: Path):
    # Patch 0007 then names torch._C from TORCH_PYTHON_SOABI, which build.sh takes from the
    # target's interpreter; an SOABI the build machine's Python answers could be the wrong one.
    ran = cross_retarget(tmp_path, hinted=False)
    assert "probe: soabi=[]" in ran.configured
    assert "probe: soabi=[]" in ran.reconfigured
