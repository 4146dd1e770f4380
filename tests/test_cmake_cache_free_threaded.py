"""The megabuild and a free-threaded Python 3.14t: recipe/cmake_cache.py and recipe/build.sh.

No free-threaded interpreter runs on these machines (docs/testing.md, "What the suite needs"),
so the 3.14t side is a prefix laid out as CPython's configure lays out a ``--disable-gil``
build: ABIFLAGS ``t`` and LDVERSION ``3.14t``, hence the headers in ``include/python3.14t``
(whose pyconfig.h defines ``Py_GIL_DISABLED``), ``lib/libpython3.14t.so``, the stdlib and
site-packages under ``lib/python3.14t``, SOABI ``cpython-314t-x86_64-linux-gnu`` (upstream's
cp314t wheel names ``torch/_C.cpython-314t-x86_64-linux-gnu.so``) and no stable ABI (a
free-threaded 3.14 loads no ``.abi3.so``). On Windows the headers stay in ``include/``, the
import library is ``libs/python314t.lib`` and the SOABI ``cp314t-win_amd64``. The caches are
the ones CMake's FindPython, pybind11 and NumPy's lookups write for such prefixes.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from fixtures.minitorch.support import RECIPE_DIR, clean_env
from fixtures.recipe_helpers import CMAKE_CACHE_TOOL, load_cmake_cache

cmake_cache = load_cmake_cache()
BUILD_SH = RECIPE_DIR / "build.sh"
HERE = f"{sys.version_info[0]}.{sys.version_info[1]}"


def lay_out(prefix: Path, abi: str) -> cmake_cache.PythonFacts:
    """A CPython 3.14 prefix of ABI ``abi`` ("" or "t") on disk, and what it reports."""
    ld = f"3.14{abi}"
    files = {
        f"include/python{ld}/Python.h": '#include "pyconfig.h"\n',
        f"include/python{ld}/pyconfig.h": "#define Py_GIL_DISABLED 1\n" if abi else "\n",
        f"lib/libpython{ld}.so": "",
        f"lib/python{ld}/os.py": "",
        f"lib/python{ld}/site-packages/numpy/_core/include/numpy/arrayobject.h": "",
        f"lib/python{ld}/site-packages/pybind11/share/cmake/pybind11/pybind11Config.cmake": "",
        "bin/python": "",
    }
    for rel, text in files.items():
        (prefix / rel).parent.mkdir(parents=True, exist_ok=True)
        (prefix / rel).write_text(text)
    p = str(prefix)
    return cmake_cache.PythonFacts(
        executable=f"{p}/bin/python",
        version=(3, 14, 0),
        prefix=p,
        include_dir=f"{p}/include/python{ld}",
        library=f"{p}/lib/libpython{ld}.so",
        stdlib=f"{p}/lib/python{ld}",
        stdarch=f"{p}/lib/python{ld}",
        sitelib=f"{p}/lib/python{ld}/site-packages",
        sitearch=f"{p}/lib/python{ld}/site-packages",
        soabi=f"cpython-314{abi}-x86_64-linux-gnu",
        sosabi="" if abi else "abi3",
        ext_suffix=f".cpython-314{abi}-x86_64-linux-gnu.so",
        abiflags=abi,
        numpy_include=f"{p}/lib/python{ld}/site-packages/numpy/_core/include",
        numpy_version="2.3.4",
        gil_disabled=bool(abi),
    )


def configured_cache(facts: cmake_cache.PythonFacts) -> str:
    """CMakeCache.txt as FindPython, the legacy modules, pybind11 and NumPy write it."""
    flags = facts.abiflags or "<none>"
    dirs = ";".join((facts.stdlib, facts.stdarch, facts.sitelib, facts.sitearch))
    return f"""\
# This is the CMakeCache file.
########################
# EXTERNAL cache entries
########################
//No help, variable specified on the command line.
USE_CUDA:BOOL=OFF
//A version that merely looks like Python's
LIBFOO_VERSION:STRING=3.14.0
//No help, variable specified on the command line.
Python_EXECUTABLE:FILEPATH={facts.executable}
//The ABI asked of FindPython: debug;pymalloc;unicode;free-threaded
Python_FIND_ABI:STRING=ANY;ANY;ANY;{"ON" if facts.gil_disabled else "OFF"}
//Path to a file.
PYTHON_INCLUDE_DIR:PATH={facts.include_dir}
//Path to a library.
PYTHON_LIBRARY:FILEPATH={facts.library}
//The directory containing a CMake configuration file for pybind11.
pybind11_DIR:PATH={facts.sitelib}/pybind11/share/cmake/pybind11
########################
# INTERNAL cache entries
########################
//Details about finding Python
FIND_PACKAGE_MESSAGE_DETAILS_Python:INTERNAL=[{facts.executable}][{facts.include_dir}]\
[{facts.library}][{facts.numpy_include}][found components: Interpreter Development NumPy ]\
[v3.14.0()]
//pybind11's extension suffix
PYTHON_MODULE_EXTENSION:INTERNAL={facts.ext_suffix}
_Python_DEVELOPMENT_MODULE_SIGNATURE:INTERNAL=236d6a0a4da466a3d4597c4f0c859c2e
//Path to a program.
_Python_EXECUTABLE:INTERNAL={facts.executable}
//Path to a file.
_Python_INCLUDE_DIR:INTERNAL={facts.include_dir}
//Python Properties
_Python_INTERPRETER_PROPERTIES:INTERNAL=Python;3;14;0;64;{flags};{facts.soabi};\
{facts.sosabi};{dirs}
//Path to a library.
_Python_LIBRARY_RELEASE:INTERNAL={facts.library}
//Path to a file.
_Python_NumPy_INCLUDE_DIR:INTERNAL={facts.numpy_include}
"""


def values(text: str) -> dict[str, str]:
    return {e.name: e.value for e in cmake_cache.parse(text).entries}


def retargeted(text: str, facts) -> dict[str, str]:
    return values(cmake_cache.retarget(cmake_cache.parse(text), facts).cache.render())


@pytest.fixture
def prefixes(tmp_path: Path):
    """The same host prefix path for both ABIs, as conda-build recreates it per output."""
    gil = lay_out(tmp_path / "gil" / "_h_env", "")
    free = lay_out(tmp_path / "free" / "_h_env", "t")
    return gil, free


def test_the_laid_out_prefix_is_what_its_facts_name(prefixes) -> None:
    for facts in prefixes:
        for path in (facts.include_dir, facts.library, facts.sitelib, facts.numpy_include):
            assert Path(path).exists(), path
    header = Path(prefixes[1].include_dir, "pyconfig.h").read_text()
    assert "Py_GIL_DISABLED 1" in header


def test_a_314t_cache_says_it_was_configured_for_a_free_threaded_python(prefixes) -> None:
    gil, free = prefixes
    assert cmake_cache.describe_old_python(cmake_cache.parse(configured_cache(free))).abi == (
        "3.14t"
    )
    assert cmake_cache.describe_old_python(cmake_cache.parse(configured_cache(gil))).abi == ("3.14")


def test_retarget_from_the_gil_abi_to_314t_moves_every_abi_spelling(prefixes) -> None:
    gil, free = prefixes
    # Same paths but for the interpreter's own folder, so only the ABI rules can move them.
    free = replace(free, **{k: getattr(free, k).replace("/free/", "/gil/") for k in _PATH_FIELDS})
    new = retargeted(configured_cache(gil), free)
    root = gil.prefix
    include, library = f"{root}/include/python3.14t", f"{root}/lib/libpython3.14t.so"
    assert new["_Python_INCLUDE_DIR"] == new["PYTHON_INCLUDE_DIR"] == include
    assert new["_Python_LIBRARY_RELEASE"] == new["PYTHON_LIBRARY"] == library
    assert new["PYTHON_MODULE_EXTENSION"] == ".cpython-314t-x86_64-linux-gnu.so"
    assert new["pybind11_DIR"] == (
        f"{root}/lib/python3.14t/site-packages/pybind11/share/cmake/pybind11"
    )
    assert new["_Python_INTERPRETER_PROPERTIES"].split(";")[4:8] == [
        "64",
        "t",
        "cpython-314t-x86_64-linux-gnu",
        "",
    ]
    assert new["Python_FIND_ABI"] == "ANY;ANY;ANY;ON"
    assert "python3.14/" not in new["FIND_PACKAGE_MESSAGE_DETAILS_Python"]
    assert new["LIBFOO_VERSION"] == "3.14.0"


_PATH_FIELDS = (
    "executable",
    "prefix",
    "include_dir",
    "library",
    "stdlib",
    "stdarch",
    "sitelib",
    "sitearch",
    "numpy_include",
)


def test_retarget_to_314t_and_back_restores_every_value(prefixes) -> None:
    gil, free = prefixes
    text = configured_cache(gil)
    there = cmake_cache.retarget(cmake_cache.parse(text), free).cache
    # FindPython's signatures hash the old find state: dropped, the next configure remakes them
    assert unsigned(there.render()) == unsigned(configured_cache(free))
    assert unsigned(cmake_cache.retarget(there, gil).cache.render()) == unsigned(text)


def unsigned(text: str) -> dict[str, str]:
    return {k: v for k, v in values(text).items() if not k.endswith("_SIGNATURE")}


W = "C:/bld/libtorch_1763/_h_env"


def _windows_cache(lib: str, soabi: str, tag: str) -> str:
    return (
        f"Python_EXECUTABLE:FILEPATH={W}/python.exe\n"
        f"PYTHON_WHEEL_TAG:INTERNAL={tag}-win_amd64\n"
        f"_Python_INCLUDE_DIR:INTERNAL={W}/include\n"
        f"_Python_INTERPRETER_PROPERTIES:INTERNAL=Python;3;14;0;64;<none>;{soabi};;"
        f"{W}/Lib;{W}/Lib;{W}/Lib/site-packages;{W}/Lib/site-packages\n"
        f"_Python_LIBRARY_RELEASE:INTERNAL={W}/libs/{lib}\n"
    )


def test_windows_314t_takes_python314t_lib_its_soabi_and_keeps_include(prefixes) -> None:
    win = "C:\\bld\\libtorch_1763\\_h_env"
    free = cmake_cache.PythonFacts(
        executable=f"{win}\\python.exe",
        version=(3, 14, 0),
        prefix=win,
        include_dir=f"{win}\\include",
        library=f"{win}\\libs\\python314t.lib",
        stdlib=f"{win}\\Lib",
        stdarch=f"{win}\\Lib",
        sitelib=f"{win}\\Lib\\site-packages",
        sitearch=f"{win}\\Lib\\site-packages",
        soabi="cp314t-win_amd64",
        ext_suffix=".cp314t-win_amd64.pyd",
        abiflags="t",
        gil_disabled=True,
    )
    new = retargeted(_windows_cache("python314.lib", "cp314-win_amd64", "cp314-cp314"), free)
    assert new["_Python_LIBRARY_RELEASE"] == f"{W}/libs/python314t.lib"
    assert new["PYTHON_WHEEL_TAG"] == "cp314-cp314t-win_amd64"
    assert new["_Python_INCLUDE_DIR"] == f"{W}/include"
    assert new["_Python_INTERPRETER_PROPERTIES"].split(";")[5:7] == ["t", "cp314t-win_amd64"]
    old = cmake_cache.describe_old_python(
        cmake_cache.parse(_windows_cache("python314t.lib", "cp314t-win_amd64", "cp314-cp314t"))
    )
    assert old.abi == "3.14t"


def _check_abi(cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, CMAKE_CACHE_TOOL, "check-abi", cache, "--python", sys.executable],
        capture_output=True,
        text=True,
        check=False,
    )


def test_check_abi_refuses_a_314t_tree_for_a_gil_python_in_one_line(prefixes, tmp_path) -> None:
    cache = tmp_path / "CMakeCache.txt"
    cache.write_text(configured_cache(prefixes[1]))
    before = cache.read_bytes()
    result = _check_abi(cache)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("cmake_cache.py: error: ")
    assert f"{cache}: the tree is configured for Python 3.14t" in line
    assert f"is Python {HERE} (with the GIL)" in line and "Py_GIL_DISABLED" in line
    assert cache.read_bytes() == before


def test_check_abi_accepts_a_gil_tree_of_another_version(prefixes, tmp_path) -> None:
    cache = tmp_path / "CMakeCache.txt"
    cache.write_text(configured_cache(prefixes[0]))
    result = _check_abi(cache)
    assert result.returncode == 0, result.stderr


# ---------------------------------------------------------------- build.sh


def free_threaded_python(tmp_path: Path) -> Path:
    """A stand-in for a free-threaded CPython of this machine's X.Y: this interpreter, with
    ``sysconfig.get_config_var("Py_GIL_DISABLED")`` answering 1 as a ``--disable-gil``
    build's does. build.sh asks an interpreter only ``-c CODE`` questions; this answers
    them all, so what build.sh decides from the answer is what it decides for 3.14t."""
    exe = tmp_path / "free-threaded" / "bin" / "python"
    exe.parent.mkdir(parents=True)
    shim = (
        "import sys, sysconfig; get = sysconfig.get_config_var; "
        "sysconfig.get_config_var = lambda n: 1 if n == 'Py_GIL_DISABLED' else get(n); "
        "code = sys.argv[1]; sys.argv = ['-c', *sys.argv[2:]]; exec(compile(code, '-c', 'exec'))"
    )
    exe.write_text(
        "#!/bin/sh\n"
        '[ "$1" = -c ] || { echo "stand-in: only -c CODE" >&2; exit 2; }\n'
        f'shift; exec "{sys.executable}" -c "{shim}" "$@"\n'
    )
    exe.chmod(0o755)
    return exe


def run_step(tmp_path: Path, step: str, python: Path | str = sys.executable, **env: str):
    (tmp_path / "src").mkdir(exist_ok=True)
    (tmp_path / "prefix").mkdir(exist_ok=True)
    full = clean_env(
        **{"CF_TORCH_BUILD_STAGE": "pytorch", **env},
        PKG_VERSION="0",
        SRC_DIR=str(tmp_path / "src"),
        PREFIX=str(tmp_path / "prefix"),
        RECIPE_DIR=str(RECIPE_DIR),
        PYTHON=str(python),
        target_platform="linux-64",
        SHLIB_EXT=".so",
    )
    return subprocess.run(
        ["bash", "-c", f'source "{BUILD_SH}" && {step}'],
        env=full,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(
    ("wanted", "found"),
    [("3.14", "cp314-cp314-"), ("3.14t", "cp314-cp314t-"), ("3.13", None)],
)
def test_the_megabuild_wheel_of_one_abi_is_never_the_others(tmp_path, wanted, found) -> None:
    wheels = tmp_path / "src" / "_stage" / "megabuild-wheel"
    wheels.mkdir(parents=True)
    for tag in ("cp314-cp314t", "cp314-cp314"):
        (wheels / f"torch-2.13.0-{tag}-linux_x86_64.whl").write_text(tag)
    result = run_step(tmp_path, f"megabuild_wheel_for {wanted}")
    assert result.returncode == 0, result.stderr
    chosen = result.stdout.strip()
    assert (found in Path(chosen).name) if found else chosen == "", chosen


def test_the_314t_wheel_alone_is_not_taken_by_a_314_output(tmp_path) -> None:
    wheels = tmp_path / "src" / "_stage" / "megabuild-wheel"
    wheels.mkdir(parents=True)
    (wheels / "torch-2.13.0-cp314-cp314t-linux_x86_64.whl").write_text("t")
    assert run_step(tmp_path, "megabuild_wheel_for 3.14").stdout == ""


def test_python_is_tells_a_free_threaded_python_from_one_with_the_gil(tmp_path) -> None:
    free = free_threaded_python(tmp_path)
    refused = run_step(tmp_path, f"python_is CF_TORCH_PYTHON {HERE}", python=free)
    assert refused.returncode == 2
    assert f"is Python {HERE}t but CF_TORCH_PYTHON='{HERE}'" in refused.stderr
    assert run_step(tmp_path, f"python_is CF_TORCH_PYTHON {HERE}t", python=free).returncode == 0
    gil = run_step(tmp_path, f"python_is CF_TORCH_PYTHON {HERE}t")
    assert gil.returncode == 2 and f"is Python {HERE} but CF_TORCH_PYTHON='{HERE}t'" in gil.stderr


_STUBS = (
    "; ".join(
        f"{name}() {{ :; }}"
        for name in (
            "require_linkage_tool",
            "detect_build_backend",
            "use_compiler_cache",
            "backend_settings",
        )
    )
    + "; is_linux_cuda() { return 1; }; compile_tree() { echo COMPILING; }"
)


def test_the_core_never_compiles_against_a_free_threaded_megabuild_python(tmp_path) -> None:
    free = free_threaded_python(tmp_path)
    step = f"{_STUBS}; CF_TORCH_MEGABUILD_PYTHON={HERE} compile_libtorch"
    result = run_step(tmp_path, step, python=free, CF_TORCH_BUILD_STAGE="compile")
    assert result.returncode == 2
    assert "COMPILING" not in result.stdout
    [line] = result.stderr.splitlines()
    assert f"is Python {HERE}t but CF_TORCH_MEGABUILD_PYTHON='{HERE}'" in line


def test_the_compile_stage_refuses_a_kept_tree_a_314t_output_retargeted(prefixes, tmp_path):
    build = tmp_path / "src" / "build"
    build.mkdir(parents=True)
    (build / "CMakeCache.txt").write_text(configured_cache(prefixes[1]))
    step = f"{_STUBS}; CF_TORCH_MEGABUILD_PYTHON={HERE} compile_libtorch"
    result = run_step(tmp_path, step, CF_TORCH_BUILD_STAGE="compile")
    assert result.returncode == 2
    assert "COMPILING" not in result.stdout
    [line] = result.stderr.splitlines()
    assert line.startswith(f"build.sh: error: {build / 'CMakeCache.txt'}: the tree is configured")
    assert "3.14t" in line and f"megabuild Python ({HERE}) only" in line


def test_a_pytorch_output_without_its_python_stops_naming_the_recipe(tmp_path) -> None:
    build = tmp_path / "src" / "build"
    build.mkdir(parents=True)
    (build / "CMakeCache.txt").write_text("USE_CUDA:BOOL=OFF\n")
    result = run_step(tmp_path, "build_pytorch", SP_DIR=str(tmp_path / "sp"), PY_VER=HERE)
    assert result.returncode == 2
    assert "CF_TORCH_PYTHON is not set" in result.stderr and "recipe/meta.yaml" in result.stderr
