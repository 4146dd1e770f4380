"""``build-locally.py``'s entry point: the mode the options name, run through the toolkit's
one error handler (:func:`tools.foundation.errors.exit_code_of`; a crash exits 70)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tools.foundation.errors import exit_code_of
from tools.foundation.log import Console
from tools.localbuild.batch import pipeline
from tools.localbuild.options import Build, Debug, DryRun, FetchSources, ListConfigs, Mode, parse
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
        mode = parse(argv, env, root, interactive=sys.stdin.isatty())
        load_forge_yml(root)  # checked as every command checks it, --list included
        return run(mode, console)

    return exit_code_of(build, stderr=console.err)


def run(mode: Mode, console: Console) -> int:
    """The mode the command line named; reading a finished batch is ``python -m tools
    review``."""
    match mode:
        case FetchSources(root=root, into=into):
            from tools.localbuild.engines.offline.airgap import fetch_sources

            fetch_sources(root, into, console.say)
            return 0
        case ListConfigs():
            return pipeline.list_configs(mode, console)
        case Debug():
            return pipeline.debug(mode, console)
        case DryRun():
            return pipeline.dry_run(mode, console)
        case Build():
            return pipeline.build(mode, console)
    raise AssertionError(f"no runner for {mode!r}")  # a mode added without its case
