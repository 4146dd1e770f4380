"""The megabuild and a free-threaded Python 3.14t: recipe/cmake_cache and recipe/build.sh.

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
from helpers.free_threaded_cache import configured_cache, lay_out
from helpers.minitorch.support import RECIPE_DIR, clean_env
from helpers.recipe_helpers import CMAKE_CACHE, recipe_module

cache_file = recipe_module("cmake_cache/cache_file")
interpreters = recipe_module("cmake_cache/interpreters")
retarget = recipe_module("cmake_cache/retarget").retarget
BUILD_SH = RECIPE_DIR / "build.sh"
HERE = f"{sys.version_info[0]}.{sys.version_info[1]}"


def values(text: str) -> dict[str, str]:
    return {e.name: e.value for e in cache_file.parse(text).entries}


def retargeted(text: str, facts) -> dict[str, str]:
    return values(retarget(cache_file.parse(text), facts).cache.render())


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
    assert interpreters.describe_old_python(cache_file.parse(configured_cache(free))).abi == (
        "3.14t"
    )
    assert interpreters.describe_old_python(cache_file.parse(configured_cache(gil))).abi == ("3.14")


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
    there = retarget(cache_file.parse(text), free).cache
    # FindPython's signatures hash the old find state: dropped, the next configure remakes them
    assert unsigned(there.render()) == unsigned(configured_cache(free))
    assert unsigned(retarget(there, gil).cache.render()) == unsigned(text)


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
    free = interpreters.PythonFacts(
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
    old = interpreters.describe_old_python(
        cache_file.parse(_windows_cache("python314t.lib", "cp314t-win_amd64", "cp314-cp314t"))
    )
    assert old.abi == "3.14t"


def _check_abi(cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, CMAKE_CACHE, "check-abi", cache, "--python", sys.executable],
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


@pytest.mark.parametrize(
    ("variant", "free", "refusal"),
    [
        (f"{HERE}.* *_cp{HERE.replace('.', '')}t", True, None),
        (
            f"{HERE}.* *_cp{HERE.replace('.', '')}t",
            False,
            f"is Python {HERE} but CF_TORCH_PYTHON='{HERE}t'",
        ),
        (f"{HERE}.* *_cpython", False, None),
        (f"{HERE}.* *_cpython", True, f"is Python {HERE}t but CF_TORCH_PYTHON='{HERE}'"),
        ("3.x.* *_cp3xt", False, "CF_TORCH_PYTHON='3.x.* *_cp3xt' names no Python"),
    ],
    ids=["free-threaded", "free-threaded-on-gil", "gil", "gil-on-free-threaded", "no-python"],
)
def test_the_pytorch_stage_reads_x_y_and_the_t_from_the_python_variant(
    tmp_path, variant, free, refusal
) -> None:
    # Both recipes pass the python variant as it is (CF_TORCH_PYTHON={{ python }}): the
    # stage decides the t from its build string and holds $PYTHON to it before anything else.
    build = tmp_path / "src" / "build"
    build.mkdir(parents=True)
    (build / "CMakeCache.txt").write_text("USE_CUDA:BOOL=OFF\n")
    step = (
        'check_cached_compiler_cache() { echo "CHECKED $CF_TORCH_PYTHON"; exit 0; }; build_pytorch'
    )
    python = free_threaded_python(tmp_path) if free else sys.executable
    result = run_step(
        tmp_path, step, python=python, CF_TORCH_PYTHON=variant, SP_DIR=str(tmp_path), PY_VER=HERE
    )
    if refusal is None:
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == f"CHECKED {HERE}{'t' if free else ''}"
    else:
        assert result.returncode == 2
        [line] = result.stderr.splitlines()
        assert line.startswith("build.sh: error: ") and refusal in line


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
