"""``build-locally.py``'s entry point: options, then the command they name (a batch, or one
that reads earlier batches), through the toolkit's one error handler
(:func:`tools.errors.exit_code_of`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tools.errors import exit_code_of
from tools.localbuild.batch.pipeline import run_batch
from tools.localbuild.console import Console
from tools.localbuild.options import Options, parse
from tools.localbuild.review import modes
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
    """The reviewer's commands read earlier batches; everything else builds one."""
    if options.why is not None:
        return modes.why(options, console)
    if options.report_dirs is not None:
        from tools.localbuild.review.report import write_report

        return write_report(options, console.say, console.note)
    if options.verify_dir is not None:
        from tools.localbuild.review.verify import verify

        return verify(
            options.root,
            options.verify_dir,
            options.commit,
            say=console.say,
            allow_other_engine=options.allow_other_engine,
        )
    if options.publish_dest is not None:
        from tools.localbuild.review.publish import publish

        return publish(
            options.root,
            options.publish_dest,
            options.env,
            options.publish_token,
            say=console.say,
            allow_other_engine=options.allow_other_engine,
        )
    if options.merge_dirs:
        return modes.merge_folders(options, console)
    if options.cfep3_channel is not None:
        modes.cfep3_request(options, console)
        return 0
    if options.fetch_sources is not None:
        from tools.localbuild.engines.airgap import fetch_sources

        fetch_sources(options.root, options.fetch_sources, console.say)
        return 0
    return run_batch(options, console)
