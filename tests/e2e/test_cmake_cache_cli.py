"""recipe/cmake_cache: its command line: output, exit codes and refusals."""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

import pytest
from helpers.cmake_caches import LINUX_312, cli, values

# ---------------------------------------------------------------- command line


@pytest.fixture
def cache_file(tmp_path: Path) -> Path:
    path = tmp_path / "CMakeCache.txt"
    path.write_text(LINUX_312)
    return path


def test_cli_get_prints_the_value(cache_file: Path) -> None:
    assert cli("get", cache_file, "USE_MAGMA", check=True).stdout == "OFF\n"


def test_cli_get_prints_the_default_for_an_absent_entry(cache_file: Path) -> None:
    assert cli("get", cache_file, "NOT_THERE", "--default", "", check=True).stdout == "\n"


def test_cli_set_keeps_the_pristine_original_once(cache_file: Path) -> None:
    cli("set", cache_file, "USE_MAGMA:BOOL=ON", check=True)
    cli("set", cache_file, "USE_CUDA:BOOL=OFF", check=True)
    assert (cache_file.parent / "CMakeCache.txt.orig").read_text() == LINUX_312
    assert values(cache_file.read_text())["USE_MAGMA"] == "ON"


def test_cli_set_twice_leaves_the_file_untouched(cache_file: Path) -> None:
    cli("set", cache_file, "USE_MAGMA:BOOL=ON", check=True)
    stamp = cache_file.stat().st_mtime_ns, cache_file.read_bytes()
    cli("set", cache_file, "USE_MAGMA:BOOL=ON", check=True)
    assert (cache_file.stat().st_mtime_ns, cache_file.read_bytes()) == stamp


def test_cli_retarget_asks_the_interpreter_for_its_facts(tmp_path: Path) -> None:
    path = tmp_path / "CMakeCache.txt"
    path.write_text(
        "".join(line for line in LINUX_312.splitlines(keepends=True) if "numpy" not in line.lower())
    )
    result = cli("retarget-python", path, "--python", sys.executable)
    assert result.returncode == 0, result.stderr
    new = values(path.read_text())
    assert new["_Python_INCLUDE_DIR"] == sysconfig.get_paths()["include"]
    assert new["Python_EXECUTABLE"] == os.path.abspath(sys.executable)
    assert new["_Python_INTERPRETER_PROPERTIES"].split(";")[1:4] == [
        str(n) for n in sys.version_info[:3]
    ]


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (("get", "{missing}", "X"), "no such file"),
        (("set", "{cache}", "USE_MAGMA:NUMBER=1"), "unknown type 'NUMBER'"),
        (("get", "{cache}", "NOT_THERE"), "has no entry 'NOT_THERE'"),
        (("retarget-python", "{cache}", "--python", "{missing}"), "cannot run the interpreter"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(cache_file: Path, args, problem) -> None:
    argv = [a.format(cache=cache_file, missing=cache_file.parent / "nope") for a in args]
    result = cli(*argv)
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1 and problem in result.stderr
    assert cache_file.read_text() == LINUX_312


def test_cli_usage_errors_are_one_line_too(cache_file: Path) -> None:
    result = cli("set", cache_file)
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1


def _assert_refused_untouched(path: Path, result, problem: str) -> None:
    before = path.read_bytes()
    assert result.returncode == 2, result.stdout
    [line] = result.stderr.splitlines()
    assert str(path) in line and problem in line
    assert path.read_bytes() == before
    assert not path.with_name(path.name + ".orig").exists()


def test_cli_malformed_cache_is_refused_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "CMakeCache.txt"
    path.write_text(LINUX_312.replace("USE_CUDA:BOOL=ON", "USE_CUDA BOOL ON"))
    line_number = LINUX_312.splitlines().index("USE_CUDA:BOOL=ON") + 1
    result = cli("set", path, "USE_MAGMA:BOOL=ON")
    _assert_refused_untouched(path, result, f"{path}:{line_number}: not a cache entry")


def test_cli_read_only_cache_is_refused(cache_file: Path) -> None:
    cache_file.chmod(0o444)
    try:
        result = cli("set", cache_file, "USE_MAGMA:BOOL=ON")
        _assert_refused_untouched(cache_file, result, "is read-only")
    finally:
        cache_file.chmod(0o644)


def test_cli_interpreter_that_fails_is_refused(cache_file: Path, tmp_path: Path) -> None:
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho 'Fatal Python error: no encodings' >&2\nexit 1\n")
    broken.chmod(0o755)
    result = cli("retarget-python", cache_file, "--python", broken)
    _assert_refused_untouched(cache_file, result, "no encodings")


def test_cli_cache_without_python_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "CMakeCache.txt"
    path.write_text("USE_CUDA:BOOL=ON\n")
    result = cli("retarget-python", path, "--python", sys.executable)
    _assert_refused_untouched(path, result, "has no Python entries")
