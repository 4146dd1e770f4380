"""The generated tables (README's CI-job table, and docs/drift.md's drift table when
a wheel was given) and, with ``--pinning``, ``.ci_support`` itself: the same code as
``matrix --write`` and ``drift --update-readme``, so the bump's tables are the ones those
commands check."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from tools.foundation import readme

# `explain --markdown`'s table for variant files given as {NAME.yaml: text}; the command layer
# owns that format (tools.commands.explain.readme_table_of) and hands it in.
TableOf = Callable[[Mapping[str, str], Path, Path], str]


def rerender(root: Path, recipe: Path, pinning: str | None, table_of: TableOf) -> list[str]:
    """``.ci_support`` (with a pinning) and the README's CI-job table; the changes made.
    Everything is computed first, then every file is written or none is (as ``matrix
    --write``)."""
    from tools import rerender
    from tools.foundation.files import replace_files

    changes: list[str] = []
    contents: dict[Path, str | None] = {}
    folder = root / ".ci_support"
    if pinning is not None:
        matrix = rerender.compute_matrix(root, recipe, rerender.locate_pinning(pinning))
        diffs, contents = rerender.planned(folder, matrix)
        # In the form of the bump's other lines: "changed: PATH (what was done)".
        changes += [f"{c.path} ({c.action})" for c in diffs]
        files = {n: t for n, t in rerender.expected_files(matrix).items() if n.endswith(".yaml")}
    else:
        files = {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.yaml"))}
    readme_path = root / "README.md"
    if files and readme.section_of(readme_path, readme.MATRIX_TABLE) is not None:
        text = readme.updated_text(readme_path, table_of(files, root, recipe), readme.MATRIX_TABLE)
        if text is not None:
            contents[readme_path] = text
            changes.append("README.md (CI-job table)")
    replace_files(contents)
    return changes


def drift_table(root: Path, markdown: str) -> list[str]:
    """The drift table on its page (docs/drift.md), as ``drift --update-readme`` writes it."""
    page = root / readme.DRIFT_PAGE
    if readme.section_of(page, readme.DRIFT_TABLE) is None:
        return []
    return [f"{readme.DRIFT_PAGE} (drift table)"] if readme.update_readme(page, markdown) else []
