"""recipe/check_openmp.py: the pytorch test that fails when two OpenMP runtimes load.

The recipe runs it on Windows, after `import torch, numpy`, where the runtimes are DLLs
(vcomp140, libiomp5md, libomp). Here the same program lists a Linux process's libraries
instead (/proc/self/maps), and the runtimes are real ones loaded by a module the check
imports: GCC's libgomp, and a second copy of it at another path, which the loader maps as a
second runtime exactly as it would a second packager's libgomp. The real torch wheel's case
is in test_recipe_real_torch.py. Windows' module listing (EnumProcessModules) and names run
only in the first Windows build's test.
"""

from __future__ import annotations

import ctypes.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.recipe_helpers import RECIPE, recipe_module
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

check_openmp = recipe_module("check_openmp")

SYSTEM_GOMP = ctypes.util.find_library("gomp")
needs_linux_gomp = pytest.mark.skipif(
    not sys.platform.startswith("linux") or SYSTEM_GOMP is None, reason="needs Linux libgomp"
)


def loader_module(directory: Path, *libraries: str) -> str:
    """A module that dlopens the given libraries when imported; its name."""
    lines = ["import ctypes"] + [
        f"ctypes.CDLL({lib!r}, mode=ctypes.RTLD_GLOBAL)" for lib in libraries
    ]
    (directory / "load_runtimes.py").write_text("\n".join(lines) + "\n")
    return "load_runtimes"


def check(directory: Path, *modules: str) -> subprocess.CompletedProcess:
    args = [arg for module in modules for arg in ("--import", module)]
    return subprocess.run(
        [sys.executable, str(RECIPE / "check_openmp.py"), *args],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "PYTHONPATH": str(directory)},
    )  # fmt: skip


def test_windows_runtime_names_are_recognised_and_other_dlls_are_not():
    paths = [
        r"C:\env\Library\bin\libiomp5md.dll",
        r"C:\Windows\System32\VCOMP140.DLL",
        r"C:\env\Library\bin\libomp.dll",
        r"C:\Program Files\Microsoft Visual Studio\bin\libomp140.x86_64.dll",
        r"C:\env\Library\bin\torch_cpu.dll",
        r"C:\env\Library\bin\mkl_intel_thread.2.dll",
        r"C:\env\Library\bin\libompitt.dll",
    ]
    assert [p.rsplit("\\", 1)[1] for p in check_openmp.openmp_runtimes(paths)] == [
        "libomp140.x86_64.dll",
        "VCOMP140.DLL",
        "libiomp5md.dll",
        "libomp.dll",
    ]


@needs_linux_gomp
def test_one_runtime_loaded_passes_and_is_named(tmp_path: Path):
    result = check(tmp_path, loader_module(tmp_path, SYSTEM_GOMP))
    assert result.returncode == 0, result.stderr
    assert "OpenMP runtime loaded after import load_runtimes: " in result.stdout
    assert "libgomp.so" in result.stdout


@needs_linux_gomp
def test_two_runtimes_loaded_fail_with_both_named(tmp_path: Path):
    system = subprocess.run(
        [sys.executable, "-c", f"import ctypes; ctypes.CDLL({SYSTEM_GOMP!r}); "
         "print(next(l.split()[-1] for l in open('/proc/self/maps') if 'libgomp' in l))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    copy = tmp_path / "other-env" / "libgomp.so.1"
    copy.parent.mkdir()
    shutil.copy2(system, copy)
    result = check(tmp_path, loader_module(tmp_path, SYSTEM_GOMP, str(copy)))
    assert result.returncode == 1
    (problems,) = result.stderr.splitlines()
    assert problems.startswith("problems: 2 OpenMP runtimes loaded after import load_runtimes")
    assert str(copy) in problems and system in problems


def test_no_runtime_loaded_fails_rather_than_passing_blind(tmp_path: Path):
    result = check(tmp_path, "json")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "problems: 0 OpenMP runtimes loaded after import json (exactly one expected): none"
    ]


def test_a_module_that_does_not_import_is_one_error_line(tmp_path: Path):
    result = check(tmp_path, "no_such_module_here")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "error: --import no_such_module_here: No module named 'no_such_module_here'"
    ]


def _test_requirements(path: Path) -> set[str]:
    """The distributions ``pip install -r path`` installs by name (``-r`` files included)."""
    names = set()
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r"):
            names |= _test_requirements(path.parent / line[2:].strip())
        elif line:
            names.add(canonicalize_name(Requirement(line).name))
    return names


def test_what_it_imports_by_default_is_installed_by_the_test_requirements():
    # The suite runs it against upstream's torch wheel (test_recipe_real_torch.py); every other
    # module it imports must come from the README's install, not from the machine's Python.
    wanted = {canonicalize_name(m) for m in check_openmp.DEFAULT_MODULES} - {"torch"}
    assert wanted <= _test_requirements(RECIPE.parent / "requirements-test.txt")
