"""``.ci_support`` against the matrix: what differs, what ``--write`` changes (every file or
none), and the unified diff ``--check --diff`` prints."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tools.foundation.files import replace_files
from tools.rerender.dump import files_of
from tools.rerender.jobs import Matrix


def expected_files(matrix: Matrix) -> dict[str, str]:
    return dict(matrix.files) if matrix.files else files_of(matrix.jobs)


@dataclass(frozen=True)
class Difference:
    path: str
    kind: str  # "missing" | "stale" | "changed" | "closed-migration" | "readme-table"
    why: str = ""  # printed on the next line, indented (why a closed migration goes)

    def __str__(self) -> str:
        if self.kind == "readme-table":
            return f"changed: {self.path} (CI-job table between the matrix-table markers)"
        return f"{self.kind}: {self.path}" + (f"\n    {self.why}" if self.why else "")

    @property
    def action(self) -> str:
        """What ``write`` did about this difference: added, updated or removed."""
        return _WRITTEN[self.kind][0]

    def written(self) -> str:
        """What ``write`` did about this difference, in the words of a file listing."""
        note = _WRITTEN[self.kind][1]
        return f"{self.action}: {self.path}{note}" + (f"\n    {self.why}" if self.why else "")


# A difference --check reports, as the change --write made to resolve it.
_WRITTEN = {
    "missing": ("added", ""),
    "changed": ("updated", ""),
    "stale": ("removed", ""),
    "closed-migration": ("removed", " (a closed migration)"),
}


def differences(folder: Path, matrix: Matrix) -> list[Difference]:
    expected = expected_files(matrix)
    found = {p.name for p in folder.glob("*.yaml")} | (
        {"README"} if (folder / "README").exists() else set()
    )
    diffs = []
    for name, content in sorted(expected.items()):
        path = folder / name
        if name not in found:
            diffs.append(Difference(f".ci_support/{name}", "missing"))
        elif path.read_text(encoding="utf-8") != content:
            diffs.append(Difference(f".ci_support/{name}", "changed"))
    for name in sorted(found - set(expected)):
        diffs.append(Difference(f".ci_support/{name}", "stale"))
    for path in matrix.migrations.closed:
        diffs.append(
            Difference(
                f".ci_support/migrations/{path.name}",
                "closed-migration",
                matrix.migrations.reason(path),
            )
        )
    return diffs


def planned(folder: Path, matrix: Matrix) -> tuple[list[Difference], dict[Path, str | None]]:
    """What bringing ``folder`` up to date takes: the differences, and each file's new text
    (``None``: delete it), for :func:`tools.foundation.files.replace_files` to write with the other
    files of the same change, all or none."""
    diffs = differences(folder, matrix)
    expected = expected_files(matrix)
    contents: dict[Path, str | None] = {}
    for diff in diffs:
        name = Path(diff.path).name
        if diff.kind in ("missing", "changed"):
            contents[folder / name] = expected[name]
        elif diff.kind == "stale":
            contents[folder / name] = None
        elif diff.kind == "closed-migration":
            contents[folder / "migrations" / name] = None
    return diffs, contents


def write(folder: Path, matrix: Matrix) -> list[Difference]:
    """Bring ``folder`` up to date, every file or none; return what changed."""
    diffs, contents = planned(folder, matrix)
    replace_files(contents)
    return diffs


def unified_diff(folder: Path, matrix: Matrix, names: Sequence[str]) -> str:
    import difflib

    expected = expected_files(matrix)
    chunks = []
    for name in names:
        old = (
            (folder / name).read_text(encoding="utf-8").splitlines(keepends=True)
            if (folder / name).exists()
            else []
        )
        new = expected.get(name, "").splitlines(keepends=True)
        chunks.extend(
            difflib.unified_diff(old, new, f"a/.ci_support/{name}", f"b/.ci_support/{name}")
        )
    return "".join(chunks)
