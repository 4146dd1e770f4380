#!/usr/bin/env python
"""Read, edit and retarget a CMake build tree's CMakeCache.txt.

The recipe compiles PyTorch's core once and rebuilds only the Python bindings for each
Python (the "megabuild"), and builds libtorch_cuda_linalg with and without magma from one
configured tree; both change the cache of a configured tree in place. A textual replace
(``sed s/3.12/3.13/``) would also rewrite ``/opt/cmake-3.12.4/bin`` and miss ``cp312`` or
``3;12;1``; this tool parses the cache and touches only what it must.

Usage (run the directory; standard library only, the build environment's Python 3.10+)::

    python cmake_cache get CACHE NAME [--default VALUE]
    python cmake_cache set CACHE NAME[:TYPE]=VALUE ...
    python cmake_cache retarget-python CACHE --python EXE
    python cmake_cache check-abi CACHE --python EXE

``check-abi`` exits 2 unless the tree was configured for a Python of EXE's threading ABI
(free-threaded 3.14t or with the GIL): the compile stage asks it before compiling a kept
tree, which a free-threaded output may have retargeted. Bad input: one line naming the file,
line and problem, exit 2, the cache untouched. The first edit keeps ``CMakeCache.txt.orig``;
every write is a temp file plus rename; repeating a command changes nothing.

The modules beside this one: cache_file (parse, edit, write), interpreters (what a cache and
an interpreter say about Python, which entries are Python's), rewrite (the rules from old
spellings to new), retarget (the retarget itself) and skbuild_info (scikit-build-core's
``.skbuild-info.json``, which must name the next interpreter's scikit-build-core or the
backend clears the tree).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

# Running the directory puts it first on sys.path: its modules import each other by name.
from cache_file import CACHE_TYPES, CacheError, load, save
from interpreters import describe_old_python, is_python_name, python_facts
from retarget import retarget
from skbuild_info import info_path, load_info, retarget_info, save_info

# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


def _parse_assignment(text: str) -> tuple[str, str | None, str]:
    if "=" not in text:
        raise CacheError(f"{text!r} is not NAME[:TYPE]=VALUE", "command line")
    key, value = text.split("=", 1)
    name, type_ = key, None
    if ":" in key:
        head, tail = key.rsplit(":", 1)
        if tail.upper() in CACHE_TYPES:
            name, type_ = head, tail.upper()
        elif tail and tail.isupper():
            raise CacheError(
                f"unknown type {tail!r} in {text!r} (use one of {', '.join(sorted(CACHE_TYPES))})",
                "command line",
            )
    if not name:
        raise CacheError(f"{text!r} has no entry name", "command line")
    return name, type_, value


def _cmd_get(args: argparse.Namespace) -> int:
    entry = load(args.cache).get(args.name)
    if entry is None:
        if args.default is None:
            raise CacheError(f"has no entry {args.name!r}", args.cache)
        print(args.default)
        return 0
    print(entry.value)
    return 0


def _cmd_set(args: argparse.Namespace) -> int:
    assignments = [_parse_assignment(a) for a in args.assignments]
    cache = load(args.cache)
    for name, type_, value in assignments:
        cache = cache.set(name, value, type_)
    changed = save(cache, args.cache)
    names = ", ".join(f"{n}={v}" for n, _, v in assignments)
    print(f"{args.cache}: {'set' if changed else 'already'} {names}")
    return 0


def _cmd_retarget(args: argparse.Namespace) -> int:
    cache = load(args.cache)
    describe_old_python(cache)  # refuse a Python-less cache before running anything
    info_file = info_path(args.cache)
    info = load_info(info_file)
    try:
        facts = python_facts(args.python)
    except CacheError as exc:
        raise CacheError(f"cannot retarget to {exc.source}: {exc.problem}", args.cache) from None
    result = retarget(cache, facts)
    new_info = None if info is None else retarget_info(info, facts, info_file)
    changed = save(result.cache, args.cache)
    if changed:
        print(
            f"{args.cache}: Python {result.old_version} -> {result.new_version}: "
            f"rewrote {len(result.rewritten)} entries, dropped {len(result.dropped)} "
            f"stale signatures"
        )
    else:
        print(f"{args.cache}: already targets Python {result.new_version} at {args.python}")
    if info is not None and new_info is not None and save_info(info_file, info, new_info):
        print(f"{info_file}: scikit-build-core is now {facts.skbuild_path}")
    return 0


def _threading(gil_disabled: bool) -> str:
    return "free-threaded, Py_GIL_DISABLED" if gil_disabled else "with the GIL"


def _cmd_check_abi(args: argparse.Namespace) -> int:
    cache = load(args.cache)
    if not any(is_python_name(entry.name) for entry in cache.entries):
        # A configure that stopped before finding Python: no ABI to disagree with.
        print(f"{args.cache}: configured for no Python yet")
        return 0
    old = describe_old_python(cache)
    try:
        facts = python_facts(args.python)
    except CacheError as exc:
        raise CacheError(f"cannot check against {exc.source}: {exc.problem}", args.cache) from None
    if old.gil_disabled != facts.gil_disabled:
        raise CacheError(
            f"the tree is configured for Python {old.abi} ({_threading(old.gil_disabled)}) "
            f"but {args.python} is Python {facts.abi} ({_threading(facts.gil_disabled)}), "
            "and one ABI's extensions never load in the other; point the tree at it with "
            "cmake_cache.py retarget-python, or remove the build tree",
            args.cache,
        )
    print(f"{args.cache}: configured for Python {old.abi}, the ABI of {args.python}")
    return 0


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # One line, like every other error of this tool (argparse prints the usage too).
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    # The name its messages have always carried ("cmake_cache.py: error: ..."): build.sh
    # strips that prefix from check-abi's refusal, and logs and tests match it.
    parser = _Parser(prog="cmake_cache.py", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    get = sub.add_parser("get", help="print the value of one entry")
    get.add_argument("cache")
    get.add_argument("name")
    get.add_argument(
        "--default", metavar="VALUE", help="print VALUE instead of failing when the entry is absent"
    )
    get.set_defaults(run=_cmd_get)
    set_ = sub.add_parser("set", help="set (or add) entries: NAME[:TYPE]=VALUE ...")
    set_.add_argument("cache")
    set_.add_argument("assignments", nargs="+", metavar="NAME[:TYPE]=VALUE")
    set_.set_defaults(run=_cmd_set)
    ret = sub.add_parser(
        "retarget-python", help="point Python-derived entries at another interpreter"
    )
    ret.add_argument("cache")
    ret.add_argument("--python", required=True, metavar="EXE")
    ret.set_defaults(run=_cmd_retarget)
    abi = sub.add_parser(
        "check-abi",
        help="fail unless the tree's Python and EXE share a threading ABI (free-threaded or GIL)",
    )
    abi.add_argument("cache")
    abi.add_argument("--python", required=True, metavar="EXE")
    abi.set_defaults(run=_cmd_check_abi)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except CacheError as exc:
        print(f"cmake_cache.py: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
