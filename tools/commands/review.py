"""``python -m tools review``: what reads a finished batch (build-locally.py builds it)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from tools.foundation.log import Console

HELP = (
    "review finished batches: sign them, verify an upload, report, request a copy, merge, "
    "publish, why"
)

EPILOG = """\
DIR is a batch: a build_artifacts/ folder (or the checkout holding it), a delegate's upload
(the packages in their subdir folders beside log_files.zip), or log_files.zip itself; every
subcommand reads each alike. Without DIR, this checkout's build_artifacts/. docs/cfep03.md
is the review in steps; docs/build-locally.md the delegate's side.

exit status: 0 done (verify: the upload holds up); 1 checked and found problems (verify:
each finding as a `FAIL` line, then one `problems:` line; publish: the batch fails the
verify checks; merge: a config no machine built; request, merge, publish: packages of
another engine than conda-forge's CI without --allow-other-engine; sign: a package that is not
what SHA256SUMS lists); 2 bad input, in one line starting `error:` (sign: also no identity
token, or Sigstore out of reach; verify: a .sigs file or trusted root that cannot be read).
"""

ALLOW_HELP = (
    "take packages built by another engine or recipe than conda-forge's CI (the container "
    "with conda-forge.yml's conda_build_tool); the output then says so"
)
_SHA = re.compile(r"[0-9a-f]{7,40}")


def _commit(text: str) -> str:
    if not _SHA.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected a git commit sha (7 to 40 hex digits)"
        )
    return text


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    sub = parser.add_subparsers(dest="review", metavar="SUBCOMMAND", required=True)

    verify = sub.add_parser(
        "verify",
        help="the CFEP-03 reviewer's check of an upload; one verdict line",
        description="Cross-check a delegate's upload (docs/cfep03.md): every package's sha256 "
        "against SHA256SUMS, summary.json and its log; loose files against log_files.zip; the "
        "logs' commit, engine and channel lines against the records; the records' toolkit and "
        ".ci_support digests against this checkout; every config of the matrix; the commits "
        "the packages embed; `tools check` on each config's packages.",
    )
    verify.add_argument("dir", type=Path, metavar="DIR", help="the upload (see below)")
    verify.add_argument(
        "--commit",
        type=_commit,
        metavar="SHA",
        help="the commit every record and package must come from (the PR's head); without it "
        "the records' own commit is used, and said so",
    )
    verify.add_argument("--allow-other-engine", action="store_true", help=ALLOW_HELP)
    verify.add_argument(
        "--rebuild",
        metavar="CONFIG",
        help="also rebuild CONFIG from this checkout at the commit and compare each of its "
        "packages byte for byte with the upload's (docs/cfep03.md), building with the options "
        "below as build-locally.py does",
    )
    _signature_options(verify)
    from tools.review.rebuild_options import add_build_options

    add_build_options(verify)
    verify.set_defaults(_review=_verify)

    sign = sub.add_parser(
        "sign",
        help="sign each package of a batch: a CEP 27 attestation in <package>.sigs (Sigstore)",
        description="For each package of DIR's SHA256SUMS, its CEP 27 statement (file name, "
        "sha256, target channel) signed with sigstore-python into <package>.sigs beside it, "
        "listed in summary.json and log_files.zip. The identity: CI's ambient credential "
        "(GitHub Actions with id-token: write), else the browser flow in a terminal, whose "
        "e-mail address Rekor's public log keeps for good (docs/cfep03.md).",
    )
    sign.add_argument(
        "dir",
        type=Path,
        nargs="?",
        default=None,
        metavar="DIR",
        help="the batch, as a build or `review merge` left it (default: build_artifacts/)",
    )
    sign.add_argument(
        "--channel",
        required=True,
        metavar="CHANNEL",
        help="where the packages are uploaded: an anaconda.org channel as `review request` "
        "takes it (jdoe/label/cfep03: https://conda.anaconda.org/jdoe/label/cfep03) or a "
        "channel's URL, without a trailing slash",
    )
    sign.add_argument(
        "--oob",
        action="store_true",
        help="sign in with the code flow (a URL to open elsewhere, a code to paste back) on a "
        "machine without a browser",
    )
    sign.add_argument(
        "--dry-run",
        action="store_true",
        help="print each statement (one JSON document a line) and sign nothing",
    )
    sign.set_defaults(_review=_sign)

    report = sub.add_parser(
        "report",
        help="write build_artifacts/report.md (the CFEP-03 comment, also printed) and timeline.svg",
        description="report.md and timeline.svg in this checkout's build_artifacts/, from it "
        "or the given batches (per config the best record wins, as `review merge` picks).",
    )
    report.add_argument("dirs", type=Path, nargs="*", metavar="DIR")
    report.set_defaults(_review=_report)

    request = sub.add_parser(
        "request",
        help="print the conda-forge/admin-requests cfep3_copy entry for a batch's packages",
        description="The cfep3_copy request for every package of DIR's SHA256SUMS, uploaded "
        "to CHANNEL (e.g. jdoe/label/cfep03), headed by the records' provenance as comments.",
    )
    request.add_argument("channel", metavar="CHANNEL")
    request.add_argument("dir", type=Path, nargs="?", default=None, metavar="DIR")
    request.add_argument("--allow-other-engine", action="store_true", help=ALLOW_HELP)
    request.set_defaults(_review=_request)

    merge = sub.add_parser(
        "merge",
        help="combine other machines' batches into this checkout's build_artifacts/",
        description="Copy the packages, logs and done markers of other machines' batches into "
        "build_artifacts/ and write one summary.json, SHA256SUMS and log_files.zip.",
    )
    merge.add_argument("dirs", type=Path, nargs="+", metavar="DIR")
    merge.add_argument(
        "--request", metavar="CHANNEL", help="then print the cfep3_copy request (review request)"
    )
    merge.add_argument("--allow-other-engine", action="store_true", help=ALLOW_HELP)
    merge.set_defaults(_review=_merge)

    publish = sub.add_parser(
        "publish",
        help="after the verify checks pass on build_artifacts/, put its packages into a channel",
        description="DEST: a directory (/path, ./dir or file://..., indexed with py-rattler) or "
        "anaconda.org's OWNER[/label/LABEL] (anaconda-client, token in ANACONDA_API_TOKEN; "
        "never conda-forge or cf-staging); docs/fork.md.",
    )
    publish.add_argument("dest", metavar="DEST")
    publish.add_argument("--allow-other-engine", action="store_true", help=ALLOW_HELP)
    publish.set_defaults(_review=_publish)

    why = sub.add_parser(
        "why",
        help="print the first compiler, CMake, linker, test, download or solver error in "
        "CONFIG's log",
        description="The first real error of CONFIG's log, with context and the log's path. DIR: "
        "a batch folder or its log_files.zip, a folder holding the config's log alone (no "
        "summary.json), or the log file itself (one downloaded from a CI job); default "
        "build_artifacts/.",
    )
    why.add_argument("config", metavar="CONFIG", help="a config name, label or glob")
    why.add_argument("dir", type=Path, nargs="?", default=None, metavar="DIR|LOG")
    why.set_defaults(_review=_why)


def _signature_options(verify: argparse.ArgumentParser) -> None:
    group = verify.add_argument_group(
        "signatures", "each package's <package>.sigs (review sign), checked offline"
    )
    group.add_argument(
        "--identity",
        metavar="ID",
        help="the signer every package's certificate must name: the delegate's e-mail, or the "
        "workflow's URL (https://github.com/OWNER/REPO/.github/workflows/build.yml@refs/heads/"
        "BRANCH), as the PR claims",
    )
    group.add_argument(
        "--issuer",
        metavar="URL",
        help="the OIDC issuer that vouched for it (https://token.actions.githubusercontent.com, "
        "https://github.com/login/oauth, https://accounts.google.com, ...)",
    )
    group.add_argument(
        "--target-channel",
        metavar="CHANNEL",
        help="the channel each statement must name (as `review sign --channel` takes it; "
        "--channel is the rebuild's package channel)",
    )
    group.add_argument(
        "--trusted-root",
        type=Path,
        metavar="FILE",
        help="Sigstore's trusted_root.json to verify against (default: sigstore-python's "
        "production root, as it ships it)",
    )
    group.add_argument(
        "--require-signature",
        action="store_true",
        help="a package without a signature is a finding, not a NOTE",
    )


def run(args: argparse.Namespace, console: Console) -> int:
    return args._review(args, console)


def _root() -> Path:
    from tools.foundation.repo import find_root
    from tools.smithy.forge_yml import load_forge_yml

    root = find_root()
    load_forge_yml(root)  # checked as build-locally.py checks it
    return root


def _dir(root: Path, given: Path | None) -> Path:
    return given if given is not None else root / "build_artifacts"


def _verify(args: argparse.Namespace, console: Console) -> int:
    from tools.review.verify import verify

    root, say = _root(), console.say
    rebuild = None
    if args.rebuild:
        from tools.review.rebuild import run_rebuild

        def rebuild():
            return run_rebuild(root, args, say)

    return verify(
        root, args.dir, args.commit, say=say, allow_other_engine=args.allow_other_engine,
        rebuild=rebuild, claim=_claim(args),
    )  # fmt: skip


def _claim(args: argparse.Namespace):
    from tools.review.attest import channel_url
    from tools.review.signatures import Claim

    channel = args.target_channel
    return Claim(
        identity=args.identity,
        issuer=args.issuer,
        trusted_root=args.trusted_root,
        channel=channel_url(channel, flag="--target-channel") if channel else None,
        required=args.require_signature,
    )


def _sign(args: argparse.Namespace, console: Console) -> int:
    import sys

    from tools.review.sign import sign

    return sign(
        _root(),
        args.dir,
        args.channel,
        say=console.say,
        note=console.note,
        interactive=sys.stdin.isatty(),
        oob=args.oob,
        dry_run=args.dry_run,
    )


def _report(args: argparse.Namespace, console: Console) -> int:
    from tools.review.report import write_report

    return write_report(_root(), args.dirs, console.say, console.note)


def _request(args: argparse.Namespace, console: Console) -> int:
    from tools.review.modes import request

    root = _root()
    request(
        root,
        args.channel,
        _dir(root, args.dir),
        console,
        allow_other_engine=args.allow_other_engine,
    )
    return 0


def _merge(args: argparse.Namespace, console: Console) -> int:
    from tools.review.modes import merge_folders

    return merge_folders(
        _root(),
        args.dirs,
        console,
        request_channel=args.request,
        allow_other_engine=args.allow_other_engine,
    )


def _publish(args: argparse.Namespace, console: Console) -> int:
    import os

    from tools.foundation.proc import SECRET_ENV_VARS
    from tools.foundation.secrets import UPLOAD_TOKEN_VARS
    from tools.review.publish import publish

    env = {k: v for k, v in os.environ.items() if k not in SECRET_ENV_VARS}
    token = next((os.environ[n] for n in UPLOAD_TOKEN_VARS if os.environ.get(n)), None)
    return publish(
        _root(),
        args.dest,
        env,
        token,
        say=console.say,
        allow_other_engine=args.allow_other_engine,
    )


def _why(args: argparse.Namespace, console: Console) -> int:
    from tools.review.modes import why

    root = _root()
    return why(root, args.config, _dir(root, args.dir), console)
