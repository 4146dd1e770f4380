"""cmake_cache.py retarget-python on a cross-compiling cache, against real CMake.

A CMAKE_SYSTEM_NAME given on the command line makes CMake cross-compile, as conda-forge's
CMAKE_ARGS do on linux-aarch64 and osx-64. FindPython then takes the version from the
interpreter but finds the headers on its own, through a pythonX.Y-config tool on PATH
(FindPython/Support.cmake skips "use [the interpreter] to look-up for artifacts" when
CMAKE_CROSSCOMPILING). Here PATH offers the first Python's config tool, the way a build
environment offers the one of the Python it was made for; after the retarget, the
reconfigure must still find the second Python's headers and keep Development.Module.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.minitorch.support import CACHE_TOOL, clean_env, run, two_interpreters

CROSS_PROJECT = """\
cmake_minimum_required(VERSION 3.20)
project(probe C)
find_package(Python COMPONENTS Interpreter OPTIONAL_COMPONENTS Development.Module)
message(STATUS "probe: module=${Python_Development.Module_FOUND} headers=${Python_INCLUDE_DIRS}")
"""


def include_dir(python: Path) -> str:
    return subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


@pytest.mark.slow
def test_cross_retarget_keeps_development_module_with_the_new_pythons_headers(tmp_path: Path):
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
        ],
        env=env,
    )
    assert f"probe: module=TRUE headers={include_dir(first.executable)}" in configured.stdout

    cache = build / "CMakeCache.txt"
    run([sys.executable, CACHE_TOOL, "retarget-python", cache, "--python", second.executable])
    reconfigured = run(["cmake", build], env=env)

    assert f"probe: module=TRUE headers={include_dir(second.executable)}" in reconfigured.stdout
