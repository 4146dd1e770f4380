"""``python -m tools bump``: move both recipes to a new PyTorch release."""

from __future__ import annotations

import argparse
from pathlib import Path

from tools.foundation.log import Console

HELP = "move both recipes to a new PyTorch release: sha256, patches, archive and wheel facts"

EPILOG = """\
stages, in order (docs/bump.md is the manual):
  1. fetch the archive (--source PATH or URL, file:// included; default: the recipe's source
     url with VERSION) and compute its sha256. No archive and no network: bump refuses and
     prints the command that fetches one; it never writes a placeholder.
  2. try every patch both recipes list on the new source (GNU patch -p1, in order); a patch
     that no longer applies is named with the files of its rejected hunks.
  3. report the new source's build backend (recipe/build_backend.py decides, as in the build).
  4. from the archive alone: requires-python (pyproject.toml; Pythons below it get a skip in
     both recipes), the C++ standard TorchConfig.cmake.in requires (recipe/cmake_test follows
     it), the oldest CUDA its CMake accepts (configs below it are listed).
  5. the options and environment knobs its CMake reads ($ENV{...}, cmake/EnvVarForwarding.cmake)
     that neither build script names.
  6. every licence file the recipes list, looked up in the archive.
  7. with --wheel: the CUDA release (cuda-toolkit[...]==X or nvidia-cuda-runtime), the
     release's commit (torch/version.py's git_version) and the pins that moved (as drift);
     Requires-Python when the source declares none.
  8. write version, sha256, build number 0 (kept when VERSION is the recipe's version) and,
     with --wheel, the commit (git_version) into meta.yaml and the v1 recipe, each
     atomically; nothing is written when a stage refuses.
  9. rewrite README.md's CI-job table and (with --wheel) docs/drift.md's drift table; with
     --pinning, .ci_support too (as matrix --write).
  10. print the checklist of what only a person can decide.

exit status: 0 bumped; 1 bumped, but a patch no longer applies (refresh or drop it, then run
bump again) or, for a new VERSION without --wheel, the recipes still record the previous
release's commit (run bump again with --wheel), summed up in a last line starting
`problems:`; 2 bad input (a source that cannot be fetched or read, a wheel of another
release or without a commit, recipes that disagree), in one `error:` line.
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("version", metavar="VERSION", help="the release, like 2.15.0")
    parser.add_argument(
        "--source",
        metavar="PATH_OR_URL",
        help="the release archive (default: the recipe's source url for VERSION)",
    )
    parser.add_argument("--wheel", metavar="WHEEL", help="the release's torch wheel")
    parser.add_argument(
        "--pinning", metavar="PATH", help="conda-forge pinning: also rerender .ci_support"
    )
    parser.add_argument(
        "--recipe-dir", metavar="DIR", help="the recipe (default: <feedstock>/recipe)"
    )


def run(args: argparse.Namespace, console: Console) -> int:
    from tools.bump.pipeline import BumpRequest, bump
    from tools.commands.explain import readme_table_of
    from tools.foundation import repo
    from tools.foundation.errors import ProblemsFound

    say = console.say

    root = repo.find_root()
    recipe = repo.recipe_dir(args.recipe_dir, root)
    result = bump(
        BumpRequest(
            version=args.version,
            root=root,
            recipe_dir=recipe,
            source=args.source,
            wheel=Path(args.wheel) if args.wheel else None,
            pinning=args.pinning,
            readme_table=readme_table_of,
        )
    )
    say(f"pytorch {result.previous.version} -> {args.version}")
    say(f"  source:  {result.archive.origin}")
    say(f"  sha256:  {result.archive.sha256}")
    backend = result.backend
    say(f"  backend: {backend.kind or 'unknown'} ({backend.declared}; {backend.source})")
    for tried in result.patches:
        say(f"  patch    {tried.describe()}")
    if result.facts is not None:
        facts = result.facts
        say(f"  wheel:   torch {facts.version}, Requires-Python {facts.requires_python or '-'}")
        say(f"  CUDA:    {facts.cuda.text.split(';')[0] if facts.cuda else 'none (CPU wheel)'}")
        say(f"  commit:  {facts.git_version} (torch/version.py's git_version)")
    if result.requires_python:
        say(f"  Python:  requires {result.requires_python} ({result.requires_python_origin})")
    if result.pythons.dropped:
        say(
            f"  Python:  skips {', '.join(result.pythons.dropped)} "
            f"(below {result.pythons.floor}) in both recipes"
        )
    for path in result.written:
        say(f"changed: {path}")
    say("checklist (only a person can decide these):")
    for item in result.checklist or ["nothing: review the diff and commit"]:
        say(f"  - {item}")
    problems = []
    if result.failing_patches:
        names = ", ".join(p.name for p in result.failing_patches)
        problems.append(f"{len(result.failing_patches)} patch(es) no longer apply: {names}")
    if result.stale_commit:
        problems.append(
            f"the recipes still record {result.previous.version}'s commit "
            f"{result.stale_commit} as git_version; only the release's wheel states "
            f"{args.version}'s: run bump again with --wheel"
        )
    if problems:
        raise ProblemsFound("; ".join(problems))
    return 0
