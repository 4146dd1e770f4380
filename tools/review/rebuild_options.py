"""The rebuild's options, as ``review verify --rebuild`` and ``python -m tools.review.rebuild``
take them: apart from rebuild.py, which imports the whole batch loop (about 0.13 s), so that
every ``python -m tools`` command line, which builds review's parser, starts without it."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_build_options(parser: argparse.ArgumentParser) -> None:
    """The rebuild's options: how it builds, as build-locally.py names them, and where its
    packages go or come from."""
    parser.add_argument("--engine", help="as build-locally.py --engine")
    parser.add_argument("--channel", dest="channels", action="append", default=[],
                        metavar="URL_OR_DIR", help="as build-locally.py --channel")  # fmt: skip
    parser.add_argument("--source-cache", type=Path, metavar="DIR",
                        help="as build-locally.py --source-cache")  # fmt: skip
    parser.add_argument("--ccache", type=Path, metavar="DIR", help="as build-locally.py --ccache")
    kept = parser.add_mutually_exclusive_group()
    kept.add_argument("--keep", type=Path, metavar="DIR", help="keep the rebuilt packages in DIR")
    kept.add_argument(
        "--rebuilt",
        type=Path,
        metavar="DIR",
        help="compare with the packages an earlier rebuild of the same commit kept in DIR "
        "(--keep) instead of building again",
    )
