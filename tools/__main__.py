"""``python -m tools <command>``: the maintainers' toolkit.

Each command lives in ``tools/commands/<name>.py`` and defines ``HELP`` (one
line), ``configure(parser)`` and ``run(args) -> int``.  Command modules keep
their heavy imports inside ``run`` so that ``--help`` stays instant.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence

from tools.errors import exit_code_of

# Order is the order shown by --help.
COMMANDS = ("render", "matrix", "explain", "check", "drift", "emulate", "runners")


def _available() -> dict[str, str]:
    found = {}
    for name in COMMANDS:
        module_name = f"tools.commands.{name}"
        if importlib.util.find_spec(module_name) is not None:
            found[name] = module_name
    return found


def main(argv: Sequence[str] | None = None) -> int:
    commands = _available()
    modules = {name: importlib.import_module(mod) for name, mod in commands.items()}
    parser = argparse.ArgumentParser(
        prog="python -m tools",
        description="Render, explain, check and maintain the PyTorch feedstock.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, module in modules.items():
        sub_parser = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.configure(sub_parser)
        sub_parser.set_defaults(_run=module.run)
    args = parser.parse_args(argv)
    return exit_code_of(lambda: args._run(args))


if __name__ == "__main__":
    sys.exit(main())
