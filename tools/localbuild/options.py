"""The command line and the environment, read once into a frozen record.

conda-smithy's options (positional config, --filter, --debug, --output-id) keep
their meaning; everything else is the CFEP-03 batch layer on top.  The
environment is injected as a Mapping so tests never touch ``os.environ``.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from tools.foundation.errors import UserError
from tools.foundation.proc import SECRET_ENV_VARS, secret_values
from tools.localbuild.schedule.shard import Shard, parse_shard

#: The engines --engine may force (tools/localbuild/engines/ladder.py tries them in order).
BUILDERS = ("docker", "conda-build", "rattler-build")

#: build-locally.py's flags that read finished batches, and the ``python -m tools review``
#: command each became (docs/cfep03.md); build-locally.py refuses them naming it.
MOVED = {
    "--verify": "verify DIR [--commit SHA]",
    "--commit": "verify DIR --commit SHA",
    "--report": "report [DIR...]",
    "--cfep3-request": "request CHANNEL [DIR]",
    "--merge": "merge DIR... [--request CHANNEL]",
    "--publish": "publish DEST",
    "--why": "why CONFIG [DIR]",
    "--allow-other-engine": "verify|request|merge|publish ... --allow-other-engine",
}

DESCRIPTION = """\
Build one or more .ci_support configs of this feedstock locally, in the
conda-forge container (docker or podman, chosen with DOCKER_EXECUTABLE), the
way conda-smithy's build-locally.py does; without a container engine, with the
conda-build on PATH or else the embedded rattler-build (py-rattler-build, from
requirements.txt) for this machine's platform (the first line says which);
plus CFEP-03 batch builds with resume, per-config logs, a summary, SHA256SUMS
and log_files.zip in build_artifacts/.
"""

EPILOG = f"""\
environment: DOCKER_EXECUTABLE (docker|podman, or the path of either), DOCKER_IMAGE
(overrides the config's image), CONDA_FORGE_DOCKER_RUN_ARGS (extra `run` options),
CPU_COUNT, MINIFORGE_HOME (osx/win), OSX_SDK_DIR (osx configs; setting it accepts
Apple's SDK licence), BUILD_MACHINE (the machine's name in summary.json and the review's
timeline; default: the host name).  Tokens (BINSTAR_TOKEN and friends) are never forwarded and are
redacted from logs and messages.

one run at a time per build_artifacts/ (a lock; a second run is refused with the first
one's pid).  With --all or a glob, configs this machine cannot build are skipped with the
reason (summary status "skipped") and a config file that cannot be read fails (status
"failed": rerender); a config named exactly is an error instead.  --dry-run makes every
check the run makes (something to build, the engine answers, the recipe renders) and stops
before the first container.

written to build_artifacts/: <config>-log.txt (timestamped UTC, tokens redacted;
an earlier attempt's log moves to old-logs/), conda-forge-build-done-<config> (the
resume marker), summary.json ({{"version": 1, "configs": {{<config>: {{"status":
done|failed|interrupted|skipped|pending, "reason" (why a skipped config was not built),
"earlier_run" (done by an earlier run, kept by a resume), "machine", "started",
"duration_seconds", "returncode", "log", "packages": [{{"path", "sha256", "size"}}],
"ccache": {{"hits", "misses", "hit_rate"}} or null, "note", "provenance": {{"commit",
"dirty", "diff_sha256", "recipe_version", "recipe_build_number" (the recipe's), "build_number"
(this config's, variant offsets included), "ci_support_sha256", "toolkit", "engine", "image",
"machine", "recipe_file", "ci_engine" (built as conda-forge's CI builds it), "channels",
"tests" (run, or skipped: why)}}}}}}, ...}};
every config of the matrix has a record),
SHA256SUMS (`sha256sum -c` format, every package in the channel folders) and log_files.zip
(the logs, summary.json and SHA256SUMS).

several machines: `--all --shard K/N` on machine K of N (the same command
everywhere), then `python -m tools review merge DIR...` on one of them with the others'
build_artifacts/ copied over.

reading a finished batch is `python -m tools review` (verify, report, request, merge,
publish, why; docs/cfep03.md): build-locally.py refuses the flags that did it before
({", ".join(MOVED)}) in one line naming that command, exit 2.

configs are shown with a short label (`linux-64 cuda13.0 mkl`: platform, cudaX.Y or cpu,
BLAS, plus the words that tell two configs apart when those do not); CONFIG and --filter
accept it (quote it).  --list prints `LABEL  NAME` lines (the name is the last word).
While building, the status and heartbeat lines show the expected finish of the config
and of the batch, from --durations when given, else the cost model (the line says which).

exit status: 0 all selected configs built or already done (or, with --shard, none fell
to this machine); 1 some config failed (or would, with --dry-run); 2 bad input, a recipe
that does not render or no usable engine, in one line starting `error:` (an unknown config
or glob lists the three closest names, an ambiguous one every match, one per line); 130
interrupted (rerun the same command to resume).
"""


@dataclass(frozen=True)
class Options:
    root: Path
    requested: tuple[str, ...]
    all_configs: bool
    filter_glob: str | None
    debug: bool
    output_id: str | None
    force: bool
    prune: bool
    fail_fast: bool
    dry_run: bool
    native: bool
    engine: str | None  # --engine: docker, conda-build or rattler-build; None: the ladder
    channels: tuple[str, ...]  # --channel: replace the config's channel_sources
    source_cache: Path | None  # --source-cache: holds the recipe's source archive
    fetch_sources: Path | None  # --fetch-sources: fill that folder, build nothing
    list_only: bool
    ccache: Path | None
    interactive: bool
    shard: Shard | None  # --shard K/N: this machine's part of the selection
    durations: tuple[Path, ...]  # summary.json files whose durations balance the shards
    env: Mapping[str, str]  # what the build sees: the caller's environment minus secrets
    secrets: tuple[str, ...]  # values to redact wherever output is written
    withheld: tuple[str, ...]  # names of the secret variables the caller had set
    # the flag that forced the engine, as the person typed it (`--native`, `--engine docker`),
    # for the messages about that engine; None: the ladder chose
    engine_flag: str | None = None

    @property
    def artifacts(self) -> Path:
        return self.root / "build_artifacts"


class _Parser(argparse.ArgumentParser):
    """A refused command line is bad input like any other: the toolkit's handler
    (tools/foundation/errors.py) prints one ``error:`` line, then the usage on one line, and exits 2
    (``python -m tools`` does the same), not argparse's usage block and ``prog: error:``."""

    def error(self, message: str):  # type: ignore[override]
        raise UserError(f"{message}\n{' '.join(self.format_usage().split())}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="build-locally",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "config",
        nargs="*",
        metavar="CONFIG",
        help="configs from .ci_support/: full name, NAME.yaml, unique prefix or glob "
        "(every match); none on a terminal shows a menu",
    )
    parser.add_argument(
        "--filter",
        dest="filter_glob",
        metavar="GLOB",
        help="only consider configs whose `<name>.yaml` matches GLOB",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="set up the build and open a shell instead of building (conda debug)",
    )
    parser.add_argument(
        "--output-id",
        metavar="ID",
        help="with --debug: the output to debug (conda debug --output-id)",
    )
    batch = parser.add_argument_group("batch builds (CFEP-03)")
    batch.add_argument(
        "--all",
        dest="all_configs",
        action="store_true",
        help="build every config (after --filter), one after another",
    )
    batch.add_argument(
        "--force",
        action="store_true",
        help="rebuild configs whose build_artifacts/conda-forge-build-done-<config> exists",
    )
    batch.add_argument(
        "--fail-fast",
        action="store_true",
        help="stop at the first failed config (default: build the rest, exit 1)",
    )
    batch.add_argument(
        "--prune",
        action="store_true",
        help="between configs, remove our stopped containers and the finished "
        "config's conda-build work folders",
    )
    batch.add_argument(
        "--ccache",
        metavar="DIR",
        type=Path,
        help="persistent compiler cache directory: mounted into the container, or the "
        "embedded engine's cache (with the ccache on PATH)",
    )
    batch.add_argument(
        "--native",
        action="store_true",
        help="no container: run .scripts/build_steps.sh with the conda-build on PATH "
        "(the same as --engine conda-build)",
    )
    batch.add_argument(
        "--engine",
        choices=BUILDERS,
        help="build with this engine, or fail saying why; default: a container engine when "
        "one answers, else the conda-build on PATH, else the embedded rattler-build",
    )
    airgap = parser.add_argument_group("builds without internet (docs/build-locally.md)")
    airgap.add_argument(
        "--channel",
        dest="channels",
        metavar="URL_OR_DIR",
        action="append",
        default=[],
        help="embedded engine: use this channel (a mirror's URL, or a folder of packages, "
        "indexed here) instead of the channels the config names (repeatable)",
    )
    airgap.add_argument(
        "--source-cache",
        metavar="DIR",
        type=Path,
        help="embedded engine: take the recipe's source archive from DIR (its sha256 checked)",
    )
    airgap.add_argument(
        "--fetch-sources",
        metavar="DIR",
        type=Path,
        help="download the recipe's source archive into DIR (for --source-cache) and exit",
    )
    batch.add_argument(
        "--dry-run",
        action="store_true",
        help="check as the build does, then print what would run for each config "
        "(command, environment, mounts) instead of running it",
    )
    batch.add_argument(
        "--list",
        dest="list_only",
        action="store_true",
        help="list the configs (the CONFIGs given, else all; after --filter) and exit",
    )
    spread = parser.add_argument_group("a release over several machines (docs/build-locally.md)")
    spread.add_argument(
        "--shard",
        metavar="K/N",
        help="build only this machine's part K of N of the selected configs; every machine "
        "runs the same command with its own K (balanced by expected build time)",
    )
    spread.add_argument(
        "--durations",
        metavar="FILE",
        type=Path,
        action="append",
        default=[],
        help="an earlier summary.json whose measured build times replace the cost model for "
        "the ETA and --shard (repeatable; give every machine the same files)",
    )
    return parser


def _check_spread(args: argparse.Namespace) -> None:
    """--shard: what it combines with, checked before anything runs."""
    if args.shard and args.debug:
        raise UserError("--debug opens a shell in one build; drop --shard")
    if args.shard and not (args.all_configs or args.config or args.list_only):
        raise UserError(
            "--shard splits the selected configs: add --all (with --filter) or config names"
        )


_RUN_ARG_SECRET = re.compile(r"(?:^|[\s=])(" + "|".join(SECRET_ENV_VARS) + r")(?:[\s=]|$)")


def from_args(
    args: argparse.Namespace, env: Mapping[str, str], root: Path, *, interactive: bool
) -> Options:
    _check_spread(args)
    if args.output_id and not args.debug:
        raise UserError("--output-id only makes sense with --debug")
    if args.debug and (args.all_configs or len(args.config) > 1):
        raise UserError("--debug opens a shell in one build; name a single config")
    if args.debug and args.dry_run:
        raise UserError("--debug and --dry-run exclude each other")
    if args.native and args.ccache is not None:
        raise UserError(
            "--ccache is wired into the container build; with --native configure ccache "
            "yourself (recipe/README) and drop --ccache"
        )
    if args.native and args.engine not in (None, "conda-build"):
        raise UserError(f"--native builds with conda-build; drop it or --engine {args.engine}")
    if args.fetch_sources is not None and (args.config or args.all_configs or args.dry_run):
        raise UserError("--fetch-sources only downloads the source archive; drop the rest")
    run_args = env.get("CONDA_FORGE_DOCKER_RUN_ARGS", "")
    leaked = _RUN_ARG_SECRET.search(run_args)
    if leaked:
        raise UserError(
            f"CONDA_FORGE_DOCKER_RUN_ARGS forwards {leaked.group(1)}; local builds never "
            "upload, so remove it from there"
        )
    ccache = None
    if args.ccache is not None:
        ccache = (args.ccache if args.ccache.is_absolute() else Path.cwd() / args.ccache).resolve()
        # The .scripts pass CONDA_FORGE_DOCKER_RUN_ARGS through word splitting.
        if any(c.isspace() for c in str(ccache)) or "," in str(ccache) or ":" in str(ccache):
            raise UserError(
                f"--ccache {ccache}: the path must not contain whitespace, ':' or ','; "
                "pick a simpler directory"
            )
        if ccache.exists() and not ccache.is_dir():
            raise UserError(f"--ccache {ccache}: exists and is not a directory")
    clean_env = {k: v for k, v in env.items() if k not in SECRET_ENV_VARS}
    return Options(
        root=root,
        requested=tuple(args.config),
        all_configs=args.all_configs,
        filter_glob=args.filter_glob,
        debug=args.debug,
        output_id=args.output_id,
        force=args.force,
        prune=args.prune,
        fail_fast=args.fail_fast,
        dry_run=args.dry_run,
        native=args.native or args.engine == "conda-build",
        engine="conda-build" if args.native else args.engine,
        channels=tuple(args.channels),
        source_cache=_absolute(args.source_cache),
        fetch_sources=_absolute(args.fetch_sources),
        list_only=args.list_only,
        ccache=ccache,
        interactive=interactive,
        shard=parse_shard(args.shard) if args.shard else None,
        durations=tuple(args.durations),
        env=MappingProxyType(clean_env),
        secrets=tuple(secret_values(env)),
        withheld=tuple(name for name in SECRET_ENV_VARS if name in env),
        engine_flag="--native" if args.native else args.engine and f"--engine {args.engine}",
    )


def _absolute(path: Path | None) -> Path | None:
    return None if path is None else (path if path.is_absolute() else Path.cwd() / path)


def refuse_moved(argv: Sequence[str]) -> None:
    """One line for a flag that moved to ``python -m tools review`` (exit 2, as bad input)."""
    for word in argv:
        if word == "--":
            return
        flag = word.split("=", 1)[0]
        if flag in MOVED:
            raise UserError(
                f"build-locally.py {flag}: moved to `python -m tools review {MOVED[flag]}` "
                "(build-locally.py builds; the review reads what it built)"
            )


def parse(
    argv: Sequence[str] | None, env: Mapping[str, str], root: Path, *, interactive: bool
) -> Options:
    refuse_moved(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    return from_args(args, env, root, interactive=interactive)
