"""What a build downloads, for ``--dry-run``: every URL the run will fetch, so that a person
planning a build on a machine without internet knows what to bring (docs/build-locally.md,
"Air-gapped builds"), and what supplies each one instead.

A download is named by what decides it: the source archive by the recipe the engine builds,
the channels by the config's ``channel_sources`` (or ``--channel``), the image by the plan.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tools.foundation.errors import UserError
from tools.localbuild.engines import airgap
from tools.localbuild.engines.plan import BuildPlan
from tools.localbuild.options import Options
from tools.localbuild.records.configs import read_variant


@dataclass(frozen=True)
class Fetch:
    url: str
    what: str  # what it is, and who fetches it
    instead: str = ""  # what supplies it on a machine without internet


def channel_location(channel: str) -> str:
    """A channel as the URL it is read from: a name under conda's channel alias."""
    if "://" in channel:
        return channel
    if "/" in channel or channel.startswith("."):
        return Path(channel).expanduser().resolve().as_uri()
    return f"{airgap.CHANNEL_ALIAS}/{channel}"


def _channels(options: Options, plan: BuildPlan) -> list[str]:
    if plan.dispatch == "embedded" and options.channels:
        return [airgap.channel_url(c) for c in options.channels]
    value = read_variant(options.root / ".ci_support" / f"{plan.config}.yaml").get(
        "channel_sources", ["conda-forge"]
    )
    entries = value if isinstance(value, list) else [value]
    return [c.strip() for entry in entries for c in str(entry).split(",") if c.strip()]


def _recipe(options: Options, plan: BuildPlan) -> Path:
    """The recipe whose source the run fetches: the v1 recipe for the embedded engine, else
    meta.yaml (recipe.yaml on a feedstock switched to rattler-build)."""
    if plan.dispatch == "embedded":
        return Path(plan.argv[plan.argv.index("--recipe") + 1])
    meta = options.root / "recipe" / "meta.yaml"
    return meta if meta.is_file() else airgap.v1_recipe(options.root)


def of_plan(options: Options, plan: BuildPlan) -> tuple[list[Fetch], list[str]]:
    """What one config's run downloads, and what it reads from this machine instead."""
    downloads: list[Fetch] = []
    local: list[str] = []
    if plan.image:
        downloads.append(Fetch(plan.image, "the container image, pulled unless present"))
    if plan.dispatch in ("osx", "win"):
        script = "run_osx_build.sh" if plan.dispatch == "osx" else "run_win_build.bat"
        downloads.append(Fetch("micromamba", f".scripts/{script} downloads it"))
    archive = airgap.cached_archive(options.root, options.source_cache)
    if plan.dispatch == "embedded" and archive is not None:
        local.append(f"the source archive: {archive} (--source-cache)")
    else:
        recipe = _recipe(options, plan)
        try:
            url = airgap.source_of(recipe).url
        except UserError as exc:  # the render refuses such a recipe; the dry run says why
            url = f"the source {recipe.name} names, unread: {str(exc).split('; ')[0]}"
        instead = (
            "offline: --source-cache DIR, filled by --fetch-sources DIR where there is internet"
            if plan.dispatch == "embedded"
            else "offline: the embedded engine with --source-cache DIR"
        )
        downloads.append(Fetch(url, f"the source archive {recipe.name} names", instead))
    for channel in _channels(options, plan):
        location = channel_location(channel)
        if location.startswith("file://"):
            folder = Path(location.removeprefix("file://"))
            stale = airgap.stale_subdirs(folder) if folder.is_dir() else []
            index = (
                f"; the run indexes {', '.join(stale)} first, in a copy under "
                f"build_artifacts/{airgap.INDEXED_COPIES}/"
                if stale
                else ""
            )
            local.append(f"the channel {location} (--channel{index})")
            continue
        instead = (
            "offline: --channel MIRROR"
            if plan.dispatch == "embedded"
            else "offline: the embedded engine with --channel MIRROR"
        )
        downloads.append(
            Fetch(location, "a channel every solve reads: repodata, packages", instead)
        )
    return downloads, local


def describe(options: Options, plans: Sequence[BuildPlan]) -> list[str]:
    """The dry run's closing block: each download once, with what it is and what replaces it
    offline, then what the run reads from this machine instead."""
    downloads: dict[str, Fetch] = {}
    local: list[str] = []
    for plan in plans:
        fetched, here = of_plan(options, plan)
        for fetch in fetched:
            downloads.setdefault(fetch.url, fetch)
        local += [line for line in here if line not in local]
    lines = [
        "downloads: "
        + (
            "what the run fetches; a machine without internet needs each beforehand "
            f"({airgap.AIRGAP_DOC})"
            if downloads
            else "none"
        )
    ]
    lines += _listed(
        f"{f.url}  ({f.what}{'; ' + f.instead if f.instead else ''})" for f in downloads.values()
    )
    if local:
        lines.append("from this machine:")
        lines += _listed(local)
    return lines


def _listed(items: Iterable[str]) -> list[str]:
    return [f"  {item}" for item in items]
