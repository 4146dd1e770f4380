"""python.abi: a torch package's Python ABI, told by every record of it, agrees.

CPython 3.14 has two ABIs: the one with the GIL (``cp314``) and the free-threaded one
(``cp314t``, ``Py_GIL_DISABLED``: conda-forge's python314t migration), and neither loads the
other's extensions. A package tells its ABI four ways, and they must agree:

- the extension suffix of its modules: ``torch/_C.cpython-314t-x86_64-linux-gnu.so``,
  ``_C.cp314t-win_amd64.pyd`` (3.14t), ``_C.cpython-314-…`` (3.14);
- its tag: a wheel's name (``cp314-cp314t``), a conda package's ``python_abi`` dependency
  (``python_abi 3.14.* *_cp314t``, from python's run_exports);
- its compiled code: a free-threaded build's ``Py_DECREF`` calls ``_Py_DecRefShared`` and
  ``_Py_MergeZeroLocalRefcount``, which no GIL build has, and the GIL build's calls
  ``_Py_Dealloc`` (upstream's 2.15.0 cp314t ``libtorch_python.so`` imports the first two and
  not the third); on Windows the DLL it imports, ``python314t.dll`` or ``python314.dll``;
- with ``--config``, the Pythons the config builds ``pytorch`` for (``3.14t`` only where the
  migration is in ``.ci_support/migrations/``).
"""

from __future__ import annotations

import re

from tools.check.archive import Package
from tools.check.context import Context, is_torch
from tools.check.findings import Finding, failed
from tools.check.rules import each_package, verdict

CHECK = "python.abi"
IDS = (CHECK,)

# .cpython-314t-x86_64-linux-gnu.so, .cpython-312-darwin.so, .cp314t-win_amd64.pyd
_EXTENSION = re.compile(r"\.(?:cpython-|cp)(\d)(\d+)(t?)-[^/]*\.(?:so|pyd)$")
_TAG = re.compile(r"^cp(\d)(\d+)(t?)$")
_PYTHON_ABI_BUILD = re.compile(r"_cp(\d)(\d+)(t?)$")
_PYTHON_DLL = re.compile(r"(?i)^python(\d)(\d+)(t?)(?:_d)?\.dll$")
# CPython's refcount entry points that inline Py_DECREF calls: only a free-threaded build
# has the first two; a GIL build's Py_DECREF calls the third.
FREE_THREADED_REFCOUNT = ("_Py_DecRefShared", "_Py_MergeZeroLocalRefcount")
GIL_REFCOUNT = ("_Py_Dealloc",)


def describe(abi: str) -> str:
    """``3.14t (free-threaded)``, ``3.14 (with the GIL)``."""
    return f"{abi} ({'free-threaded' if abi.endswith('t') else 'with the GIL'})"


def _abi(match: re.Match[str] | None) -> str | None:
    return f"{match.group(1)}.{match.group(2)}{match.group(3)}" if match else None


def extension_abi(path: str) -> str | None:
    """The Python ABI an extension module's suffix names, or None for any other file."""
    return _abi(_EXTENSION.search(path.rpartition("/")[2]))


def wheel_tag_abi(name: str) -> tuple[str | None, str]:
    """The ABI a wheel's file name is tagged with (``cp314-cp314t``: 3.14t), and the tag."""
    parts = name.removesuffix(".whl").split("-")
    abi = _abi(_TAG.match(parts[-2])) if len(parts) >= 5 else None
    return abi, f"wheel tag {parts[-3]}-{parts[-2]}" if abi else ""


def tagged_abi(package: Package) -> tuple[str | None, str]:
    """The ABI the package is tagged with, and where that tag is."""
    if package.kind == "wheel":
        return wheel_tag_abi(package.source.name)
    for spec in package.depends:
        words = spec.split()
        if words[0] == "python_abi" and len(words) > 2:
            return _abi(_PYTHON_ABI_BUILD.search(words[2])), spec
    return None, ""


def compiled_threading(package: Package, member: str) -> bool | None:
    """True when ``member``'s code was compiled for a free-threaded Python, False for one
    with the GIL, None when it calls none of CPython's refcounting (or is no binary)."""
    elf = package.elves.get(member)
    if elf is not None and elf.python_refcount:
        return any(s in FREE_THREADED_REFCOUNT for s in elf.python_refcount)
    pe = package.pes.get(member)
    if pe is not None:
        for dll in pe.all_imports:
            found = _abi(_PYTHON_DLL.match(dll))
            if found:
                return found.endswith("t")
    return None


def check_python_abi(ctx: Context) -> list[Finding]:
    return each_package(ctx, lambda package: _check(package, ctx), is_torch)


def _check(package: Package, ctx: Context) -> list[Finding]:
    tagged, tag_source = tagged_abi(package)
    extensions = [(m.path, extension_abi(m.path)) for m in package.members]
    extensions = [(path, abi) for path, abi in extensions if abi]
    found = [
        failed(
            CHECK,
            f"{package.label}:{path}",
            f"an extension for Python {describe(abi)} in a package for {describe(tagged)} "
            f"({tag_source}): neither ABI loads the other's extensions",
        )
        for path, abi in extensions
        if tagged and abi != tagged
    ]
    abi = tagged or (extensions[0][1] if extensions else None)
    if abi is None:
        return found
    for member in sorted({*package.elves, *package.pes}):
        free = compiled_threading(package, member)
        if free is not None and free != abi.endswith("t"):
            code = "a free-threaded Python (Py_GIL_DISABLED)" if free else "a Python with the GIL"
            found.append(
                failed(
                    CHECK,
                    f"{package.label}:{member}",
                    f"compiled for {code}, in a package for {describe(abi)} "
                    f"({tag_source or 'its extension suffix'})",
                )
            )
    pythons = [o.python_abi for o in ctx.expect.outputs if o.name == "pytorch" and o.python_abi]
    if ctx.expect.config and pythons and abi not in pythons:
        hint = (
            ": add conda-forge's python314t migration to .ci_support/migrations and run "
            "`python -m tools matrix --write`"
            if abi.endswith("t")
            else ""
        )
        found.append(
            failed(
                CHECK,
                package.label,
                f"a package for Python {describe(abi)}, but config {ctx.expect.config} builds "
                f"pytorch for {', '.join(pythons)}{hint}",
            )
        )
    told = [tag_source] if tag_source else []
    told += [f"extension suffix of {path.rpartition('/')[2]}" for path, _ in extensions]
    built = f"; config {ctx.expect.config} builds it" if ctx.expect.config and pythons else ""
    return verdict(
        CHECK, package, found, f"Python {describe(abi)}: {', '.join(told) or '-'}{built}"
    )
