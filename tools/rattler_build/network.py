"""When a build fails for want of a network: what could not be reached, and what to do
without internet."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from tools.rattler_build.source import source_of

#: Where a channel name (conda-forge) is served from, as conda and rattler-build resolve it.
CHANNEL_ALIAS = "https://conda.anaconda.org"
#: The page that says what a build without internet needs.
AIRGAP_DOC = 'docs/build-locally.md, "Air-gapped builds"'
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
        recipe = args.recipe / "recipe.yaml" if args.recipe.is_dir() else args.recipe
        return (
            f"cannot download {source_of(recipe).url} (the source archive {recipe.name} "
            "names): this machine cannot reach it; on a machine with internet run "
            "`python build-locally.py --fetch-sources DIR`, copy DIR here and build with "
            "`--source-cache DIR`"
        )
    if not (error.startswith(DOWNLOAD_FAILED) or error.startswith(SOLVE_FAILED)):
        return None
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
