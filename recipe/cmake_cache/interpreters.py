"""What a configured cache and a live interpreter say about Python.

Part of recipe/cmake_cache; standard library only. ``python_facts`` asks an interpreter
about itself; ``describe_old_python`` reads, from a cache, the interpreter it was configured
for (under conda-build that interpreter's environment is gone); ``is_python_name`` tells the
entries FindPython, the legacy modules, pybind11, NumPy and scikit-build-core write.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass

from cache_file import Cache, CacheError

# --------------------------------------------------------------------------
# Python facts
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class PythonFacts:
    """What a CMake configure records about one interpreter."""

    executable: str
    version: tuple[int, int, int]
    prefix: str = ""
    include_dir: str = ""
    library: str = ""
    stdlib: str = ""
    stdarch: str = ""
    sitelib: str = ""
    sitearch: str = ""
    soabi: str = ""
    sosabi: str = ""
    ext_suffix: str = ""
    abiflags: str = ""
    pointer_bits: int = 64
    numpy_include: str | None = None
    numpy_version: str | None = None
    # What scikit-build-core's Python hints record: <P>_ROOT_DIR (sys.base_exec_prefix),
    # and the directory of the scikit_build_core it would run from ("" without one).
    base_prefix: str = ""
    skbuild_path: str = ""
    # A free-threaded interpreter (PEP 703): Py_GIL_DISABLED in its pyconfig.h, ABI flag t
    # (cpython-314t-…, include/python3.14t, libpython3.14t.so, python314t.lib). It cannot
    # load an extension built for the GIL ABI, nor the other way round.
    gil_disabled: bool = False

    @property
    def short(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"

    @property
    def abi(self) -> str:
        """``3.14t`` for a free-threaded interpreter, ``3.14`` for one with the GIL."""
        return self.short + ("t" if self.gil_disabled else "")

    @property
    def full(self) -> str:
        return ".".join(map(str, self.version))


_FACTS_SCRIPT = r"""
import importlib.machinery, json, os, sys, sysconfig
var = sysconfig.get_config_var
paths = sysconfig.get_paths()
ext = var("EXT_SUFFIX") or ""
soabi = var("SOABI") or (ext.split(".")[1] if ext.count(".") >= 2 else "")
gil_disabled = bool(var("Py_GIL_DISABLED"))
# Windows has no sys.abiflags before 3.14; its free-threaded build is still the t ABI.
abiflags = getattr(sys, "abiflags", "") or ("t" if gil_disabled else "")
# FindPython's SOSABI: the stable-ABI suffix this interpreter loads (".abi3.so" -> "abi3").
sosabi = next((s[1:].rsplit(".", 1)[0] for s in importlib.machinery.EXTENSION_SUFFIXES
               if s.startswith(".abi")), "")
if os.name == "nt":
    library = os.path.join(sys.base_prefix, "libs", "python%d%d%s.lib"
                           % (sys.version_info[0], sys.version_info[1],
                              "t" if gil_disabled else ""))
else:
    libdir, ldlibrary = var("LIBDIR"), var("LDLIBRARY")
    library = os.path.join(libdir, ldlibrary) if libdir and ldlibrary else ""
try:
    import numpy
    numpy_include, numpy_version = numpy.get_include(), numpy.__version__
except Exception:
    numpy_include = numpy_version = None
try:
    # scikit_build_core/cmake.py's DIR: the package directory, symlinks resolved.
    import pathlib, scikit_build_core
    skbuild_path = str(pathlib.Path(scikit_build_core.__file__).parent.resolve())
except Exception:
    skbuild_path = ""
json.dump({
    "version": list(sys.version_info[:3]),
    "prefix": sys.prefix,
    "include_dir": paths["include"],
    "library": library,
    "stdlib": paths["stdlib"],
    "stdarch": paths["platstdlib"],
    "sitelib": paths["purelib"],
    "sitearch": paths["platlib"],
    "soabi": soabi,
    "sosabi": sosabi,
    "ext_suffix": ext,
    "abiflags": abiflags,
    "pointer_bits": 64 if sys.maxsize > 2**32 else 32,
    "numpy_include": numpy_include,
    "numpy_version": numpy_version,
    "base_prefix": sys.base_exec_prefix,
    "skbuild_path": skbuild_path,
    "gil_disabled": gil_disabled,
}, sys.stdout)
"""


def python_facts(executable: str | os.PathLike[str]) -> PythonFacts:
    """Ask ``executable`` about itself. The path is kept as given (not resolved):
    a venv's ``bin/python`` is a symlink whose target knows nothing of the venv."""
    exe = os.path.abspath(os.fspath(executable))
    try:
        proc = subprocess.run(
            [exe, "-c", _FACTS_SCRIPT], capture_output=True, text=True, timeout=120, check=False
        )
    except OSError as exc:
        raise CacheError(f"cannot run the interpreter: {exc.strerror or exc}", exe) from None
    except subprocess.TimeoutExpired:
        raise CacheError("the interpreter did not answer within 120 s", exe) from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise CacheError(f"the interpreter failed: {last}", exe)
    try:
        raw = json.loads(proc.stdout)
        return PythonFacts(executable=exe, version=tuple(raw.pop("version")), **raw)
    except (ValueError, TypeError, KeyError) as exc:
        raise CacheError(f"unexpected answer from the interpreter: {exc}", exe) from None


# --------------------------------------------------------------------------
# Retargeting
# --------------------------------------------------------------------------

_PYTHON_NAME = re.compile(
    r"^(?:_?Python\d?_|PYTHON_|PythonInterp_|PythonLibs_|PYTHONLIBS_|PYTHONINTERP_"
    r"|pybind11_|PYBIND11_|NUMPY_|NumPy_|Numpy_|TORCH_PYTHON_"
    r"|FIND_PACKAGE_MESSAGE_DETAILS_(?:Python|PYTHON|pybind11|NumPy|NUMPY)"
    # scikit-build-core's: the extension suffix it computed for this interpreter. Its other
    # SKBUILD_* entries (project name and version, wheel directories) are not Python's and
    # it sets them again on every configure.
    r"|SKBUILD_SOABI$)"
)
SIGNATURE_NAME = re.compile(r"^_Python\d?_\w*SIGNATURE$")
PROPERTIES_NAME = re.compile(r"^_(Python\d?)_INTERPRETER_PROPERTIES$")
EXECUTABLE_NAME = re.compile(
    r"^(?:_?Python\d?_EXECUTABLE|PYTHON_EXECUTABLE"
    r"|PYBIND11_PYTHON_EXECUTABLE_LAST)$"
)
_INCLUDE = re.compile(r"^(?:_?Python\d?_INCLUDE_DIRS?|PYTHON_INCLUDE_(?:DIRS?|PATH))$")
_LIBRARY = re.compile(
    r"^(?:_?Python\d?_LIBRAR(?:Y|IES)(?:_RELEASE)?"
    r"|PYTHON_LIBRAR(?:Y|IES)(?:_RELEASE)?)$"
)
_LIBRARY_FILE = re.compile(r"(?i)python[\d.]*[a-z]?\.(?:so|dylib|a|lib|dll)(?:\.[\d.]+)?$")
_NUMPY_INCLUDE = re.compile(
    r"^(?:_?Python\d?_NumPy_INCLUDE_DIRS?|NUMPY_INCLUDE_DIRS?"
    r"|NumPy_INCLUDE_DIRS?|Python\d?_NumPyINCLUDE_DIR)$"
)
# scikit-build-core's hint: the interpreter's sys.base_exec_prefix.
_ROOT_DIR = re.compile(r"^_?Python\d?_ROOT_DIR$")
_VERSION_IN_TEXT = (
    re.compile(r"\[v(\d+)\.(\d+)\.(\d+)"),  # FIND_PACKAGE_MESSAGE_DETAILS
    re.compile(r"python(\d)\.(\d+)(?!\d)"),  # include dirs, libpython3.12.so
    re.compile(r"(?i)python(\d)(\d\d?)(?:t|d|_d)?\.lib"),  # Windows import library
    re.compile(r"cpython-(\d)(\d\d?)"),
)


def is_python_name(name: str) -> bool:
    return bool(_PYTHON_NAME.match(name))


@dataclass(frozen=True)
class OldPython:
    """The interpreter a cache was configured for, as far as the cache tells."""

    version: tuple[int, ...]
    executables: tuple[str, ...]
    include_dirs: tuple[str, ...]
    libraries: tuple[str, ...]
    numpy_includes: tuple[str, ...]
    install_dirs: tuple[str, ...]  # stdlib, stdarch, sitelib, sitearch
    root_dirs: tuple[str, ...] = ()
    soabi: str = ""
    ext_suffix: str = ""
    gil_disabled: bool = False

    @property
    def abi(self) -> str:
        """``3.14t`` for a tree configured for a free-threaded Python, else ``3.14``."""
        return f"{self.version[0]}.{self.version[1]}" + ("t" if self.gil_disabled else "")


def _values(cache: Cache, pattern: re.Pattern[str]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for entry in cache.entries:
        if pattern.match(entry.name) and entry.value and not entry.value.endswith("-NOTFOUND"):
            for item in entry.value.split(";"):
                if item:
                    seen.setdefault(item, None)
    return tuple(seen)


def describe_old_python(cache: Cache) -> OldPython:
    python_entries = [e for e in cache.entries if is_python_name(e.name)]
    if not python_entries:
        raise CacheError(
            "has no Python entries (Python_*, PYTHON_*, pybind11_*); "
            "is this the cache of a build tree configured with Python?",
            cache.source,
        )
    version: tuple[int, ...] = ()
    install_dirs: tuple[str, ...] = ()
    soabi = ""
    abiflags = ""
    for entry in python_entries:
        if PROPERTIES_NAME.match(entry.name):
            fields = entry.value.split(";")
            if len(fields) >= 4 and all(f.isdigit() for f in fields[1:4]):
                version = tuple(int(f) for f in fields[1:4])
            if len(fields) >= 12:
                abiflags = "" if fields[5] == "<none>" else fields[5]
                soabi = fields[6]
                install_dirs = tuple(f for f in fields[8:12] if f)
    if not version:
        for entry in python_entries:
            if re.fullmatch(
                r"_?Python\d?_VERSION|PYTHON_VERSION_STRING|PYBIND11_PYTHON_VERSION", entry.name
            ):
                numbers = re.findall(r"\d+", entry.value)
                if len(numbers) >= 2:
                    version = tuple(int(n) for n in numbers[:3])
                    break
    if not version:
        for pattern in _VERSION_IN_TEXT:
            for entry in python_entries:
                found = pattern.search(entry.value)
                if found:
                    version = tuple(int(g) for g in found.groups())
                    break
            if version:
                break
    if not version:
        raise CacheError(
            "has Python entries but none tells the Python version "
            "(no _Python_INTERPRETER_PROPERTIES, Python_VERSION or python3.X path)",
            cache.source,
        )
    extension = cache.get("PYTHON_MODULE_EXTENSION")  # pybind11's, e.g. .cpython-312-….so
    ext_suffix = extension.value if extension is not None else ""
    if not soabi:
        for entry in python_entries:
            if entry.name in ("Python_SOABI", "Python3_SOABI", "SKBUILD_SOABI"):
                soabi = entry.value
        if not soabi and ext_suffix.count(".") >= 2:
            soabi = ext_suffix.split(".")[1]
    include_dirs = _values(cache, _INCLUDE)
    # Only real library files: PyTorch's older CMake seeded PYTHON_LIBRARY with the
    # stdlib directory, which the path and version rules below handle.
    libraries = tuple(v for v in _values(cache, _LIBRARY) if _LIBRARY_FILE.search(v))
    return OldPython(
        version=version,
        executables=_values(cache, EXECUTABLE_NAME),
        include_dirs=include_dirs,
        libraries=libraries,
        numpy_includes=_values(cache, _NUMPY_INCLUDE),
        install_dirs=install_dirs,
        root_dirs=_values(cache, _ROOT_DIR),
        soabi=soabi,
        ext_suffix=ext_suffix,
        gil_disabled="t" in abiflags
        or any(_FREE_THREADED.search(v) for v in (soabi, ext_suffix, *include_dirs, *libraries)),
    )


# How a free-threaded Python's ABI shows in the spellings a cache records: its SOABI and
# extension suffix (cpython-314t-…, cp314t-win_amd64), include dir (python3.14t) and library
# (libpython3.14t.so, python314t.lib); FindPython's abiflags field is read above.
_FREE_THREADED = re.compile(r"(?i)(?:cpython-\d{3,}t\b|\bcp\d{3,}t-|python\d\.?\d+t(?![a-z]))")
