"""The Windows rules, on every PE file (DLL, .pyd, .exe) of a win-64 package or wheel.

Each rule is one check (``pe.machine``, ``pe.imports``, ``pe.crt``); docs/check.md gives
each its reason and source: conda-build's post-processing (every imported DLL traced to the
package, a dependency or the system, its list of system DLLs), Microsoft's documentation of
the DLL search order, of the Universal CRT and of which Visual C++ DLLs may be redistributed
(never the debug ones), and PyTorch's ``check_binary``.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from tools.check.archive import Package
from tools.check.context import Context
from tools.check.findings import Finding, failed, machine_findings, member_path
from tools.check.providers import dependency_names, providers_of
from tools.check.readers.binary import Binary
from tools.check.rules import each_package, verdict
from tools.check.rules.linked import RESOLVED, Resolved, Resolver, Unresolved
from tools.check.tree import Tree

if TYPE_CHECKING:  # pefile is imported only where a PE file is read
    from tools.check.readers.pe import PeInfo

MACHINE = "pe.machine"
IMPORTS = "pe.imports"
CRT = "pe.crt"
IDS = (MACHINE, IMPORTS, CRT)

# conda subdir -> the machine its PE files must have (pefile's IMAGE_FILE_MACHINE_ names)
SUBDIR_MACHINES = {"win-64": "AMD64", "win-arm64": "ARM64", "win-32": "I386"}

# Windows' own DLLs (lower case): the API sets, and the system DLLs conda-build's overlinking
# check accepts on Windows plus those torch and its dependencies import (nvcuda: the driver's).
SYSTEM_PATTERNS = ("api-ms-win-*.dll", "ext-ms-win-*.dll")
SYSTEM_DLLS = frozenset(
    {
        "advapi32.dll",
        "bcrypt.dll",
        "cfgmgr32.dll",
        "comctl32.dll",
        "comdlg32.dll",
        "crypt32.dll",
        "d3d11.dll",
        "d3d12.dll",
        "dbghelp.dll",
        "dnsapi.dll",
        "dxgi.dll",
        "gdi32.dll",
        "imagehlp.dll",
        "imm32.dll",
        "iphlpapi.dll",
        "kernel32.dll",
        "kernelbase.dll",
        "mswsock.dll",
        "ncrypt.dll",
        "netapi32.dll",
        "ntdll.dll",
        "nvcuda.dll",
        "ole32.dll",
        "oleaut32.dll",
        "opengl32.dll",
        "powrprof.dll",
        "psapi.dll",
        "rpcrt4.dll",
        "secur32.dll",
        "setupapi.dll",
        "shell32.dll",
        "shlwapi.dll",
        "user32.dll",
        "userenv.dll",
        "version.dll",
        "winhttp.dll",
        "wininet.dll",
        "winmm.dll",
        "wintrust.dll",
        "ws2_32.dll",
        "wsock32.dll",
    }
)
# The Universal CRT: part of Windows 10 and later (conda-forge's ucrt package before that).
UCRT = ("ucrtbase.dll",)
# The Visual C++ runtime's redistributable DLLs, which conda-forge's vc14_runtime ships.
VC_RUNTIME = re.compile(
    r"^(?:vcruntime140(?:_1|_threads)?|msvcp140(?:_\d|_atomic_wait|_codecvt_ids)?"
    r"|concrt140|vccorlib140|vcomp140)\.dll$"
)
VC_RUNTIME_PACKAGES = ("vc14_runtime", "vc")
# Their debug builds (a trailing d), and the debug UCRT: Microsoft's licence does not let
# them be redistributed and no user's machine has them.
DEBUG_CRT = re.compile(
    r"^(?:(?:vcruntime\d+(?:_1|_threads)?|msvcp\d+(?:_\w+?)?|concrt\d+|vccorlib\d+|vcomp\d+"
    r"|msvcr(?:t|\d+))d|ucrtbased)\.dll$"
)
# msvcrt.dll (the C runtime MinGW links by default) and the pre-2015 Visual C++ runtimes:
# each is a C runtime of its own (heap, FILE*, errno), not the UCRT the rest of the
# environment shares.
OLD_CRT = re.compile(r"^msvcr(?:t|\d+)\.dll$")
# The interpreter's own DLL, already loaded when Python imports a module that links it.
PYTHON_DLL = re.compile(r"^python3\d*\.dll$")


def _is_crt(name: str) -> bool:
    return bool(
        name in UCRT or VC_RUNTIME.match(name) or DEBUG_CRT.match(name) or OLD_CRT.match(name)
    )


def is_system(name: str) -> bool:
    folded = name.lower()
    return folded in SYSTEM_DLLS or any(fnmatch.fnmatchcase(folded, p) for p in SYSTEM_PATTERNS)


def check_machine(ctx: Context) -> list[Finding]:
    return each_package(
        ctx,
        lambda package: machine_findings(
            MACHINE,
            package.label,
            package.subdir,
            {path: info.machine for path, info in package.pes.items()},
            SUBDIR_MACHINES[package.subdir],
            "PE",
        ),
        lambda package: package.subdir in SUBDIR_MACHINES and package.pes,
    )


def search_dirs(package: Package, member: str, tree: Tree) -> set[str]:
    """Where Windows finds a DLL this file imports, inside an environment: the importer's own
    folder (the loader searches it first for a DLL loaded with its full path, as Python loads
    extension modules), ``Library/bin`` (on PATH in an activated environment, and what
    conda-forge's Python adds with os.add_dll_directory), and ``torch/lib``, which
    torch/__init__.py adds with os.add_dll_directory before it loads torch._C."""
    dirs = {posixpath.dirname(member), "Library/bin"}
    dirs.update(
        posixpath.dirname(p)
        for p in tree.named_nocase("torch_cpu.dll") + tree.named_nocase("c10.dll")
        if posixpath.dirname(p).endswith("torch/lib")
    )
    return dirs


class PeLinker:
    """pe.imports (rules/linked.py): every imported (and delay-loaded) DLL is in the package,
    a run dependency's or the system's; the C runtime's DLLs are pe.crt's business."""

    check = IMPORTS

    def files(self, package: Package) -> Mapping[str, PeInfo]:
        return package.pes

    def binaries(self, package: Package) -> Iterator[tuple[str, str, PeInfo]]:
        for path, info in sorted(package.pes.items()):
            yield path, member_path(package.label, path), info

    def resolver(self, ctx: Context, package: Package) -> Resolver:
        tree = ctx.tree_for(package)
        deps = dependency_names(package)
        dirs_of: dict[str, set[str]] = {}

        def resolve(member: str, binary: Binary, name: str) -> Resolved | Unresolved:
            folded = name.lower()
            if _is_crt(folded) or is_system(folded):
                return RESOLVED
            if PYTHON_DLL.match(folded) and package.kind == "wheel":
                return RESOLVED
            if member not in dirs_of:
                dirs_of[member] = search_dirs(package, member, tree)
            dirs = dirs_of[member]
            if any(
                posixpath.dirname(p) in dirs and tree.resolve(p) for p in tree.named_nocase(name)
            ):
                return RESOLVED
            providers = providers_of(name, windows=True)
            provided = sorted(deps.intersection(providers))
            if provided:
                return Resolved(deps=tuple(provided))
            elsewhere = [p for p in tree.named_nocase(name) if tree.resolve(p)]
            if elsewhere:
                why = (
                    f"imports {name}, which is at {elsewhere[0]}, outside the folders "
                    f"Windows searches for it ({', '.join(sorted(dirs))})"
                )
            elif providers:
                why = (
                    f"imports {name}, which comes from {' or '.join(providers)}, "
                    "not a run dependency"
                )
            else:
                why = (
                    f"imports {name}, which nothing provides: not in the packages, not a "
                    "system DLL, no known provider among the run dependencies"
                )
            return Unresolved("fail", why)

        return resolve

    def all_resolve(self, files: int, deps: list[str], wheels: str) -> str:
        via = f"; from run dependencies: {', '.join(deps)}" if deps else ""
        return f"every DLL that {files} PE files import resolves{via}"


LINKER = PeLinker()


def check_crt(ctx: Context) -> list[Finding]:
    """The C runtime is the UCRT plus vc14_runtime's DLLs: never a debug build, never
    msvcrt.dll or an older Visual C++ runtime, and vc14_runtime a run dependency of a conda
    package that imports its DLLs (a wheel relies on the Visual C++ redistributable, which
    PyTorch's Windows install instructions require)."""
    return each_package(ctx, _crt, lambda package: package.pes)


def _crt(package: Package) -> list[Finding]:
    deps = dependency_names(package)
    has_vc = any(name in deps for name in VC_RUNTIME_PACKAGES)
    problems = []
    vc_used = False
    for path, info in sorted(package.pes.items()):
        where = member_path(package.label, path)
        for name in info.all_imports:
            folded = name.lower()
            why = None
            if DEBUG_CRT.match(folded):
                why = (
                    f"imports {name}, a debug C runtime: not redistributable and absent "
                    "from users' machines (a Debug build, or /MDd)"
                )
            elif OLD_CRT.match(folded):
                why = (
                    f"imports {name}, a C runtime other than the UCRT (MinGW's default, or "
                    "a pre-2015 compiler): its heap and FILE* are not the ones the other "
                    "DLLs share"
                )
            elif VC_RUNTIME.match(folded):
                vc_used = True
                if package.kind == "conda" and not has_vc:
                    why = f"imports {name}, from vc14_runtime, which is not a run dependency"
            if why:
                problems.append(failed(CRT, where, why))
    via = " and vc14_runtime" if vc_used else ""
    detail = f"{len(package.pes)} PE files use the UCRT{via}; no debug or MinGW runtime"
    return verdict(CRT, package, problems, detail)
