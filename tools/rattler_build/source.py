"""The source archive a recipe names (v1, or meta.yaml): its URL with the version filled in,
its sha256, and the line that says so."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tools.foundation.errors import UserError
from tools.recipe import release

_VERSION = re.compile(r"\$?\{\{\s*version\s*\}\}")  # v1 ${{ }}, meta.yaml {{ }}


@dataclass(frozen=True)
class Source:
    url: str  # with the version filled in
    sha256: str
    recipe: Path
    line: int  # of the sha256, for messages

    @property
    def name(self) -> str:
        return self.url.rstrip("/").rsplit("/", 1)[-1]


def source_of(path: Path) -> Source:
    """The source archive the recipe at ``path`` names (v1, or meta.yaml)."""
    recipe = release.parse(path, path.read_text(encoding="utf-8"))
    facts = release.release_of(recipe)
    url = _VERSION.sub(facts.version, facts.url)
    if "{{" in url:
        raise UserError(
            f"{path}:{recipe.line_of('url')}: source url {facts.url!r} uses more than "
            "the version; the source cache cannot name its archive"
        )
    return Source(url, facts.sha256, path, recipe.line_of("sha256"))
