"""``python -m tools <command>``: the maintainers' toolkit.

Each command lives in ``tools/commands/<name>.py`` and defines ``HELP`` (one
line), ``configure(parser)`` and ``run(args, console) -> int``.  Command modules keep
their heavy imports inside ``run`` so that ``--help`` stays instant.

``python -m`` finds the package only from the repository root.  Elsewhere,
``python <repository>/tools`` runs this file by path; the toolkit is not
installed as a top-level ``tools`` package on purpose (it would shadow
PyTorch's own ``tools`` package in a build environment).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
import textwrap
from collections.abc import Sequence

if not __package__:
    # Run by path (`python ../tools`): Python put tools/ itself first on sys.path,
    # where our modules would shadow others by their bare names (build, check, log);
    # the toolkit imports itself as the package `tools`, so its parent goes there.
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from tools.foundation.errors import ToolError, exit_code_of
from tools.foundation.log import Console

# Order is the order shown by --help.
COMMANDS = (
    "render",
    "matrix",
    "switch",
    "explain",
    "check",
    "layout",
    "drift",
    "bump",
    "emulate",
    "runners",
    "smoke",
    "review",
)


def _available() -> dict[str, str]:
    found = {}
    for name in COMMANDS:
        module_name = f"tools.commands.{name}"
        if importlib.util.find_spec(module_name) is not None:
            found[name] = module_name
    return found


# README.md says this too, word for word (tests/e2e/test_cli_conventions.py holds them together).
WHERE_TO_RUN = (
    "Run it from the repository root as `python -m tools`, or from any directory as "
    "`python <repository>/tools` (from recipe/: `python ../tools explain`)."
)

EPILOG = (
    textwrap.fill(
        f"{WHERE_TO_RUN}  Every command finds the feedstock from the current directory (else from "
        "where the toolkit lives) and reads the recipe from recipe/ or --recipe-dir.  "
        "`python -m tools COMMAND --help` describes each command and its exit status.",
        width=88,
    )
    + """

exit status: 0 done; 1 checked and found problems (check, matrix --check, drift --check,
emulate, bump with a patch that no longer applies), summed up in a last line starting
`problems:`; 2 bad input or a failed external command, in one line starting `error:` (lists
of config names follow one per line, a command's usage follows a refused command line); 70
internal error (a bug: `internal error` and the traceback); 130 interrupted.
"""
)


class _Parser(argparse.ArgumentParser):
    """argparse under the toolkit's convention: a command line it refuses is bad input, so
    it prints one ``error:`` line, then the usage of the (sub)command at fault on one line,
    and exits 2 (argparse's own form starts with the usage block and ``prog: error:``)."""

    def error(self, message: str):  # type: ignore[override]
        usage = " ".join(self.format_usage().split())
        self.exit(2, f"error: {message}\n{usage}\n")


class _Version(argparse.Action):
    """``--version``, computed only when asked for (it runs git)."""

    def __init__(
        self,
        option_strings,
        dest=argparse.SUPPRESS,
        default=argparse.SUPPRESS,
        help="print the recipe's version and the toolkit's git revision, then exit",
    ):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from tools.foundation.repo import PACKAGE_ROOT, find_root
        from tools.foundation.version import describe

        try:
            feedstock = find_root()
        except ToolError:
            feedstock = None
        # a recipe whose version cannot be read is an error line and exit 2, as in any command
        console = Console()
        parser.exit(exit_code_of(lambda: console.say(describe(feedstock, PACKAGE_ROOT))))


def main(argv: Sequence[str] | None = None, console: Console | None = None) -> int:
    """Run the command ``argv`` names, speaking through ``console``; whatever goes wrong,
    an exit code (tools.foundation.errors), a crash included."""
    console = console or Console()
    return exit_code_of(lambda: _dispatch(argv, console), stderr=console.err)


def _dispatch(argv: Sequence[str] | None, console: Console) -> int:
    commands = _available()
    modules = {name: importlib.import_module(mod) for name, mod in commands.items()}
    parser = _Parser(
        prog="python -m tools",
        description="Render, explain, check and maintain the PyTorch feedstock.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    sub_parsers = {}
    for name, module in modules.items():
        sub_parser = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.configure(sub_parser)
        sub_parser.set_defaults(_run=module.run)
        sub_parsers[name] = sub_parser
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        # argparse leaves these to the top-level parser, whose usage does not show the
        # command's options: the command at fault reports them with its own usage.
        sub_parsers[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    return args._run(args, console)


if __name__ == "__main__":
    sys.exit(main())
