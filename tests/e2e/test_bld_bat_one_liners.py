"""The Python recipe/bld.bat's files embed or call, run here with this interpreter.

The one-liners are real programs (tests/helpers/bld_bat.py finds them in the files a
Windows build runs); recipe/cuda_arch_list.py is the helper bld_common.bat reads the
architecture list through.
"""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
import sys

import pytest
from helpers.bld_bat import RECIPE, all_text, code

CODE = code(all_text())
ARCH_LIST_HELPER = RECIPE / "cuda_arch_list.py"
ARCH_LISTS = RECIPE / "cuda_arch_lists.txt"


def python_one_liner(marker: str) -> str:
    """The code of the `"%PYTHON%" -c "..."` line containing marker."""
    (line,) = [line for line in CODE if line.startswith('"%PYTHON%" -c') and marker in line]
    return re.match(r'"%PYTHON%" -c "([^"]*)"', line).group(1)


def run_with(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """A one-liner run with this interpreter and ``env`` added to the environment."""
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )


def run_as(code: str, gil_disabled: bool) -> str:
    """A one-liner's output under this interpreter, its sysconfig answering
    ``Py_GIL_DISABLED`` as a free-threaded (``--disable-gil``) build's does when asked to."""
    shim = (
        "import sysconfig; get = sysconfig.get_config_var; "
        "sysconfig.get_config_var = lambda n: 1 if n == 'Py_GIL_DISABLED' else get(n); "
    )
    return subprocess.run(
        [sys.executable, "-c", (shim if gil_disabled else "") + code],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


@pytest.mark.parametrize(
    ("cmake_args", "kept"),
    [
        (
            (
                "-GNinja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=C:/bld/_h_env/Library "
                "-DCMAKE_PROGRAM_PATH=C:/a;C:/b"
            ),
            "-GNinja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PROGRAM_PATH=C:/a;C:/b",
        ),
        ("-DCMAKE_INSTALL_PREFIX:PATH=C:/x -DFOO=1", "-DFOO=1"),
        ("-DCMAKE_INSTALL_PREFIX_EXTRA=1", "-DCMAKE_INSTALL_PREFIX_EXTRA=1"),
        ("", ""),
    ],
    ids=["conda-default", "typed", "longer-name-kept", "empty"],
)
def test_cmake_args_filter_drops_only_condas_install_prefix(cmake_args: str, kept: str) -> None:
    result = run_with(python_one_liner("CMAKE_ARGS"), CMAKE_ARGS=cmake_args)
    assert (result.returncode, result.stdout.strip()) == (0, kept), result.stderr


@pytest.mark.parametrize(("gil_disabled", "suffix"), [(False, ""), (True, "t")])
def test_python_version_probe_prints_major_dot_minor_and_t_when_free_threaded(
    gil_disabled: bool, suffix: str
) -> None:
    code = python_one_liner("_python_version.txt")
    assert run_as(code, gil_disabled) == "{}.{}".format(*sys.version_info[:2]) + suffix


@pytest.mark.parametrize(
    ("variant", "label"),
    [
        ("3.14.* *_cp314t", "3.14t"),
        ("3.14.* *_cp314", "3.14"),
        ("3.13.* *_cp313t", "3.13t"),
        ("3.12.* *_cpython", "3.12"),
        ("3.12", "3.12"),
        ("3.14t", "3.14t"),
    ],
)
def test_the_pytorch_stage_reads_x_y_and_the_t_from_the_python_variant(
    variant: str, label: str
) -> None:
    # As build_common.sh's python_label reads it (tests/e2e/test_cmake_cache_free_threaded.py).
    result = run_with(python_one_liner("_python_label.txt"), CF_TORCH_PYTHON=variant)
    assert (result.returncode, result.stdout.strip()) == (0, label), result.stderr


def test_a_python_variant_naming_no_python_stops_with_one_line_and_status_2() -> None:
    result = run_with(python_one_liner("_python_label.txt"), CF_TORCH_PYTHON="3.x.* *_cp3xt")
    assert result.returncode == 2 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("bld.bat: error: CF_TORCH_PYTHON='3.x.* *_cp3xt' names no Python")


def _wheel_pattern(tag: str) -> str:
    (loop,) = [line for line in CODE if line.startswith("for %%w in (")]
    pattern = re.search(r"\((torch-[^)]+\.whl)\)", loop).group(1)
    return pattern.replace("%PY_WHEEL_TAG%", tag)


def test_the_kept_wheel_is_found_by_this_pythons_wheel_tag_only() -> None:
    # The one-liner is run, and the script's pattern is matched against upstream's
    # Windows wheel names (PyPI, torch 2.13.0 and 2.15.0).
    here = "cp{}{}".format(*sys.version_info[:2])
    assert run_as(python_one_liner("'cp{}{}'"), gil_disabled=False) == f"{here}-{here}"
    cp312 = _wheel_pattern("cp312-cp312")
    assert fnmatch.fnmatchcase("torch-2.15.0-cp312-cp312-win_amd64.whl", cp312)
    assert fnmatch.fnmatchcase("torch-2.13.0+cpu-cp312-cp312-win_amd64.whl", cp312)
    assert not fnmatch.fnmatchcase("torch-2.15.0-cp313-cp313-win_amd64.whl", cp312)


def test_a_free_threaded_python_and_one_with_the_gil_never_take_each_others_wheel() -> None:
    # Upstream tags its free-threaded wheels cp314-cp314t (torch 2.15.0 on PyPI).
    here = "cp{}{}".format(*sys.version_info[:2])
    assert run_as(python_one_liner("'cp{}{}'"), gil_disabled=True) == f"{here}-{here}t"
    gil, free = _wheel_pattern("cp314-cp314"), _wheel_pattern("cp314-cp314t")
    assert fnmatch.fnmatchcase("torch-2.15.0-cp314-cp314t-win_amd64.whl", free)
    assert not fnmatch.fnmatchcase("torch-2.15.0-cp314-cp314t-win_amd64.whl", gil)
    assert not fnmatch.fnmatchcase("torch-2.15.0-cp314-cp314-win_amd64.whl", free)


def test_the_helper_prints_every_win_64_row_of_the_recipes_file() -> None:
    from tools.render.cuda_archs import read_rows

    rows = read_rows(ARCH_LISTS)
    win = sorted(cuda for cuda, platform in rows if platform == "win-64")
    if not win:
        pytest.skip(f"{ARCH_LISTS} has no win-64 row (the feedstock builds no Windows CUDA)")
    for cuda in win:
        result = subprocess.run(
            [sys.executable, str(ARCH_LIST_HELPER), str(ARCH_LISTS), cuda, "win-64"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert result.stdout == rows[(cuda, "win-64")] + "\n", cuda


def test_the_helper_stops_the_build_with_one_error_line_when_no_row_exists() -> None:
    # 0.0: a CUDA version no row can name
    result = subprocess.run(
        [sys.executable, str(ARCH_LIST_HELPER), str(ARCH_LISTS), "0.0", "win-64"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ") and str(ARCH_LISTS) in line and "0.0 win-64" in line
