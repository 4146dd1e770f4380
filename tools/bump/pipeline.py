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

from tools.bump import archive, backend, checklist, patches, tables, wheel, write
from tools.drift import present
from tools.errors import UserError
from tools.log import step
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
    written: list[str] = field(default_factory=list)
    checklist: list[str] = field(default_factory=list)

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
    """What the new archive says: its hash, backend, options and how the patches fare."""

    archive: archive.Archive
    backend: backend.Backend
    options: list[str]
    patches: list[patches.PatchResult]


def inspect_source(request: BumpRequest, source: str, texts: dict[str, str]) -> SourceFacts:
    """Stages 1-3 in a scratch folder that is gone afterwards (only the facts are kept)."""
    with tempfile.TemporaryDirectory(prefix="bump-") as scratch_name:
        scratch = Path(scratch_name)
        with step(f"fetch and hash {source}"):
            fetched = archive.fetch(source, scratch, request.version, _other_args(request))
        tree = scratch / "src"
        wanted = {t for text in texts.values() for t in sum(patches.targets(text), ())}
        present = archive.extract(fetched, tree, wanted | set(backend.FILES))
        tree.mkdir(exist_ok=True)
        found = backend.detect(request.recipe_dir, tree, fetched.origin)
        scripts = [request.recipe_dir / n for n in ("build.sh", "bld.bat", "cmake_cache.py")]
        options = checklist.new_options(tree / "CMakeLists.txt", scripts)
        with step(f"try {len(texts)} patches on the new source"):
            tried = patches.try_all(request.recipe_dir, texts, tree, present)
    return SourceFacts(fetched, found, options, tried)


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
    source = request.source or archive.release_url(
        previous.url, request.version, str(found[0].path)
    )
    new = inspect_source(request, source, texts)
    pythons = wheel.python_range(
        facts.requires_python if facts else None, wheel.recipe_pythons(request.root / ".ci_support")
    )
    # Everything that can refuse has run: from here on the feedstock is written.
    result = BumpResult(previous, new.archive, new.patches, new.backend, facts, pythons)
    result.written += _write_recipes(request, found, previous, new.archive.sha256, pythons)
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
    result.checklist = [
        *checklist.patch_items(new.patches, new.backend),
        *checklist.backend_items(new.backend),
        *checklist.option_items(new.options),
        *checklist.wheel_items(
            facts, pythons, wheel.cuda_majors(request.root / ".ci_support"), moved
        ),
    ]
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
) -> list[str]:
    """Version, sha256, build number (0 for a new version) and, when the wheel and the CI
    configs tell the Python range, the skip; each recipe written atomically."""
    build = previous.build if request.version == previous.version else 0
    written = []
    for recipe in found:
        updated = (
            recipe.with_field("version", request.version)
            .with_field("sha256", sha256)
            .with_field("build", str(build))
        )
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
