"""Patches 0006-0013 against PyTorch 2.13.0's text, and what each one changes, run for real.

tests/fixtures/upstream_2_13/ holds the 2.13.0 lines each patch touches (README there). Every
patch must apply to them without fuzz; then each behaviour the patch exists for is run with the
real tool that decides it, against the unpatched and the patched text:

- 0006: CMake + an Objective-C++ compiler link a DispatchStub-shaped call from a .mm file;
- 0007: CMake's FindPython, cross-compiling, names a WITH_SOABI module;
- 0013: tools/generate_torch_version.py's get_sha, in a tree without .git (the release
  archive), answers the commit the recipe hands over.

0008 and 0009 (what consumers of the installed files compile) are
tests/e2e/test_patches_2_13_consumers.py's, 0011 and 0012 (the Windows toolchain)
tests/e2e/test_patches_2_13_windows.py's.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.debian import apt_install, can_install
from helpers.minitorch.support import find_interpreters
from helpers.patched_upstream import (
    PATCHES,
    ROOT,
    cmake,
    patched,
)
from helpers.recipe_release import recorded_commit

NEW_PATCHES = sorted(p for p in PATCHES.glob("*.patch") if p.name[:4] >= "0006")


@pytest.mark.parametrize("patch", NEW_PATCHES, ids=lambda p: p.name[:4])
def test_patch_applies_without_fuzz_to_the_2_13_text(patch: Path, tmp_path: Path):
    tree = patched(tmp_path)
    result = subprocess.run(
        ["patch", "-p1", "--fuzz=0", "--dry-run", "-i", str(patch)],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


# -- 0006: CPU capability defines and Objective-C++ ------------------------------------------

DISPATCH_H = """
// DispatchStub.h's shape: one parameter per capability the build announces.
struct DispatchStubImpl {
  void* get_call_ptr(int device_type
#ifdef HAVE_AVX512_CPU_DEFINITION
      , void* AVX512
#endif
#ifdef HAVE_AVX2_CPU_DEFINITION
      , void* AVX2
#endif
  );
};
"""
KERNELS_CPP = """
#include "dispatch.h"
void* DispatchStubImpl::get_call_ptr(int device_type
#ifdef HAVE_AVX512_CPU_DEFINITION
    , void* AVX512
#endif
#ifdef HAVE_AVX2_CPU_DEFINITION
    , void* AVX2
#endif
) { return reinterpret_cast<void*>(device_type + 1); }
"""
MPS_MM = """
// An MPS source: Objective-C++, compiled with CMAKE_OBJCXX_FLAGS.
#include "dispatch.h"
int main() {
  DispatchStubImpl stub;
  return stub.get_call_ptr(0
#ifdef HAVE_AVX512_CPU_DEFINITION
      , nullptr
#endif
#ifdef HAVE_AVX2_CPU_DEFINITION
      , nullptr
#endif
  ) ? 0 : 1;
}
"""


def build_dispatch_probe(tmp_path: Path, upstream: Path) -> subprocess.CompletedProcess:
    project = tmp_path / "dispatch"
    project.mkdir()
    (project / "dispatch.h").write_text(DISPATCH_H)
    (project / "kernels.cpp").write_text(KERNELS_CPP)
    (project / "mps.mm").write_text(MPS_MM)
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\n"
        "project(dispatch LANGUAGES CXX OBJCXX)\n"
        "# what osx-64's configure found: both x86 capabilities\n"
        "set(INTERN_BUILD_ATEN_OPS ON)\nset(CXX_AVX512_FOUND ON)\nset(CXX_AVX2_FOUND ON)\n"
        'set(OPT_FLAG "-O1")\n'
        f'include("{upstream}/cmake/Codegen.cmake")\n'
        "add_executable(probe kernels.cpp mps.mm)\n"
    )
    build = tmp_path / "dispatch-build"
    configured = cmake("-S", str(project), "-B", str(build), "-G", "Ninja")
    if configured.returncode != 0 and _no_objcxx(configured) and can_install():
        # CI runs as root on a fresh Debian machine: it installs what the test needs, as the
        # other Debian-package tests do (helpers/debian.py), and configures anew.
        apt_install("gobjc++")
        shutil.rmtree(build)
        configured = cmake("-S", str(project), "-B", str(build), "-G", "Ninja")
    if configured.returncode != 0:
        if _no_objcxx(configured):
            pytest.skip("no Objective-C++ compiler (Debian: apt-get install gobjc++)")
        raise AssertionError(configured.stdout + configured.stderr)
    return cmake("--build", str(build))


def _no_objcxx(configured: subprocess.CompletedProcess) -> bool:
    return "OBJCXX" in configured.stdout + configured.stderr


@pytest.mark.slow
def test_without_0006_objective_cxx_calls_a_get_call_ptr_nothing_defines(tmp_path: Path):
    built = build_dispatch_probe(tmp_path, patched(tmp_path))
    assert built.returncode != 0
    assert "undefined reference to `DispatchStubImpl::get_call_ptr" in built.stdout


@pytest.mark.slow
def test_with_0006_objective_cxx_links_against_the_kernels(tmp_path: Path):
    built = build_dispatch_probe(tmp_path, patched(tmp_path, "0006"))
    assert built.returncode == 0, built.stdout
    assert subprocess.run([str(tmp_path / "dispatch-build" / "probe")], check=False).returncode == 0


# -- 0007: torch._C's name when cross-compiling ----------------------------------------------


def configure_extension(tmp_path: Path, upstream: Path, *extra: str) -> subprocess.CompletedProcess:
    """torch._C's build as 2.13.0 does it, cross-compiling: CMAKE_SYSTEM_NAME set makes CMake
    treat the build as a cross build (CMAKE_CROSSCOMPILING), and FindPython then asks the
    interpreter nothing, as on conda-forge's linux-aarch64 and osx-64 builds."""
    project = tmp_path / "extension"
    project.mkdir()
    (project / "stub.c").write_text("int torch_c_stub;\n")
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\n"
        "project(torch_c LANGUAGES C)\n"
        "find_package(Python COMPONENTS Interpreter OPTIONAL_COMPONENTS Development.Module)\n"
        "macro(caffe2_update_option name value)\n  set(${name} ${value})\nendmacro()\n"
        "set(BUILD_PYTHON ON)\n"
        f'include("{upstream}/cmake/Dependencies.cmake")\n'
        "Python_add_library(_C MODULE WITH_SOABI stub.c)\n"
    )
    return cmake(
        "-S",
        str(project),
        "-B",
        str(tmp_path / "extension-build"),
        "-G",
        "Ninja",
        f"-DCMAKE_SYSTEM_NAME={os.uname().sysname}",
        f"-DPython_EXECUTABLE={sys.executable}",
        *extra,
    )


def built_modules(tmp_path: Path) -> list[str]:
    build = tmp_path / "extension-build"
    assert cmake("--build", str(build)).returncode == 0
    return sorted(p.name for p in build.glob("_C*.so"))


TARGET_MODULE = "_C" + sysconfig.get_config_var("EXT_SUFFIX")


@pytest.mark.slow
def test_without_0007_a_cross_build_names_torch_c_without_the_target_soabi(tmp_path: Path):
    configured = configure_extension(tmp_path, patched(tmp_path))
    assert configured.returncode == 0, configured.stderr
    # setup.py packages _C<EXT_SUFFIX> only: this module would not reach the wheel
    assert built_modules(tmp_path) == ["_C.so"] != [TARGET_MODULE]


@pytest.mark.slow
def test_with_0007_the_soabi_build_sh_passes_names_torch_c_for_the_target(tmp_path: Path):
    soabi = sysconfig.get_config_var("SOABI")
    configured = configure_extension(
        tmp_path, patched(tmp_path, "0007"), f"-DTORCH_PYTHON_SOABI={soabi}"
    )
    assert configured.returncode == 0, configured.stderr
    assert built_modules(tmp_path) == [TARGET_MODULE]


@pytest.mark.slow
def test_with_0007_a_cross_build_without_the_soabi_stops_at_configure(tmp_path: Path):
    configured = configure_extension(tmp_path, patched(tmp_path, "0007"))
    assert configured.returncode != 0
    assert "pass -DTORCH_PYTHON_SOABI=" in " ".join(configured.stderr.split())


def other_python() -> Path:
    """Another CPython minor than this one, with headers (the next pytorch output's Python)."""
    for interpreter in find_interpreters():
        if interpreter.version != sys.version_info[:2]:
            return interpreter.executable
    pytest.skip("needs a second CPython >= 3.10 with headers")


@pytest.mark.slow
def test_with_0007_each_pytorch_outputs_python_gets_its_own_soabi_after_retargeting(
    tmp_path: Path,
):
    # build.sh passes the megabuild Python's SOABI once; each pytorch output retargets the
    # tree's cache (recipe/cmake_cache), which must carry TORCH_PYTHON_SOABI along.
    soabi = sysconfig.get_config_var("SOABI")
    configure_extension(tmp_path, patched(tmp_path, "0007"), f"-DTORCH_PYTHON_SOABI={soabi}")
    assert built_modules(tmp_path) == [TARGET_MODULE]
    other = other_python()
    cache = tmp_path / "extension-build" / "CMakeCache.txt"
    retarget = subprocess.run(
        [
            sys.executable,
            str(ROOT / "recipe" / "cmake_cache"),
            "retarget-python",
            str(cache),
            "--python",
            str(other),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert retarget.returncode == 0, retarget.stderr
    other_suffix = subprocess.run(
        [str(other), "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert "_C" + other_suffix in built_modules(tmp_path)


# -- 0013: torch.version.git_version in a tree without .git ------------------------------------


def get_sha(tree: Path) -> Callable[[Path], str]:
    """tools/generate_torch_version.py's get_sha, as the tree has it."""
    path = tree / "tools" / "generate_torch_version.py"
    spec = importlib.util.spec_from_file_location("generate_torch_version", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.get_sha


def test_without_0013_the_release_archive_gets_unknown_whatever_the_environment_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("CF_TORCH_RELEASE_COMMIT", recorded_commit())
    tree = patched(tmp_path)
    assert get_sha(tree)(tree) == "Unknown"


def test_with_0013_get_sha_answers_the_commit_the_recipe_hands_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("CF_TORCH_RELEASE_COMMIT", recorded_commit())
    tree = patched(tmp_path, "0013")
    assert get_sha(tree)(tree) == recorded_commit()


def test_with_0013_and_no_commit_handed_over_get_sha_is_upstreams(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("CF_TORCH_RELEASE_COMMIT", raising=False)
    tree = patched(tmp_path, "0013")
    assert get_sha(tree)(tree) == "Unknown"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "a checkout"]):
        subprocess.run([*git, *args], cwd=tree, check=True, capture_output=True)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=tree, check=True, capture_output=True, text=True
    )
    assert get_sha(tree)(tree) == head.stdout.strip()
