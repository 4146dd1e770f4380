"""Every patch the recipes list, tried on the new source in order (GNU patch, as
conda-build applies them: ``-p1``), each one applied for real to a scratch copy once it
applies, so a later patch sees what an earlier one changed."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tools.foundation import proc
from tools.foundation.errors import UserError


@dataclass(frozen=True)
class PatchResult:
    name: str  # as the recipe lists it (patches/0003-....patch)
    targets: tuple[str, ...]  # files the patch changes
    rejected: tuple[str, ...] = ()  # files with a hunk that does not apply
    missing: tuple[str, ...] = ()  # files it changes that the new source no longer has
    already_applied: bool = False  # the new source already carries the change

    @property
    def applies(self) -> bool:
        return not (self.rejected or self.missing or self.already_applied)

    def describe(self) -> str:
        if self.already_applied:
            return f"{self.name}: already in the new source (drop it)"
        parts = []
        if self.rejected:
            parts.append(f"rejected hunks in {', '.join(self.rejected)}")
        if self.missing:
            parts.append(f"{', '.join(self.missing)} not in the new source")
        return f"{self.name}: {'; '.join(parts)}" if parts else f"{self.name}: applies"


_HEADER = re.compile(r"^(?P<side>---|\+\+\+) (?P<path>\S+)", re.M)


def targets(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(changed, created)``: the files a unified diff changes (``-p1``), and those it
    creates (``--- /dev/null``)."""
    changed: list[str] = []
    created: list[str] = []
    old = None
    for match in _HEADER.finditer(text):
        path = match["path"]
        if match["side"] == "---":
            old = path
            continue
        if path == "/dev/null":
            continue
        stripped = path.split("/", 1)[1] if "/" in path else path
        (created if old == "/dev/null" else changed).append(stripped)
    return tuple(dict.fromkeys(changed)), tuple(dict.fromkeys(created))


def read(recipe_dir: Path, names: Sequence[str]) -> dict[str, str]:
    texts = {}
    for name in names:
        path = recipe_dir / name
        try:
            texts[name] = path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            raise UserError(
                f"{path}: the recipe lists this patch, but there is no such file"
            ) from None
    return texts


def try_all(
    recipe_dir: Path, texts: dict[str, str], tree: Path, present: set[str]
) -> list[PatchResult]:
    """Each patch against ``tree`` (the extracted targets of every patch), in order;
    ``present``: every path the archive holds."""
    results = []
    for name, text in texts.items():
        changed, created = targets(text)
        missing = tuple(p for p in changed if p not in present)
        patch = [
            "patch", "-p1", "--batch", "--forward", "--no-backup-if-mismatch", "-r", "-",
            "-i", str((recipe_dir / name).resolve()),
        ]  # fmt: skip
        dry = proc.call(*patch, "--dry-run", cwd=tree, capture=True, check=False, quiet=True)
        output = dry.stdout + dry.stderr
        if dry.returncode == 0:
            proc.call(*patch, cwd=tree, capture=True, quiet=True)
            results.append(PatchResult(name, changed + created))
            continue
        results.append(
            PatchResult(
                name,
                changed + created,
                rejected=_rejected(output, missing),
                missing=missing,
                already_applied="Reversed (or previously applied) patch detected" in output,
            )
        )
    return results


_FILE_LINE = re.compile(r"^(?:checking|patching) file '?(?P<path>[^']+?)'?$")
_FAILED = re.compile(r"^Hunk #\d+ FAILED")


def _rejected(output: str, missing: Sequence[str]) -> tuple[str, ...]:
    """Files with a failed hunk, from GNU patch's report (``checking file X`` then
    ``Hunk #2 FAILED at 30.``)."""
    current = None
    rejected: list[str] = []
    for line in output.splitlines():
        found = _FILE_LINE.match(line.strip())
        if found:
            current = found["path"]
        elif _FAILED.match(line.strip()) and current and current not in missing:
            rejected.append(current)
    return tuple(dict.fromkeys(rejected))
