"""Fail when more than one OpenMP runtime is loaded after importing torch and numpy.

On Windows torch's own OpenMP code and MKL's threads can each bring a runtime: MSVC's
vcomp140.dll, Intel's libiomp5md.dll, LLVM's libomp.dll (issue 30 item 14, patch 0012). Two
runtimes in one process oversubscribe the CPU or abort with "OMP: Error #15"; neither
`import torch; import numpy` nor torch.backends.openmp notices. This imports the modules
(torch, numpy by default, in that order), lists the files of the OpenMP runtimes the
process has loaded, and fails unless exactly one is there: a torch built with OpenMP that
loads none means the listing does not see the process's libraries.

Usage: python check_openmp.py [--import MODULE ...]
Prints the runtimes found. Exit 1 with one `problems:` line when not exactly one;
exit 2 with one `error:` line where a module does not import or the loaded libraries
cannot be listed.
Standard library only (it runs in the test environment).
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from pathlib import Path

# File names of OpenMP runtimes, per family. The names vary by platform and packager:
# vcomp140.dll / vcomp140d.dll (MSVC), libiomp5md.dll / libiomp5.so (Intel),
# libomp.dll / libomp140.x86_64.dll / libomp.so[.5] / libomp.dylib (LLVM), libgomp (GNU).
RUNTIMES = re.compile(
    r"^(vcomp\d*d?\.dll"
    r"|libiomp5(md)?\.(dll|so|dylib)"
    r"|libomp(\d+\.[\w.]+)?\.dll|libomp\.so(\.\d+)*|libomp\.dylib"
    r"|libgomp(-\d+)?\.dll|libgomp\.so(\.\d+)*|libgomp(\.\d+)?\.dylib)$",
    re.IGNORECASE,
)


class ListingError(RuntimeError):
    """The loaded libraries of this process cannot be read here."""


def windows_modules() -> list[str]:
    """Every module (DLL) loaded in this process, by path (psapi's EnumProcessModules)."""
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    kernel32.GetCurrentProcess.restype = wintypes.HANDLE
    kernel32.K32EnumProcessModules.argtypes = [
        wintypes.HANDLE, ctypes.POINTER(wintypes.HMODULE), wintypes.DWORD,
        ctypes.POINTER(wintypes.DWORD),
    ]  # fmt: skip
    kernel32.K32GetModuleFileNameExW.argtypes = [
        wintypes.HANDLE, wintypes.HMODULE, wintypes.LPWSTR, wintypes.DWORD,
    ]  # fmt: skip
    process = kernel32.GetCurrentProcess()
    count = 1024
    while True:
        modules = (wintypes.HMODULE * count)()
        needed = wintypes.DWORD()
        if not kernel32.K32EnumProcessModules(
            process, modules, ctypes.sizeof(modules), ctypes.byref(needed)
        ):
            raise ListingError(f"EnumProcessModules failed (error {ctypes.get_last_error()})")
        if needed.value <= ctypes.sizeof(modules):
            break
        count = needed.value // ctypes.sizeof(wintypes.HMODULE) + 16
    paths = []
    buffer = ctypes.create_unicode_buffer(32768)
    for module in modules[: needed.value // ctypes.sizeof(wintypes.HMODULE)]:
        if kernel32.K32GetModuleFileNameExW(process, module, buffer, len(buffer)):
            paths.append(buffer.value)
    return paths


def linux_modules() -> list[str]:
    """Every file mapped into this process (/proc/self/maps): its shared libraries."""
    paths = set()
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5].startswith("/"):
            paths.add(fields[5].removesuffix(" (deleted)"))
    return sorted(paths)


def loaded_modules() -> list[str]:
    if sys.platform == "win32":
        return windows_modules()
    if sys.platform.startswith("linux"):
        return linux_modules()
    raise ListingError(f"listing loaded libraries is not implemented for {sys.platform}")


def openmp_runtimes(paths: list[str]) -> list[str]:
    """The paths among `paths` whose file name is an OpenMP runtime's, one per file."""
    seen: dict[str, str] = {}
    for path in paths:
        name = os.path.basename(path.replace("\\", "/"))
        if RUNTIMES.match(name):
            seen.setdefault(os.path.normcase(os.path.realpath(path)), path)
    return sorted(seen.values())


#: What the recipe's test imports, in this order, when no --import is given.
DEFAULT_MODULES = ("torch", "numpy")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--import", dest="modules", action="append", metavar="MODULE",
        help="import this module first (repeat; default: torch, then numpy)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    modules = args.modules or list(DEFAULT_MODULES)
    try:
        for module in modules:
            importlib.import_module(module)
    except ImportError as exc:
        print(f"error: --import {module}: {exc}", file=sys.stderr)
        return 2
    try:
        runtimes = openmp_runtimes(loaded_modules())
    except (ListingError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    after = ", ".join(modules)
    for path in runtimes:
        print(f"OpenMP runtime loaded after import {after}: {path}")
    if len(runtimes) != 1:
        print(
            f"problems: {len(runtimes)} OpenMP runtimes loaded after import {after} "
            f"(exactly one expected): {', '.join(runtimes) or 'none'}",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
