"""Bytecode of another Python among the files pip installed for torch.

recipe/bld.bat runs this with the pytorch output's own interpreter after ``pip install``: a
``.pyc`` under ``__pycache__`` in torch's RECORD whose cache tag is not this interpreter's
(``sys.implementation.cache_tag``, e.g. ``cpython-312``) was compiled by another Python (a code
generator of an earlier phase imported a module setup.py packages as data) and would ship in
this output. Only the RECORD counts: host packages' bytecode is not this output's.

In Python rather than FINDSTR: FINDSTR with several ``/c:`` literals of different lengths can
miss the shorter one (a documented FINDSTR bug), so ``/v`` let this Python's own bytecode through
as another's.

Usage: python foreign_bytecode.py SITE_PACKAGES [--fix TEXT]
Exit 0: none found. Exit 1: one line naming the first foreign file (and TEXT, what to do).
Exit 2: no torch-*.dist-info/RECORD in SITE_PACKAGES (pip installed nothing there).
Standard library only; runs under every Python a pytorch output builds for.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path


def own_bytecode(name: str, cache_tag: str) -> bool:
    """``NAME.TAG.pyc`` or its optimized forms ``NAME.TAG.opt-1.pyc`` / ``.opt-2.pyc``."""
    return re.search(rf"\.{re.escape(cache_tag)}(\.opt-[12])?\.pyc$", name) is not None


def foreign_files(record: str, cache_tag: str) -> list[str]:
    """The RECORD's ``__pycache__`` bytecode compiled for another cache tag, in its order."""
    found = []
    for line in record.splitlines():
        path = line.split(",", 1)[0]
        parts = path.replace("\\", "/").split("/")
        in_cache = len(parts) > 1 and parts[-2] == "__pycache__" and path.endswith(".pyc")
        if in_cache and not own_bytecode(parts[-1], cache_tag):
            found.append(path)
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="foreign_bytecode.py")
    parser.add_argument("site_packages", type=Path)
    parser.add_argument("--fix", default="", help="what to do when a foreign file is found")
    args = parser.parse_args(argv)
    records = sorted(args.site_packages.glob("torch-*.dist-info/RECORD"))
    if not records:
        print(
            f"foreign_bytecode.py: error: no {args.site_packages / 'torch-*.dist-info' / 'RECORD'};"
            " pip install left none: check the pip install step",
            file=sys.stderr,
        )
        return 2
    tag = sys.implementation.cache_tag
    for record in records:
        found = foreign_files(record.read_text(encoding="utf-8"), tag)
        if found:
            fix = f"; {args.fix}" if args.fix else ""
            print(
                f"foreign_bytecode.py: error: {args.site_packages / found[0]} is "
                f"bytecode for another Python than {sys.executable}, cache tag {tag}; "
                f"a build step left it in the shared tree{fix}",
                file=sys.stderr,
            )
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
