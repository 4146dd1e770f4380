"""``build-locally.py``: the one place where build errors become exit codes."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tools.build.batch import EXIT_INTERRUPTED, Console, run_batch
from tools.build.options import parse
from tools.errors import ToolError


def main(
    argv: Sequence[str] | None = None,
    *,
    root: Path,
    env: Mapping[str, str] | None = None,
    console: Console | None = None,
) -> int:
    console = console or Console()
    env = os.environ if env is None else env
    try:
        options = parse(argv, env, root, interactive=sys.stdin.isatty())
        return run_batch(options, console)
    except ToolError as exc:
        print(f"error: {exc}", file=console.err, flush=True)
        return exc.exit_code
    except KeyboardInterrupt:
        print("\ninterrupted", file=console.err, flush=True)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
