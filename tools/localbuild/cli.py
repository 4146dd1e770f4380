"""``build-locally.py``'s entry point: options, then the batch they name, through the
toolkit's one error handler (:func:`tools.foundation.errors.exit_code_of`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tools.foundation.errors import exit_code_of
from tools.localbuild.batch.pipeline import run_batch
from tools.localbuild.console import Console
from tools.localbuild.options import Options, parse
from tools.smithy.forge_yml import load_forge_yml


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
        load_forge_yml(options.root)  # checked as every command checks it, --list included
        return run(options, console)

    return exit_code_of(build, stderr=console.err)


def run(options: Options, console: Console) -> int:
    """--fetch-sources fills a folder; everything else builds a batch (reading one is
    ``python -m tools review``)."""
    if options.fetch_sources is not None:
        from tools.localbuild.engines.airgap import fetch_sources

        fetch_sources(options.root, options.fetch_sources, console.say)
        return 0
    return run_batch(options, console)
