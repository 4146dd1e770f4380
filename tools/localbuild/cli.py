"""``build-locally.py``'s entry point: options, then the batch, through the toolkit's one
error handler (:func:`tools.errors.exit_code_of`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tools.errors import exit_code_of
from tools.localbuild.batch import Console, run_batch
from tools.localbuild.options import parse


def main(
    argv: Sequence[str] | None = None,
    *,
    root: Path,
    env: Mapping[str, str] | None = None,
    console: Console | None = None,
) -> int:
    console = console or Console()
    env = os.environ if env is None else env

    def build() -> int:
        options = parse(argv, env, root, interactive=sys.stdin.isatty())
        return run_batch(options, console)

    return exit_code_of(build, stderr=console.err)
