"""`rattler-build build`, over py-rattler-build: the embedded engine, and the CLI the tests'
container runs (tests/fixtures/rattler_build/rattler-build execs this module).

    python -m tools.localbuild.engines.rattler build --recipe PATH [-m VARIANT.yaml]...
        [-c CHANNEL]... [--output-dir DIR] [--target-platform P] [--build-platform P]
        [--test skip|native|native-and-emulated] [--no-build-id] [--keep-build]
        [--package-format FMT] [--extra-meta KEY=VALUE]...
        [--source-archive FILE] [--feedstock-license FILE] [--ccache DIR --ccache-stats FILE]
        [--timestamp EPOCH]
    python -m tools.localbuild.engines.rattler --version

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
written to and its path never reaches the build.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

from tools.localbuild.engines import workroot
from tools.localbuild.records.provenance import NO_PACKAGE_COMMIT

LICENSE_COPY = "recipe-scripts-license.txt"


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
    return top


#: build_steps.sh's ccache.conf, as the variables ccache reads before any file.
CCACHE_SETTINGS = {
    "CCACHE_NOHASHDIR": "1",
    "CCACHE_COMPRESS": "1",
    "CCACHE_SLOPPINESS": "pch_defines,time_macros,include_file_mtime,include_file_ctime",
}


def ccache_wrapper(folder: Path, real: str, cache: Path, base: Path) -> Path:
    """``folder/ccache``: the real ccache with the cache settings baked in."""
    settings = {"CCACHE_DIR": str(cache), "CCACHE_BASEDIR": str(base), **CCACHE_SETTINGS}
    lines = ["#!/bin/sh", "# build-locally's ccache for the embedded engine (rattler.py says why)"]
    lines += [f"{k}={shlex.quote(v)}; export {k}" for k, v in settings.items()]
    lines.append(f'exec {shlex.quote(real)} "$@"')
    folder.mkdir(parents=True, exist_ok=True)
    wrapper = folder / "ccache"
    wrapper.write_text("\n".join(lines) + "\n")
    wrapper.chmod(0o755)
    return wrapper


def show_script_log(output_dir: Path, lines: int = 200) -> None:
    """The end of the failed build script's output: py-rattler-build keeps it in the work
    folder's conda_build.log, where the binary would have streamed it."""
    logs = sorted(output_dir.glob("bld/*/work/conda_build.log"), key=lambda p: p.stat().st_mtime)
    if logs:
        text = logs[-1].read_text(errors="replace").splitlines()
        print(f"--- last {lines} lines of {logs[-1]}", file=sys.stderr)
        print("\n".join(text[-lines:]), file=sys.stderr)


def _work_folders(output_dir: Path) -> set[Path]:
    return {p.parent.parent for p in output_dir.glob("bld/*/work/conda_build.log")}


def show_build_output(output_dir: Path, before: set[Path], *, keep: bool) -> None:
    """The whole output of each build script this build ran, printed as the binary streams
    it (into the config's log): py-rattler-build keeps it in the work folder's
    conda_build.log, which it deletes on success unless asked to keep the work folder. So the
    build keeps them, and this removes what the person did not ask to keep."""
    made = sorted(_work_folders(output_dir) - before, key=lambda p: p.stat().st_mtime)
    for folder in made:
        log = folder / "work" / "conda_build.log"
        print(f"--- the build script's output ({log.relative_to(output_dir).as_posix()})")
        with log.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                print(line.rstrip("\n"))
        sys.stdout.flush()
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


def with_channels(variant_text: str, channels: list[str]) -> str:
    """A variant file's text with ``channel_sources`` replaced by ``channels`` (one entry,
    comma-separated, as conda-smithy writes it)."""
    block = "channel_sources:\n- " + ",".join(channels) + "\n"
    new, count = re.subn(r"^channel_sources:\n(?:- .*\n)+", block, variant_text, flags=re.M)
    return new if count else variant_text + block


def with_source_archive(recipe_text: str, archive: Path) -> str:
    """The recipe with its one top-level ``url:`` pointing at the local archive."""
    new, count = re.subn(
        r"^(  url:[ \t]*)\S.*$", rf"\g<1>{archive.resolve().as_uri()}", recipe_text, flags=re.M
    )
    if count != 1:
        raise ValueError(f"expected one top-level source url, found {count}")
    return new


def _recipe_file(args: argparse.Namespace) -> Path:
    return args.recipe / "recipe.yaml" if args.recipe.is_dir() else args.recipe


def _staged(args: argparse.Namespace, root: Path) -> tuple[Path, list[str]]:
    """Copies, in the work root, of the recipe folder and variant files the engine reads,
    carrying the channel, source and license changes."""
    recipe = _recipe_file(args)
    folder = root / "recipe"
    shutil.copytree(recipe.parent, folder, ignore=shutil.ignore_patterns(LICENSE_COPY))
    copy = folder / recipe.name
    if args.source_archive:
        # The archive beside the recipe, at a path every machine shares (the URL is in
        # info/recipe/ until the repack gives the recipe's own back).
        local = root / "sources" / args.source_archive.name
        local.parent.mkdir()
        try:
            os.link(args.source_archive.resolve(), local)  # PyTorch's is hundreds of MB
        except OSError:  # another file system
            shutil.copyfile(args.source_archive, local)
        copy.write_text(with_source_archive(copy.read_text(), local))
    if args.feedstock_license:
        shutil.copyfile(args.feedstock_license, folder / LICENSE_COPY)
    args.channel = [_staged_channel(c, root, n) for n, c in enumerate(args.channel)]
    variants = []
    for index, variant in enumerate(args.variant_config):
        staged = root / f"variant-{index}-{Path(variant).name}"
        text = Path(variant).read_text()
        staged.write_text(with_channels(text, args.channel) if args.channel else text)
        variants.append(str(staged))
    return copy, variants


def _staged_channel(channel: str, root: Path, place: int) -> str:
    """A folder channel (a file URL) as its copy at a fixed place in the work root
    (workroot.STAGED_CHANNEL); a URL, a name or a missing folder as given."""
    if not channel.startswith("file://"):
        return channel
    from urllib.parse import unquote, urlparse
    from urllib.request import url2pathname

    folder = Path(url2pathname(unquote(urlparse(channel).path)))
    if not folder.is_dir():
        return channel  # the solve names it (network_hint)
    return workroot.stage_channel(folder, root, place).as_uri()


def _normalise(args: argparse.Namespace, staged_recipe: Path, packages: list[Path]) -> None:
    """Each built package repacked at ``--timestamp`` (repack.py), with no path of this
    machine left in info/: the recipe as committed, and the source archive's URL the
    recipe's own."""
    from tools.localbuild.engines.repack import Rewrites, repack_all, zstd_level

    restore, replace = {}, []
    if args.source_archive:
        from tools.localbuild.engines.airgap import source_of

        original = _recipe_file(args)
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
    recipe = _recipe_file(args)
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
    if args.extra_meta:
        print(f"note: --extra-meta {args.extra_meta} dropped: {NO_PACKAGE_COMMIT}")
    with workroot.held(say=lambda line: print(line, file=sys.stderr)) as root:
        recipe, variants = _staged(args, root)
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


def _build(
    rattler_build, args: argparse.Namespace, recipe: Path, variants: list[str], root: Path
) -> int:
    before = _work_folders(root)
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


#: How rattler-build reports a download that failed; it does not say which URL.
DOWNLOAD_FAILED = "Failed to download from URL"
#: How it reports a solve that failed, a channel it could not reach included.
SOLVE_FAILED = "Failed to resolve dependencies"
PROBE_TIMEOUT_S = 10


def network_hint(error: str, args: argparse.Namespace) -> str | None:
    """For a failure that may be this machine's network, what could not be reached and what
    to do without internet; ``None`` when the network is not the cause.

    rattler-build fetches the source before it solves, so a failed download without
    --source-archive is the recipe's archive; a channel it cannot reach makes the solve fail
    (``Failed to resolve dependencies``), so the channels are tried once more here."""
    if error.startswith(DOWNLOAD_FAILED) and args.source_archive is None:
        from tools.localbuild.engines.airgap import source_of

        recipe = args.recipe / "recipe.yaml" if args.recipe.is_dir() else args.recipe
        return (
            f"cannot download {source_of(recipe).url} (the source archive {recipe.name} "
            "names): this machine cannot reach it; on a machine with internet run "
            "`python build-locally.py --fetch-sources DIR`, copy DIR here and build with "
            "`--source-cache DIR`"
        )
    if not (error.startswith(DOWNLOAD_FAILED) or error.startswith(SOLVE_FAILED)):
        return None
    from tools.localbuild.engines.airgap import AIRGAP_DOC

    channels = args.channel or _variant_channels(args.variant_config) or ["conda-forge"]
    unreachable = [c for c in channels if not _reachable(c)]
    if not unreachable:
        return None
    return (
        f"cannot download from {', '.join(unreachable)}: this machine cannot reach "
        f"{'it' if len(unreachable) == 1 else 'them'}; build from a mirror or a folder of "
        f"packages with `--channel` ({AIRGAP_DOC})"
    )


def _reachable(channel: str) -> bool:
    """Whether a channel's server answers at all (any HTTP status counts); a folder does."""
    import urllib.error
    import urllib.request

    if channel.startswith("file://") or ("://" not in channel and "/" in channel):
        return True
    from tools.localbuild.engines.airgap import CHANNEL_ALIAS

    url = channel if "://" in channel else f"{CHANNEL_ALIAS}/{channel}"
    request = urllib.request.Request(f"{url.rstrip('/')}/noarch/repodata.json", method="HEAD")
    try:
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_S):
            return True
    except urllib.error.HTTPError:
        return True  # the server answered
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _variant_channels(variants: list[str]) -> list[str]:
    """The channel_sources of the variant files (one comma-separated entry each)."""
    found: list[str] = []
    for variant in variants:
        text = Path(variant).read_text(encoding="utf-8")
        match = re.search(r"^channel_sources:\n- (.*)$", text, flags=re.M)
        if match:
            found += [c for c in match.group(1).split(",") if c and c not in found]
    return found


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
