"""What the embedded engine builds from: copies, in the work root, of the recipe folder and
the variant files, carrying the channel, source archive, license and ccache changes (cli.py
says why each)."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
from pathlib import Path

from tools.rattler_build import workroot

LICENSE_COPY = "recipe-scripts-license.txt"

#: build_steps.sh's ccache.conf, as the variables ccache reads before any file.
CCACHE_SETTINGS = {
    "CCACHE_NOHASHDIR": "1",
    "CCACHE_COMPRESS": "1",
    "CCACHE_SLOPPINESS": "pch_defines,time_macros,include_file_mtime,include_file_ctime",
}


def ccache_wrapper(folder: Path, real: str, cache: Path, base: Path) -> Path:
    """``folder/ccache``: the real ccache with the cache settings baked in."""
    settings = {"CCACHE_DIR": str(cache), "CCACHE_BASEDIR": str(base), **CCACHE_SETTINGS}
    lines = ["#!/bin/sh", "# build-locally's ccache for the embedded engine (cli.py says why)"]
    lines += [f"{k}={shlex.quote(v)}; export {k}" for k, v in settings.items()]
    lines.append(f'exec {shlex.quote(real)} "$@"')
    folder.mkdir(parents=True, exist_ok=True)
    wrapper = folder / "ccache"
    wrapper.write_text("\n".join(lines) + "\n")
    wrapper.chmod(0o755)
    return wrapper


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


def recipe_file(args: argparse.Namespace) -> Path:
    return args.recipe / "recipe.yaml" if args.recipe.is_dir() else args.recipe


def stage_inputs(args: argparse.Namespace, root: Path) -> tuple[Path, list[str]]:
    """Copies, in the work root, of the recipe folder and variant files the engine reads,
    carrying the channel, source and license changes."""
    recipe = recipe_file(args)
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
