"""A core member's rebuild of one config of an upload: the same bytes, or what differs.

    python -m tools.review.rebuild DIR CONFIG [--commit SHA] [--engine E]
        [--channel URL_OR_DIR]... [--source-cache DIR] [--ccache DIR]
        [--keep DIR | --rebuilt DIR]

(``python -m tools review verify DIR --rebuild CONFIG`` runs :func:`rebuild_and_compare`
after its cross-checks; this module's own command line is the rebuild alone.) The checkout
is cloned at the recorded commit (or ``--commit``, the PR's head) into a temporary folder,
``build-locally.py CONFIG`` builds it there with the build options given (as build-locally.py
takes them), and each package the record lists is compared byte for byte with the upload's
(compare.py names what differs). The embedded engine builds in one fixed folder and stamps
every time with the commit's (tools/rattler_build/workroot.py, repack.py), so the clone's own
path does not matter.

The build, host and test environments are the upload's: the rebuild solves against fresh
channels holding exactly the packages its builds resolved, copied (sha256 checked) from the
``--channel`` folders given (pinned.py); a recorded package they lack is a FAIL naming it.
What a rebuild cannot catch is what both sides share: the engine (the same py-rattler-build
from requirements.txt) and those packages (docs/cfep03.md).

Exit status 0: every package identical; 1: a package differs or was not rebuilt (one
``FAIL`` line each, then ``problems:``); 2: bad input, one ``error:`` line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from tools.foundation.errors import ProblemsFound, UserError, exit_code_of
from tools.foundation.log import Console
from tools.foundation.proc import call
from tools.foundation.selection import select_one
from tools.localbuild.records.configs import discover, labels
from tools.review.compare import differences
from tools.review.crosscheck import Finding
from tools.review.pinned import pinned_channels
from tools.review.rebuild_options import add_build_options
from tools.review.upload import open_batch

#: The build-locally.py options a rebuild passes on (the ones that choose how it builds).
BUILD_OPTIONS = ("--engine", "--channel", "--source-cache", "--ccache")
REBUILD_TIMEOUT_S = 24 * 3600


@dataclass(frozen=True)
class BuildOptions:
    """build-locally.py's options for the rebuild, paths made absolute (it runs in a clone)."""

    engine: str | None = None
    channels: tuple[str, ...] = ()
    source_cache: Path | None = None
    ccache: Path | None = None

    def argv(self) -> list[str]:
        words = ["--engine", self.engine] if self.engine else []
        for channel in self.channels:
            folder = Path(channel).expanduser()
            words += ["--channel", str(folder.resolve()) if folder.is_dir() else channel]
        if self.source_cache is not None:
            words += ["--source-cache", str(self.source_cache.resolve())]
        if self.ccache is not None:
            words += ["--ccache", str(self.ccache.resolve())]
        return words


@dataclass
class Rebuilt:
    """What :func:`rebuild_and_compare` found: ``verified`` is the line a success prints."""

    findings: list[Finding] = field(default_factory=list)
    verified: str | None = None
    seconds: float = 0.0


def _record(summary: Path, config: str) -> dict:
    try:
        document = json.loads(summary.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise UserError(f"{summary}: not valid JSON ({exc})") from None
    record = (document.get("configs") or {}).get(config)
    if not isinstance(record, dict):
        raise UserError(f"{summary}: no record of {config}; the upload did not build it")
    if record.get("status") != "done" or not record.get("packages"):
        raise UserError(
            f"{summary}: {config} is {record.get('status')!r} with no packages; nothing to rebuild"
        )
    return record


def _commit_of(record: dict, given: str | None) -> str:
    recorded = (record.get("provenance") or {}).get("commit")
    commit = given or recorded
    if not commit:
        raise UserError(
            "the record names no commit (built outside a git checkout); give --commit SHA, "
            "the PR's head"
        )
    return str(commit)


def _clone(root: Path, commit: str, into: Path) -> Path:
    """``root``'s repository cloned at ``commit`` (objects shared, nothing of root written)."""
    clone = into / "pytorch-feedstock"
    found = call("git", "-C", str(root), "cat-file", "-e", f"{commit}^{{commit}}",
                 check=False, capture=True, quiet=True)  # fmt: skip
    if found.returncode != 0:
        raise UserError(
            f"commit {commit} is not in {root}; fetch the PR's head first "
            "(git fetch origin pull/N/head)"
        )
    call("git", "clone", "--quiet", "--shared", "--no-checkout", str(root), str(clone),
         capture=True, quiet=True)  # fmt: skip
    call("git", "-C", str(clone), "-c", "advice.detachedHead=false", "checkout", "--quiet",
         commit, capture=True, quiet=True)  # fmt: skip
    return clone


def rebuild_and_compare(
    root: Path,
    upload: Path,
    config_text: str,
    *,
    commit: str | None = None,
    options: BuildOptions = BuildOptions(),  # frozen, so safe to share
    say: Callable[[str], None] = print,
    env: dict[str, str] | None = None,
    keep: Path | None = None,
    rebuilt: Path | None = None,
) -> Rebuilt:
    """Rebuild ``config_text`` from ``root``'s repository at the upload's commit (``commit``
    if given) and compare each of the record's packages with the upload's; ``keep``: a
    folder that gets the rebuilt packages (in their subdir folders) to inspect; ``rebuilt``:
    such a folder from an earlier rebuild of the same commit, compared with instead of
    building again (a delegate's second upload of one commit)."""
    names = discover(root)
    config = select_one(names, config_text, labels=labels(root, names))
    result = Rebuilt()
    with (
        open_batch(upload, command="review verify --rebuild") as files,
        tempfile.TemporaryDirectory(prefix="rebuild-") as tmp,
    ):
        record = _record(files.summary, config)
        sha = _commit_of(record, commit)
        against = f"the earlier rebuild in {rebuilt}"
        paths = [str(p["path"]) for p in record["packages"]]
        if rebuilt is None:
            # Exactly the packages the upload's builds resolved (pinned.py).
            pinned, missing, note = pinned_channels(
                [files.packages_dir / p for p in paths], options.channels, Path(tmp) / "pinned"
            )
            if missing:
                result.findings += missing
                return result
            if note:
                say(note)
            if pinned is not None:
                options = replace(options, channels=tuple(str(p) for p in pinned))
            clone = _clone(root, sha, Path(tmp))
            say(f"rebuild: {config} at {sha[:12]} in {clone}")
            start = time.monotonic()
            # Its output goes where ours does: a rebuild takes as long as the build did.
            built = call(
                sys.executable, "build-locally.py", config, *options.argv(),
                cwd=clone, env=dict(os.environ if env is None else env), check=False,
                quiet=True, timeout=REBUILD_TIMEOUT_S,
            )  # fmt: skip
            result.seconds = time.monotonic() - start
            if built.returncode != 0:
                problem = f"the rebuild failed (exit {built.returncode}); its output says why"
                result.findings.append(Finding(config, problem))
                return result
            rebuilt = clone / "build_artifacts"
            against = f"rebuilt in {result.seconds:.0f} s"
            if keep is not None:
                _keep(rebuilt, keep)
        elif not rebuilt.is_dir():
            raise UserError(f"--rebuilt {rebuilt}: not a folder (one that --keep filled)")
        result.findings += _compared(files.packages_dir, rebuilt, paths)
    if not result.findings:
        result.verified = (
            f"verified by rebuild: {config} at commit {sha[:12]}: {len(paths)} package(s) "
            f"identical byte for byte ({against})"
        )
    return result


def _compared(upload: Path, rebuilt: Path, paths: Sequence[str]) -> list[Finding]:
    """A finding for each of ``paths`` that is not the same file in both folders."""
    findings = []
    for path in paths:
        ours, theirs = upload / path, rebuilt / path
        if not ours.is_file():
            findings.append(Finding(path, "listed in the record, not in the upload"))
        elif not theirs.is_file():
            made = sorted(
                str(p.relative_to(rebuilt))
                for p in rebuilt.glob("*/*")
                if p.name.endswith((".conda", ".tar.bz2"))
            )
            findings.append(
                Finding(path, f"the rebuild made no such package (it made {', '.join(made)})")
            )
        elif found := differences(ours, theirs):
            findings.append(Finding(path, "differs from the rebuild: " + "; ".join(found)))
    return findings


def _keep(artifacts: Path, keep: Path) -> None:
    for package in artifacts.glob("*/*"):
        if package.name.endswith((".conda", ".tar.bz2")):
            (keep / package.parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copy2(package, keep / package.parent.name / package.name)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="python -m tools.review.rebuild",
        description="Rebuild CONFIG from this checkout at the upload's commit and compare "
        "each package byte for byte with DIR's (docs/cfep03.md).",
        epilog="exit status: 0 every package identical; 1 a package differs or was not "
        "rebuilt; 2 bad input",
    )
    top.add_argument("dir", type=Path, metavar="DIR", help="the upload (as review verify)")
    top.add_argument("rebuild", metavar="CONFIG", help="the config to rebuild (name or label)")
    top.add_argument("--commit", metavar="SHA", help="the PR's head (default: the record's)")
    add_build_options(top)
    return top


def options_of(args: argparse.Namespace) -> BuildOptions:
    return BuildOptions(args.engine, tuple(args.channels), args.source_cache, args.ccache)


def report(result: Rebuilt, say: Callable[[str], None] = print) -> int:
    """The FAIL lines and the verdict; raises ProblemsFound when a package differs."""
    for finding in result.findings:
        say(finding.line())
    if result.findings:
        raise ProblemsFound(
            f"NOT verified by rebuild: {len(result.findings)} package(s) differ or were not "
            f"rebuilt; first: {result.findings[0].subject}"
        )
    say(str(result.verified))
    return 0


def run_rebuild(root: Path, args: argparse.Namespace, say: Callable[[str], None]) -> Rebuilt:
    """:func:`rebuild_and_compare` with the options :func:`add_build_options` read."""
    options = options_of(args)
    return rebuild_and_compare(
        root, args.dir, args.rebuild, commit=args.commit, options=options, say=say,
        keep=args.keep, rebuilt=args.rebuilt,
    )  # fmt: skip


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)

    def run() -> int:
        from tools.foundation.repo import find_root

        root = find_root(Path.cwd())
        return report(run_rebuild(root, args, console.say))

    console = Console()
    return exit_code_of(run, stderr=console.err)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
