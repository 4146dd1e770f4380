"""recipe/cmake_export_paths.py: find_package(Torch) after bld.bat moved the DLLs (issue 30 item 8).

No Windows toolchain runs here, so a miniature stands in for PyTorch's Caffe2 export, and the
parts that decide the outcome are the real ones:

- the export files are written by CMake's own install(EXPORT), from install(TARGETS ... EXPORT
  Caffe2Targets DESTINATION lib) as 2.13.0 has it (c10/CMakeLists.txt, caffe2/CMakeLists.txt);
- the shared libraries carry Windows names (no lib prefix, .dll suffix), so the export names
  `${_IMPORT_PREFIX}/lib/c10.dll` as the real Caffe2Targets-release.cmake does; a static
  archive stays in lib/ as the import libraries (.lib) do on Windows;
- `windows_layout` does what bld.bat's libtorch stage does (recipe/package_files.py): DLLs to
  Library/bin, libraries to Library/lib, share/ as is;
- the consumer's find_package is CMake's, which refuses an imported target whose file is
  missing, and the consumer links and runs what the export points at.

What stays unverified: link.exe and the loader on Windows (the first Windows build's libtorch
test runs recipe/cmake_test there).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import bld_bat

ROOT = Path(__file__).resolve().parents[2]
HELPER = ROOT / "recipe" / "cmake_export_paths.py"

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")

MINI_CAFFE2 = """
cmake_minimum_required(VERSION 3.18)
project(mini_caffe2 CXX)
add_library(c10 SHARED c10.cpp)
add_library(torch_cpu SHARED torch_cpu.cpp)
target_link_libraries(torch_cpu PUBLIC c10)
# Windows names: the export then says lib/c10.dll, as PyTorch's does on Windows
set_target_properties(c10 torch_cpu PROPERTIES PREFIX "" SUFFIX ".dll")
add_library(kineto STATIC kineto.cpp)
add_library(torch_cpu_library INTERFACE)
target_link_libraries(torch_cpu_library INTERFACE torch_cpu kineto)
# 2.13.0's form: every kind of file to lib/
install(TARGETS c10 torch_cpu kineto torch_cpu_library EXPORT Caffe2Targets DESTINATION lib)
install(EXPORT Caffe2Targets DESTINATION share/cmake/Caffe2)
file(WRITE "${CMAKE_BINARY_DIR}/Caffe2Config.cmake"
  "include(\\"\\${CMAKE_CURRENT_LIST_DIR}/Caffe2Targets.cmake\\")\\n")
install(FILES "${CMAKE_BINARY_DIR}/Caffe2Config.cmake" DESTINATION share/cmake/Caffe2)
"""
SOURCES = {
    "c10.cpp": "int c10_value() { return 10; }\n",
    "torch_cpu.cpp": "int c10_value();\nint torch_value() { return c10_value() + 3; }\n",
    "kineto.cpp": "int kineto_value() { return 20; }\n",
}
CONSUMER = """
cmake_minimum_required(VERSION 3.18)
project(consumer CXX)
find_package(Caffe2 CONFIG REQUIRED)
foreach(target c10 torch_cpu kineto)
  get_target_property(location ${target} IMPORTED_LOCATION_RELEASE)
  if(NOT EXISTS "${location}")
    message(FATAL_ERROR "${target}: ${location} does not exist")
  endif()
  message(STATUS "${target} -> ${location}")
endforeach()
file(WRITE "${CMAKE_BINARY_DIR}/main.cpp"
  "#include <cstdio>\\nint torch_value(); int kineto_value();\\n"
  "int main() { std::printf(\\"%d\\\\n\\", torch_value() + kineto_value()); }\\n")
add_executable(consumer "${CMAKE_BINARY_DIR}/main.cpp")
target_link_libraries(consumer PRIVATE torch_cpu_library)
"""


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, cwd=cwd, timeout=300, check=False)


@pytest.fixture(scope="module")
def upstream_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The miniature built and installed as setup.py installs PyTorch: all in lib/."""
    base = tmp_path_factory.mktemp("mini_caffe2")
    source = base / "src"
    source.mkdir()
    (source / "CMakeLists.txt").write_text(MINI_CAFFE2)
    for name, text in SOURCES.items():
        (source / name).write_text(text)
    build, prefix = base / "build", base / "torch"
    for step in (
        ("cmake", "-S", str(source), "-B", str(build), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"),
        ("cmake", "--build", str(build)),
        ("cmake", "--install", str(build), "--prefix", str(prefix)),
    ):
        result = run(*step)
        assert result.returncode == 0, result.stdout + result.stderr
    return prefix


def windows_layout(torch_tree: Path, library: Path) -> Path:
    """bld.bat's libtorch stage: lib/*.dll to bin/, the rest of lib/ to lib/, share/ as is."""
    (library / "bin").mkdir(parents=True)
    (library / "lib").mkdir()
    for entry in (torch_tree / "lib").iterdir():
        target = "bin" if entry.suffix == ".dll" else "lib"
        shutil.copy2(entry, library / target / entry.name)
    shutil.copytree(torch_tree / "share", library / "share")
    return library


def relocate(share: Path, *moved_to: Path) -> subprocess.CompletedProcess:
    places = [arg for directory in moved_to for arg in ("--moved-to", str(directory))]
    return run(sys.executable, str(HELPER), str(share), *places)


def configure_consumer(tmp_path: Path, library: Path) -> subprocess.CompletedProcess:
    source = tmp_path / "consumer"
    source.mkdir()
    (source / "CMakeLists.txt").write_text(CONSUMER)
    return run(
        "cmake", "-S", str(source), "-B", str(tmp_path / "consumer-build"), "-G", "Ninja",
        "-DCMAKE_BUILD_TYPE=Release", f"-DCaffe2_DIR={library / 'share' / 'cmake' / 'Caffe2'}",
    )  # fmt: skip


@pytest.mark.slow
def test_find_package_fails_on_the_moved_dlls_without_the_rewrite(
    upstream_install: Path, tmp_path: Path
):
    library = windows_layout(upstream_install, tmp_path / "Library")
    result = configure_consumer(tmp_path, library)
    assert result.returncode != 0
    assert "lib/c10.dll" in result.stderr and "does not exist" in result.stderr


@pytest.mark.slow
def test_find_package_resolves_every_imported_location_after_the_rewrite(
    upstream_install: Path, tmp_path: Path
):
    library = windows_layout(upstream_install, tmp_path / "Library")
    relocated = relocate(library / "share" / "cmake", library / "bin", library / "lib")
    assert relocated.returncode == 0, relocated.stderr
    assert "${_IMPORT_PREFIX}/lib/c10.dll -> bin/c10.dll" in relocated.stdout
    assert "${_IMPORT_PREFIX}/lib/torch_cpu.dll -> bin/torch_cpu.dll" in relocated.stdout

    configured = configure_consumer(tmp_path, library)
    assert configured.returncode == 0, configured.stdout + configured.stderr
    assert f"c10 -> {library}/bin/c10.dll" in configured.stdout
    assert f"kineto -> {library}/lib/libkineto.a" in configured.stdout
    built = run("cmake", "--build", str(tmp_path / "consumer-build"))
    assert built.returncode == 0, built.stdout + built.stderr
    # the loader searches Library\\bin on Windows (conda puts it on PATH); here LD_LIBRARY_PATH
    ran = subprocess.run(
        [str(tmp_path / "consumer-build" / "consumer")],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "LD_LIBRARY_PATH": str(library / "bin")},
    )  # fmt: skip
    assert ran.stdout.strip() == "33", ran.stderr


@pytest.mark.slow
def test_the_rewrite_stays_relative_so_the_package_relocates(
    upstream_install: Path, tmp_path: Path
):
    built_at = windows_layout(upstream_install, tmp_path / "build-prefix" / "Library")
    assert relocate(built_at / "share" / "cmake", built_at / "bin").returncode == 0
    installed_at = tmp_path / "user-env" / "Library"
    installed_at.parent.mkdir()
    shutil.move(built_at, installed_at)
    assert configure_consumer(tmp_path, installed_at).returncode == 0


@pytest.mark.slow
def test_site_packages_exports_point_at_where_libtorch_ships_the_files(
    upstream_install: Path, tmp_path: Path
):
    # the pytorch stage: torch\\share stays in site-packages, and the files libtorch ships in
    # Library\\bin and Library\\lib are deleted from torch\\lib
    prefix = tmp_path / "prefix"
    library = windows_layout(upstream_install, prefix / "Library")
    torch = prefix / "Lib" / "site-packages" / "torch"
    shutil.copytree(upstream_install / "share", torch / "share")
    (torch / "lib").mkdir()
    relocated = relocate(torch / "share" / "cmake", library / "bin", library / "lib")
    assert "lib/c10.dll -> ../../../Library/bin/c10.dll" in relocated.stdout, relocated.stderr
    assert "lib/libkineto.a -> ../../../Library/lib/libkineto.a" in relocated.stdout
    assert configure_consumer(tmp_path, torch).returncode == 0


@pytest.mark.slow
def test_a_dll_found_nowhere_is_a_problem_and_its_export_is_left_as_it_was(
    upstream_install: Path, tmp_path: Path
):
    library = windows_layout(upstream_install, tmp_path / "Library")
    (library / "bin" / "torch_cpu.dll").unlink()
    export = library / "share" / "cmake" / "Caffe2" / "Caffe2Targets-release.cmake"
    before = export.read_text()
    result = relocate(library / "share" / "cmake", library / "bin")
    assert result.returncode == 1
    assert "lib/torch_cpu.dll exists neither there nor in" in result.stderr
    assert result.stderr.splitlines()[-1].startswith("problems: 1 exported file(s)")
    assert export.read_text() == before


def test_a_missing_share_directory_is_one_error_line(tmp_path: Path):
    result = relocate(tmp_path / "absent", tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"error: {tmp_path / 'absent'} is not a directory; pass the installed share\\cmake"
    ]


def test_bld_bat_rewrites_the_exports_after_placing_dlls_and_share():
    libtorch = bld_bat.section(bld_bat.text("bld_libtorch.bat"), "libtorch_install")
    call = libtorch.index('"%RECIPE_DIR%\\cmake_export_paths.py" "%LIBRARY_PREFIX%\\share\\cmake"')
    assert libtorch.index('package_files.py" libtorch --platform win-64') < call
    line = libtorch[call : libtorch.index("\n", call)]
    assert '--moved-to "%LIBRARY_BIN%" --moved-to "%LIBRARY_LIB%"' in line


def test_bld_bat_leaves_no_site_packages_exports_to_rewrite():
    # The pytorch output drops torch\share (libtorch's Library\share again, as conda-forge's
    # bld.bat does; recipe/package_files.py), so no export there can name a deleted DLL.
    pytorch = bld_bat.text("bld_pytorch.bat")
    assert "%SP_DIR%\\torch\\share\\cmake" not in pytorch
    assert 'package_files.py" pytorch --platform win-64' in pytorch
