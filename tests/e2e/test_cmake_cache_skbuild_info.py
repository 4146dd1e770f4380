"""cmake_cache and scikit-build-core's .skbuild-info.json, without building anything.

What retarget-python does to the record beside the cache, and how it refuses a record or an
interpreter it cannot use: one line naming the file, exit 2, nothing written.
(tests/e2e/test_cmake_cache_skbuild.py runs it on trees scikit-build-core really built.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.recipe_helpers import CMAKE_CACHE, recipe_module

cache_file = recipe_module("cmake_cache/cache_file")
interpreters = recipe_module("cmake_cache/interpreters")
skbuild_info = recipe_module("cmake_cache/skbuild_info")

OLD = "/old/env/lib/python3.12/site-packages/scikit_build_core"
INFO = {
    "source_dir": "/work",
    "build_dir": "/work/build",
    "cmake_path": "/usr/bin/cmake",
    "skbuild_path": OLD,
    "skbuild_version": "1.1.2",
    "python_executable": "/old/env/bin/python",
}
CACHE = "Python_EXECUTABLE:FILEPATH=/old/env/bin/python3.12\n"


def _facts(skbuild_path: str) -> interpreters.PythonFacts:
    return interpreters.PythonFacts(
        executable="/new/env/bin/python", version=(3, 13, 0), skbuild_path=skbuild_path
    )


def _tree(tmp_path: Path, info: str) -> Path:
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "CMakeCache.txt").write_text(CACHE)
    (tmp_path / "build" / ".skbuild-info.json").write_text(info)
    return tmp_path / "build" / "CMakeCache.txt"


def _retarget(cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            str(CMAKE_CACHE),
            "retarget-python",
            str(cache),
            "--python",
            sys.executable,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_record_names_the_new_interpreters_scikit_build_core_and_keeps_the_rest():
    new = skbuild_info.retarget_info(INFO, _facts("/new/sbc"), Path("x"))
    assert new == {**INFO, "skbuild_path": "/new/sbc", "python_executable": "/new/env/bin/python"}


def test_an_interpreter_without_scikit_build_core_is_refused_naming_the_record():
    record = Path("/work/build/.skbuild-info.json")
    with pytest.raises(cache_file.CacheError) as raised:
        skbuild_info.retarget_info(INFO, _facts(""), record)
    message = str(raised.value)
    assert message.startswith("/work/build/.skbuild-info.json: ")
    assert OLD in message and "host requirements" in message


def test_the_command_rewrites_the_record_in_scikit_build_cores_format(tmp_path):
    cache = _tree(tmp_path, json.dumps(INFO, indent=2))
    proc = _retarget(cache)
    assert proc.returncode == 0, proc.stderr
    import scikit_build_core

    expected = str(Path(scikit_build_core.__file__).parent.resolve())
    record = (cache.parent / ".skbuild-info.json").read_text()
    assert json.loads(record)["skbuild_path"] == expected
    assert record == json.dumps(json.loads(record), indent=2)
    assert f".skbuild-info.json: scikit-build-core is now {expected}" in proc.stdout


def test_a_damaged_record_stops_before_either_file_is_written(tmp_path):
    cache = _tree(tmp_path, '{"skbuild_path": ')
    proc = _retarget(cache)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.startswith(
        f"cmake_cache.py: error: {cache.parent / '.skbuild-info.json'}: not valid JSON"
    )
    assert cache.read_text() == CACHE
    assert not (cache.parent / "CMakeCache.txt.orig").exists()


def test_a_tree_without_a_record_is_retargeted_as_before(tmp_path):
    (tmp_path / "CMakeCache.txt").write_text(CACHE)
    proc = _retarget(tmp_path / "CMakeCache.txt")
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / ".skbuild-info.json").exists()
    assert "skbuild" not in proc.stdout
