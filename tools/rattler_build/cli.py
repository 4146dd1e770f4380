"""`rattler-build build`, over py-rattler-build: the embedded engine, and the CLI the tests'
container runs (tests/fixtures/rattler_build/rattler-build execs this module).

    python -m tools.rattler_build build --recipe PATH [-m VARIANT.yaml]...
        [-c CHANNEL]... [--output-dir DIR] [--target-platform P] [--build-platform P]
        [--test skip|native|native-and-emulated] [--no-build-id] [--keep-build]
        [--package-format FMT] [--extra-meta KEY=VALUE]...
        [--source-archive FILE] [--feedstock-license FILE] [--ccache DIR --ccache-stats FILE]
        [--timestamp EPOCH] [--render-only]
    python -m tools.rattler_build --version

PyPI ships rattler-build as this Python module, not as the CLI binary; the build is the same
Rust engine's: render with the variant files, solve against the channels, run the build
scripts, package, test. Exit status 1 when the build fails, 2 on a usage error, as the
binary's. Where this differs from the binary:

- ``-c`` replaces the variant files' ``channel_sources`` (the binary refuses both at once):
  an air-gapped build names its mirror and nothing else. rattler-build counts
  channel_sources in the package hash, so the build strings follow the mirror's name;
- ``--source-archive FILE`` (ours) builds from that local copy of the archive the recipe's
  ``source: url:`` names; rattler-build still checks it against the recipe's sha256;
- ``--feedstock-license FILE`` (ours) ships the feedstock's license as
  ``recipe-scripts-license.txt``, as .scripts/build_steps.sh copies it for conda-build;
- ``--ccache DIR`` (ours) compiles through the ccache on PATH with its cache in DIR and
  writes ``ccache --print-stats`` to ``--ccache-stats``: rattler-build hands the build
  scripts PATH but no other variable (and HOME is the work folder), so the settings travel
  in a ``ccache`` wrapper put first on PATH, which build.sh picks as its compiler launcher;
- ``--extra-meta`` is accepted and said to be dropped: py-rattler-build has no parameter for
  it, so the packages carry no commit (summary.json's provenance says so);
- it builds in the fixed work root of workroot.py, not under ``--output-dir``, and moves the
  packages there afterwards, so two clones at different paths build the same bytes;
- a folder channel is staged at a fixed place in the work root (workroot.STAGED_CHANNEL),
  so the package hash, which counts channel_sources, does not depend on where it is;
- ``--timestamp EPOCH`` (ours; build-locally gives the commit's time) repacks every package
  at that time (repack.py: what rattler-build takes from the clock or a hash map), with the
  recipe as committed in info/recipe/ where ``--source-archive`` staged another URL.

The recipe folder is always staged as a copy in the work root, so the user's recipe/ is never
written to and its path never reaches the build. ``--render-only`` is the binary's: the
rendered outputs printed as JSON (rattler-build's own code path), nothing built or written;
``EXTRA_CB_OPTIONS=--render-only`` makes a container build a dry run of build_steps.sh.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

from tools.rattler_build import NO_PACKAGE_COMMIT, workroot
from tools.rattler_build.network import network_hint
from tools.rattler_build.output import show_build_output, show_script_log, work_folders
from tools.rattler_build.source import source_of
from tools.rattler_build.stage import ccache_wrapper, recipe_file, stage_inputs


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="rattler-build")
    top.add_argument("--version", action="store_true", help="print the engine version")
    commands = top.add_subparsers(dest="command")
    build = commands.add_parser("build", help="build a recipe")
    build.add_argument("-r", "--recipe", required=True, type=Path)
    build.add_argument("-m", "--variant-config", action="append", default=[])
    build.add_argument("-c", "--channel", action="append", default=[])
    build.add_argument("--output-dir", default="output")
    build.add_argument("--target-platform")
    build.add_argument("--build-platform")
    build.add_argument("--test", choices=("skip", "native", "native-and-emulated"))
    build.add_argument("--no-build-id", action="store_true")
    build.add_argument("--keep-build", action="store_true")
    build.add_argument("--package-format")
    build.add_argument("--extra-meta", action="append", default=[], metavar="KEY=VALUE")
    build.add_argument("--source-archive", type=Path)
    build.add_argument("--feedstock-license", type=Path)
    build.add_argument("--ccache", type=Path)
    build.add_argument("--ccache-stats", type=Path)
    build.add_argument("--timestamp", type=int, metavar="EPOCH")
    build.add_argument("--render-only", action="store_true", help="print the render; build nothing")
    return top


def _normalise(args: argparse.Namespace, staged_recipe: Path, packages: list[Path]) -> None:
    """Each built package repacked at ``--timestamp`` (repack.py), with no path of this
    machine left in info/: the recipe as committed, and the source archive's URL the
    recipe's own."""
    from tools.rattler_build.repack import Rewrites, repack_all, zstd_level

    restore, replace = {}, []
    if args.source_archive:
        original = recipe_file(args)
        restore["info/recipe/recipe.yaml"] = original.read_bytes()
        staged_url = staged_recipe.parent.parent / "sources" / args.source_archive.name
        replace.append((staged_url.resolve().as_uri(), source_of(original).url))
    # The staged channels' URLs, then the work root's: location-free labels (workroot.py).
    root = staged_recipe.parent.parent
    replace.append((f"{root.as_uri()}/{workroot.STAGED_CHANNEL}", workroot.CHANNEL_LABEL))
    replace.append((f"{root.as_uri()}/", workroot.OUTPUT_LABEL))
    rewrites = Rewrites(args.timestamp, restore, tuple(replace))
    repack_all(packages, rewrites, zstd_level(args.package_format))


def _usage_error(args: argparse.Namespace) -> str | None:
    for item in args.extra_meta:
        if "=" not in item:
            return f"--extra-meta {item!r} is not KEY=VALUE"
    recipe = recipe_file(args)
    if not recipe.is_file():
        return f"{args.recipe}: no recipe file (recipe.yaml) there"
    for variant in args.variant_config:
        if not Path(variant).is_file():
            return f"-m {variant}: no such file"
    for flag, path in (("--source-archive", args.source_archive), ("--feedstock-license",
                       args.feedstock_license)):  # fmt: skip
        if path is not None and not path.is_file():
            return f"{flag} {path}: no such file"
    return None


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    import rattler_build

    if args.version:
        print(f"rattler-build {rattler_build.rattler_build_version()}")
        return 0
    if args.command != "build":
        parser().print_usage(sys.stderr)
        return 2
    problem = _usage_error(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    if args.render_only:
        return _render_only(rattler_build, args)
    if args.extra_meta:
        print(f"note: --extra-meta {args.extra_meta} dropped: {NO_PACKAGE_COMMIT}")
    with workroot.held(say=lambda line: print(line, file=sys.stderr)) as root:
        recipe, variants = stage_inputs(args, root)
        wrapper = None
        if args.ccache is not None:
            real = shutil.which("ccache")
            if real is None:
                print("error: --ccache: no ccache on PATH", file=sys.stderr)
                return 2
            # The work root is the base: compile commands name paths under it alone.
            wrapper = ccache_wrapper(root / "bin", real, args.ccache, root)
            os.environ["PATH"] = f"{wrapper.parent}{os.pathsep}{os.environ.get('PATH', '')}"
            subprocess.run([str(wrapper), "--zero-stats"], stdout=subprocess.DEVNULL, check=False)
        status = 1
        try:
            status = _build(rattler_build, args, recipe, variants, root)
            if status == 0 and args.timestamp is not None:
                _normalise(args, recipe, workroot.built_packages(root))
            return status
        finally:
            if wrapper is not None and args.ccache_stats is not None:
                stats = subprocess.run(
                    [str(wrapper), "--print-stats"], capture_output=True, text=True, check=False
                )
                args.ccache_stats.write_text(stats.stdout)
            workroot.deliver(root, Path(args.output_dir), keep_build=args.keep_build)
            if status == 0:
                workroot.clear(root)
            elif (root / "bld").is_dir():
                print(f"note: the work folders stay in {root / 'bld'} until the next build",
                      file=sys.stderr)  # fmt: skip


def _render_only(rattler_build, args: argparse.Namespace) -> int:
    """The binary's ``--render-only``: its JSON of every output on stdout, no work root."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            rattler_build.build_recipes(
                [str(recipe_file(args))],
                render_only=True,
                variant_config=args.variant_config or None,
                channel=None if args.variant_config else args.channel or None,
                target_platform=args.target_platform,
                build_platform=args.build_platform,
            )
        except rattler_build.RattlerBuildError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
    return 0


def _build(
    rattler_build, args: argparse.Namespace, recipe: Path, variants: list[str], root: Path
) -> int:
    before = work_folders(root)
    with warnings.catch_warnings():
        # build_recipes is the one call taking the CLI's arguments as they are.
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            rattler_build.build_recipes(
                [str(recipe)],
                variant_config=variants or None,
                # -c went into the variant files' channel_sources (rattler-build refuses
                # both); none: channel_sources, else conda-forge (the binary's default).
                channel=None if args.variant_config else args.channel or None,
                output_dir=str(root),
                target_platform=args.target_platform,
                build_platform=args.build_platform,
                test=args.test,
                no_build_id=args.no_build_id,
                keep_build=True,  # the script's output lives there: show_build_output
                package_format=args.package_format,
            )
        except rattler_build.RattlerBuildError as error:
            show_script_log(root)
            # The line naming what could not be reached comes first: it is what `review why`
            # shows as the error (rattler-build's own line names no URL).
            # A new line first: rattler-build's progress bars end in a carriage return.
            hint = network_hint(str(error), args)
            if hint:
                print(f"\nerror: {hint}", file=sys.stderr)
            print(f"error: {error}", file=sys.stderr)
            return 1
    show_build_output(root, before, keep=args.keep_build)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
