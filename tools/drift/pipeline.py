"""The drift pipeline: upstream claims, the rendered recipe and conda-forge's versions in,
one :class:`~tools.drift.table.Report` out.

``python -m tools drift`` parses its options into a :class:`DriftRequest`, calls
:func:`drift_report` and only formats the result.  Problems that do not stop the comparison
(a file found but not understood, an unreachable channel) are printed as warnings and
become the report's notes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tools.drift import channel as channel_io
from tools.drift import recipe as recipe_io
from tools.drift import table, versions
from tools.drift.model import UpstreamClaim
from tools.drift.names import conda_names
from tools.drift.upstream_tree import read_tree
from tools.drift.upstream_wheel import metadata_version, read_metadata, read_wheel
from tools.foundation import repo
from tools.foundation.errors import UserError
from tools.foundation.log import step, warn


@dataclass(frozen=True)
class DriftRequest:
    """What to compare (the drift command's options)."""

    source: Path | None = None
    wheels: tuple[Path, ...] = ()
    channel_data: tuple[Path, ...] = ()
    channel: str = "conda-forge"
    offline: bool = False
    recipe_dir: str | None = None
    configs: tuple[str, ...] = ()
    no_recipe: bool = False
    torch_output: str = "pytorch"
    show_all: bool = False


@dataclass(frozen=True)
class DriftResult:
    report: table.Report
    view: table.RecipeView | None
    root: Path | None  # the feedstock whose recipe was rendered, if one was


def upstream_claims(request: DriftRequest) -> list[UpstreamClaim]:
    """Every claim the source tree and the wheels make; the tree's notes become warnings."""
    if request.source is None and not request.wheels:
        raise UserError("nothing to compare: pass --source DIR and/or --wheel WHL")
    claims: list[UpstreamClaim] = []
    if request.source is not None:
        tree = read_tree(request.source)
        claims += tree.claims
        for note in tree.notes:
            warn(note)
    for wheel in request.wheels:
        claims += read_wheel(wheel)
    return claims


@dataclass(frozen=True)
class RecipeSide:
    """The recipe column (``None``: unknown, with ``note`` saying why) and what it was
    rendered from."""

    view: table.RecipeView | None
    note: str | None
    root: Path | None
    recipe_path: Path | None = None
    versions: tuple[str, ...] = ()  # the versions the torch-shipping output builds


def recipe_view(request: DriftRequest) -> RecipeSide:
    """The recipe column: every rendered spec, or why it is unknown; and the feedstock root."""
    if request.no_recipe:
        return RecipeSide(None, "generated with --no-recipe", None)
    recipe_path = repo.recipe_dir(request.recipe_dir)
    root = recipe_path.parent
    try:
        rendered = recipe_io.render_all(root, list(request.configs), recipe_path)
    except recipe_io.RendererUnavailable as exc:
        warn(str(exc))
        return RecipeSide(None, str(exc), root)
    recipe_io.require_output(rendered, request.torch_output)
    specs, configs, unparsable = recipe_io.specs_from_rendered(rendered, request.torch_output)
    for item in unparsable:
        warn(f"cannot parse rendered requirement, skipped: {item}")
    view = table.RecipeView(specs, configs, request.torch_output)
    versions = recipe_io.versions_of(rendered, request.torch_output)
    return RecipeSide(view, None, root, recipe_path, versions)


def comparison_problems(request: DriftRequest, side: RecipeSide) -> list[str]:
    """The two recipes against each other; the wheels against the recipe's version; the
    recipe's sha256 against git HEAD's."""
    problems = []
    if not request.no_recipe:
        problems += recipe_io.release_disagreements(repo.recipe_dir(request.recipe_dir))
    if side.view is None or side.root is None or side.recipe_path is None:
        for problem in problems:
            warn(problem)
        return problems
    wheels = [(w, metadata_version(read_metadata(w))) for w in request.wheels]
    problems += versions.wheel_mismatches(wheels, side.versions, request.torch_output)
    if side.view.configs:
        problems += recipe_io.sha256_against_head(
            side.root, side.recipe_path, side.view.configs[0].name
        )
    for problem in problems:
        warn(problem)
    return problems


def channel_versions(
    request: DriftRequest, claims: Sequence[UpstreamClaim], view: table.RecipeView | None
) -> tuple[dict | None, str | None]:
    """The conda-forge column: from files, from the channel, or unknown with the reason."""
    if request.channel_data:
        return channel_io.read_channel_files(list(request.channel_data)), None
    if request.offline:
        return None, "generated with --offline"
    names = sorted({n for c in claims for n in conda_names(c.package)})
    platforms = sorted({c.subdir for c in view.configs}) if view else ["linux-64"]
    try:
        with step(f"query {request.channel} through py-rattler"):
            return channel_io.query_channel(names, platforms, request.channel), None
    except Exception as exc:  # offline, DNS, TLS, timeout: the column becomes unknown
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        note = f"{request.channel} unreachable ({first})"
        warn(note)
        return None, note


def drift_report(request: DriftRequest) -> DriftResult:
    claims = upstream_claims(request)
    side = recipe_view(request)
    problems = comparison_problems(request, side)
    forge, channel_note = channel_versions(request, claims, side.view)
    report = table.build_report(
        claims,
        side.view,
        forge,
        recipe_note=side.note,
        channel_note=channel_note,
        show_all=request.show_all,
    )
    return DriftResult(table.with_problems(report, problems), side.view, side.root)
