"""``python -m tools.rattler_build``: the rattler-build CLI (cli.py)."""

import sys

from tools.rattler_build.cli import main

sys.exit(main(sys.argv[1:]))
