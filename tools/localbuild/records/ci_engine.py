"""Whether a batch's packages come from the engine conda-forge's CI builds this feedstock with.

conda-forge's CI builds every config with conda-forge's own scripts (the container on Linux,
``run_osx_build.sh`` and ``run_win_build.bat`` on its macOS and Windows runners), and they
build the recipe conda-forge.yml's ``conda_build_tool`` names: ``recipe/meta.yaml`` with
conda-build, ``recipe/recipe.yaml`` with rattler-build.  build-locally's other engines (the
conda-build on PATH outside the container, the embedded rattler-build building the v1 recipe)
are for a person's own builds: their packages have other hashes, and the embedded engine's
carry no commit.  So each record says which engine built it and from which recipe file, the
batch's first line says when its engine is not CI's, and the commands that hand packages to
conda-forge (``review request``, ``review verify``, ``review merge``) refuse packages built
another way unless the person passes :data:`OVERRIDE`, which the request then states.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tools.localbuild.records.provenance import Provenance
from tools.smithy.forge import build_tool_of, uses_rattler_build
from tools.smithy.forge_yml import load_forge_yml

#: The flag that lets packages of another engine or recipe through, said in every refusal.
OVERRIDE = "--allow-other-engine"

#: The plan dispatches that run conda-forge's own scripts, as its CI runs them.
CI_DISPATCHES = ("docker", "osx", "win")


@dataclass(frozen=True)
class CiEngine:
    tool: str  # conda-forge.yml's conda_build_tool
    recipe: str  # the recipe file that tool builds, relative to the feedstock

    def describe(self) -> str:
        return f"conda-forge's scripts in its container with {self.tool}, {self.recipe}"


def of_feedstock(root: Path) -> CiEngine:
    """The engine and recipe conda-forge's CI uses for the feedstock at ``root``."""
    forge = load_forge_yml(root)
    recipe = "recipe/recipe.yaml" if uses_rattler_build(forge) else "recipe/meta.yaml"
    return CiEngine(build_tool_of(forge), recipe)


def first_line_note(builder: str, ci: CiEngine) -> str:
    """What a batch's first line adds when its engine is not CI's ("" when it is)."""
    if builder == "docker":
        return ""
    return (
        f"; NOT conda-forge's CI engine ({ci.describe()}): for local use, "
        f"review request, verify and merge refuse these packages without {OVERRIDE}"
    )


def not_ci(provenance: Provenance | None, ci: CiEngine) -> str | None:
    """How a record's build differs from CI's (engine, recipe file), or None when it does not
    or the record is too old to say (no provenance at all)."""
    if provenance is None:
        return None
    engine = provenance.engine or "engine unknown"
    recipe = provenance.recipe_file
    # Records written before these fields existed: the embedded engine still says so.
    other_engine = provenance.ci_engine is False or (
        provenance.ci_engine is None and provenance.packages_carry_no_commit
    )
    other_recipe = recipe is not None and recipe != ci.recipe
    if not (other_engine or other_recipe):
        return None
    return f"{engine.split(' (')[0]}, {recipe or 'recipe file not recorded'}"


def foreign(records: Mapping[str, Mapping[str, object]], ci: CiEngine) -> dict[str, str]:
    """The built configs whose packages come from another engine or recipe: config -> how."""
    found = {}
    for config, record in sorted(records.items()):
        if record.get("status") != "done":
            continue
        why = not_ci(Provenance.from_json(record.get("provenance")), ci)
        if why is not None:
            found[config] = why
    return found


def refusal(
    command: str, found: Mapping[str, str], ci: CiEngine, label_of: Mapping[str, str]
) -> str:
    """The one line refusing ``found``: which configs, how they were built, how to rebuild."""
    what = "; ".join(f"{label_of.get(c, c)} ({how})" for c, how in found.items())
    return (
        f"{command}: {len(found)} config(s) not built as conda-forge's CI builds them "
        f"({ci.describe()}): {what}; rebuild them with `python build-locally.py --engine docker "
        f"--force {' '.join(found)}`, or pass {OVERRIDE} to go on with them"
    )


def override_comment(found: Mapping[str, str], ci: CiEngine) -> list[str]:
    """The request's statement that its packages were let through with :data:`OVERRIDE`."""
    if not found:
        return []
    return [
        f"# {OVERRIDE}: {len(found)} config(s) NOT built as conda-forge's CI builds them "
        f"({ci.describe()}):",
        *(f"#   {config}: {how}" for config, how in found.items()),
    ]
