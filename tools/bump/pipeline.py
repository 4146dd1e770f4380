"""The bump, stage after stage: :func:`bump` takes a :class:`BumpRequest` and returns what
each stage found (:class:`BumpResult`); the command only prints it.

The recipes are written only after every stage that can refuse has run (a source that cannot
be fetched or read, a wheel of another release): a refused bump leaves the feedstock as it was.
"""

from __future__ import annotations

import shlex
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import InvalidVersion, Version

from tools.bump import (
    archive,
    backend,
    checklist,
    knobs,
    licences,
    patches,
    source,
    tables,
    wheel,
    write,
)
from tools.drift import present
from tools.foundation.errors import UserError
from tools.foundation.log import step
from tools.recipe import release as recipes


@dataclass(frozen=True)
class BumpRequest:
    version: str
    root: Path
    recipe_dir: Path
    source: str | None = None  # archive path or URL; default: the recipe's url, new version
    wheel: Path | None = None
    pinning: str | None = None
    # README's CI-job table from variant files (tools.commands.explain.readme_table_of)
    readme_table: tables.TableOf | None = None


@dataclass
class BumpResult:
    previous: recipes.Release
    archive: archive.Archive
    patches: list[patches.PatchResult]
    backend: backend.Backend
    facts: wheel.WheelFacts | None
    pythons: wheel.PythonRange
    requires_python: str | None = None
    requires_python_origin: str = ""  # the file it was read from
    written: list[str] = field(default_factory=list)
    checklist: list[str] = field(default_factory=list)
    # The previous release's commit, left in the recipes: a new version without --wheel,
    # whose commit only the release's wheel states.
    stale_commit: str | None = None

    @property
    def failing_patches(self) -> list[patches.PatchResult]:
        return [p for p in self.patches if not p.applies]


def _check_version(version: str, previous: str, where: str) -> None:
    try:
        new, old = Version(version), Version(previous)
    except InvalidVersion:
        raise UserError(f"VERSION {version!r} is not a version (like 2.15.0)") from None
    if new < old:
        raise UserError(
            f"{where}: the recipe builds {previous}; bump does not go back to {version}"
        )


@dataclass(frozen=True)
class SourceFacts:
    """What the new archive says: its hash, backend, options, how the patches fare, and what
    its build files demand of the recipe."""

    archive: archive.Archive
    backend: backend.Backend
    options: list[str]
    patches: list[patches.PatchResult]
    requires_python: str | None
    cxx_standard: int | None
    cuda_minimum: source.CudaMinimum | None
    knobs: dict[str, str]  # environment knobs no build script names: {name: file reading it}
    licences: licences.Licences


def inspect_source(
    request: BumpRequest, url: str, texts: dict[str, str], listed_licences: tuple[str, ...]
) -> SourceFacts:
    """Everything read from the archive, in a scratch folder that is gone afterwards (only
    the facts are kept)."""
    with tempfile.TemporaryDirectory(prefix="bump-") as scratch_name:
        scratch = Path(scratch_name)
        with step(f"fetch and hash {url}"):
            fetched = archive.fetch(url, scratch, request.version, _other_args(request))
        tree = scratch / "src"
        named = {t for text in texts.values() for t in sum(patches.targets(text), ())}
        named |= set(backend.FILES)
        paths = archive.extract(fetched, tree, lambda p: p in named or source.wanted(p))
        tree.mkdir(exist_ok=True)
        found = backend.detect(request.recipe_dir, tree, fetched.origin)
        with step(f"try {len(texts)} patches on the new source"):
            tried = patches.try_all(request.recipe_dir, texts, tree, paths)
        # From here on the tree is patched: what follows reads the source the build sees.
        scripts = knobs.build_scripts(request.recipe_dir)
        options = knobs.new_options(tree, scripts)
        read = knobs.environment(request.recipe_dir, tree, paths)
        unset = {n: read[n] for n in knobs.unnamed(read, scripts) if n not in options}
        project = source.pyproject(tree).get("project", {})
        return SourceFacts(
            fetched,
            found,
            options,
            tried,
            requires_python=source.requires_python(tree),
            cxx_standard=source.cxx_standard(tree),
            cuda_minimum=source.cuda_minimum(tree, paths),
            knobs=unset,
            licences=licences.check(listed_licences, paths, project),
        )


def bump(request: BumpRequest) -> BumpResult:
    found = write.load(request.recipe_dir)
    disagreements = recipes.disagreements(found)
    if disagreements:
        raise UserError(disagreements[0])
    previous = recipes.release_of(found[0])
    _check_version(request.version, previous.version, str(found[0].path))
    listed = tuple(dict.fromkeys(p for r in found for p in recipes.patches_of(r)))
    texts = patches.read(request.recipe_dir, listed)
    facts = wheel.read(request.wheel, request.version) if request.wheel else None
    url = request.source or archive.release_url(previous.url, request.version, str(found[0].path))
    listed_licences = tuple(dict.fromkeys(f for r in found for f in recipes.license_files_of(r)))
    new = inspect_source(request, url, texts, listed_licences)
    # The archive is what gets built: its pyproject.toml decides; the wheel's METADATA only
    # where the source declares nothing (a setup.py-only release).
    requires_python, origin = new.requires_python, f"the new source's {source.PYPROJECT}"
    if requires_python is None and facts is not None and facts.requires_python:
        requires_python, origin = facts.requires_python, f"{facts.path.name} METADATA"
    ci_support = request.root / ".ci_support"
    pythons = wheel.python_range(requires_python, wheel.recipe_pythons(ci_support))
    # Everything that can refuse has run: from here on the feedstock is written.
    result = BumpResult(
        previous, new.archive, new.patches, new.backend, facts, pythons, requires_python, origin
    )
    commit = facts.git_version if facts is not None else None
    result.written += _write_recipes(request, found, previous, new.archive.sha256, pythons, commit)
    recorded = next(filter(None, map(recipes.recorded_commit, found)), None)
    if commit is None and recorded is not None and request.version != previous.version:
        result.stale_commit = recorded
    moved: list[str] = []
    with step("generated tables" + (" and .ci_support" if request.pinning else "")):
        if request.readme_table is not None:
            result.written += tables.rerender(
                request.root, request.recipe_dir, request.pinning, request.readme_table
            )
        if request.wheel is not None:
            report = _drift(request)
            moved = wheel.moved_pins(report.rows)
            result.written += tables.drift_table(request.root, present.markdown(report))
    below = source.configs_below(ci_support, new.cuda_minimum) if new.cuda_minimum else {}
    result.checklist = [
        *checklist.patch_items(new.patches, new.backend),
        *checklist.backend_items(new.backend),
        *checklist.option_items(new.options),
        *checklist.knob_items(new.knobs),
        *checklist.cxx_items(new.cxx_standard),
        *checklist.cuda_floor_items(new.cuda_minimum, below),
        *checklist.licence_items(new.licences),
        *checklist.python_items(pythons, requires_python, origin),
        *checklist.wheel_items(facts, wheel.cuda_majors(ci_support), moved),
    ]
    if result.stale_commit:
        result.checklist.append(
            f"git_version: still {previous.version}'s commit {result.stale_commit}; the "
            f"release's wheel states {request.version}'s (torch/version.py): run bump again "
            "with --wheel"
        )
    if request.pinning is None:
        result.checklist.append(
            "rerender: python -m tools matrix --write --pinning PINNING (no --pinning given)"
        )
    return result


def _write_recipes(
    request: BumpRequest,
    found: tuple[recipes.RecipeFile, ...],
    previous: recipes.Release,
    sha256: str,
    pythons: wheel.PythonRange,
    commit: str | None,
) -> list[str]:
    """Version, sha256, build number (0 for a new version), the release's ``commit`` where
    the recipe records one and the wheel told it, and, when requires-python and the CI configs
    tell the Python range, the skip; each recipe written atomically."""
    build = previous.build if request.version == previous.version else 0
    written = []
    for recipe in found:
        updated = (
            recipe.with_field("version", request.version)
            .with_field("sha256", sha256)
            .with_field("build", str(build))
        )
        if commit is not None and recipes.recorded_commit(recipe) is not None:
            updated = updated.with_field("git_version", commit)
        if pythons.known:
            updated = recipes.with_python_floor(updated, pythons.floor)
        if write.write(updated):
            written.append(str(recipe.path.relative_to(request.root)))
    return written


def _other_args(request: BumpRequest) -> str:
    """The options besides --source, as a refusal repeats them in the command it suggests."""
    parts = [("--wheel", request.wheel), ("--pinning", request.pinning)]
    return "".join(f" {flag} {shlex.quote(str(value))}" for flag, value in parts if value)


def _drift(request: BumpRequest):
    """drift's report on the written recipe against the release's wheel, offline."""
    from tools.drift.pipeline import DriftRequest, drift_report

    return drift_report(
        DriftRequest(wheels=(request.wheel,), offline=True, recipe_dir=str(request.recipe_dir))
    ).report
