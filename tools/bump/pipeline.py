"""The bump, stage after stage: :func:`bump` takes a :class:`BumpRequest` and returns what
each stage found (:class:`BumpResult`); the command only prints it.

The recipes are written only after every stage that can refuse has run (a source that cannot
be fetched or read, a wheel of another release): a refused bump leaves the feedstock as it was.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import InvalidVersion, Version

from tools.bump import archive, backend, checklist, patches, tables, wheel, write
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


def bump(request: BumpRequest) -> BumpResult:
    found = write.load(request.recipe_dir)
    for problem in recipes.disagreements(found):
        raise UserError(problem)
    previous = recipes.release_of(found[0])
    _check_version(request.version, previous.version, str(found[0].path))
    listed = tuple(dict.fromkeys(p for r in found for p in recipes.patches_of(r)))
    texts = patches.read(request.recipe_dir, listed)
    facts = wheel.read(request.wheel, request.version) if request.wheel else None

    with tempfile.TemporaryDirectory(prefix="bump-") as scratch_name:
        scratch = Path(scratch_name)
        source = request.source or archive.release_url(
            previous.url, request.version, str(found[0].path)
        )
        with step(f"fetch and hash {source}"):
            fetched = archive.fetch(source, scratch, request.version)
        tree = scratch / "src"
        wanted = {t for text in texts.values() for t in sum(patches.targets(text), ())}
        present = archive.extract(fetched, tree, wanted | set(backend.FILES))
        tree.mkdir(exist_ok=True)
        found_backend = backend.detect(request.recipe_dir, tree, fetched.origin)
        options = checklist.new_options(
            tree / "CMakeLists.txt",
            [request.recipe_dir / n for n in ("build.sh", "bld.bat", "cmake_cache.py")],
        )
        with step(f"try {len(texts)} patches on the new source"):
            tried = patches.try_all(request.recipe_dir, texts, tree, present)

    pythons = wheel.python_range(
        facts.requires_python if facts else None, wheel.recipe_pythons(request.root / ".ci_support")
    )
    result = BumpResult(previous, fetched, tried, found_backend, facts, pythons)
    new_build = previous.build if request.version == previous.version else 0
    for recipe in found:
        updated = (
            recipe.with_field("version", request.version)
            .with_field("sha256", fetched.sha256)
            .with_field("build", str(new_build))
        )
        if facts is not None:
            updated = recipes.with_python_floor(updated, pythons.floor)
        if write.write(updated):
            result.written.append(str(recipe.path.relative_to(request.root)))

    moved: list[str] = []
    with step("generated tables" + (" and .ci_support" if request.pinning else "")):
        if request.readme_table is not None:
            result.written += tables.rerender(
                request.root, request.recipe_dir, request.pinning, request.readme_table
            )
        if request.wheel is not None:
            report = _drift(request)
            moved = wheel.moved_pins(report.rows)
            from tools.drift import present

            result.written += tables.drift_table(request.root, present.markdown(report))
    cuda_versions = wheel.cuda_majors(request.root / ".ci_support")
    result.checklist = [
        *checklist.patch_items(tried, found_backend),
        *checklist.backend_items(found_backend),
        *checklist.option_items(options),
        *checklist.wheel_items(facts, pythons, cuda_versions, moved),
    ]
    if request.pinning is None:
        result.checklist.append(
            "rerender: python -m tools matrix --write --pinning PINNING (no --pinning given)"
        )
    return result


def _drift(request: BumpRequest):
    from tools.drift.pipeline import DriftRequest, drift_report

    return drift_report(
        DriftRequest(wheels=(request.wheel,), offline=True, recipe_dir=str(request.recipe_dir))
    ).report
