"""Prefixes laid out as CPython's configure lays out a free-threaded (``--disable-gil``)
3.14t build or one with the GIL, and the CMakeCache.txt a configure against them writes, for
the tests of the megabuild and 3.14t (tests/e2e/test_cmake_cache_free_threaded.py and
test_bld_bat_wine_free_threaded.py; that file's docstring says what each spelling stands for).
"""

from __future__ import annotations

from pathlib import Path

from helpers.recipe_helpers import recipe_module

interpreters = recipe_module("cmake_cache/interpreters")


def lay_out(prefix: Path, abi: str) -> interpreters.PythonFacts:
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
    return interpreters.PythonFacts(
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


def configured_cache(facts: interpreters.PythonFacts) -> str:
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
