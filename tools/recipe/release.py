"""The release fields of both recipes (``python -m tools bump`` writes them, ``drift --check``
holds the two recipes together): read them, and write new ones as text edits.

The recipes are hand-formatted YAML (meta.yaml is jinja too), so a round trip through a YAML
library would lose comments and selectors; each field is one line that a pattern finds exactly
once, and a recipe where it does not is bad input naming the file and the field.

meta.yaml (conda-build v0)                 recipe-v1.yaml / recipe.yaml (rattler-build v1)
  {% set version = "X" %}                    context: version: "X"
  {% set git_version = "SHA" %}              context: git_version: "SHA"
  {% set build = N %}                        context: build: N
  source: url / sha256                       source: url / sha256
  source: patches                            source: patches
  pytorch output: skip: true  # [py<311]     pytorch output: skip: - match(python, "<3.11")
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from tools.foundation.errors import UserError


@dataclass(frozen=True)
class Field:
    name: str  # what a maintainer calls it, for messages
    pattern: re.Pattern[str]  # group "value" is the field's value


_SHA256 = Field("source sha256", re.compile(r"^[ \t]+sha256:[ \t]*(?P<value>\S+)[ \t]*$", re.M))
_URL = Field(
    "source url",
    re.compile(r"^[ \t]+(?:-[ \t]+)?url:[ \t]*(?P<value>[^#\n]*?)[ \t]*(?:#.*)?$", re.M),
)
FIELDS = {
    "v0": {
        "version": Field(
            "{% set version = ... %}",
            re.compile(r'^\{%-?\s*set\s+version\s*=\s*"(?P<value>[^"]*)"\s*-?%\}', re.M),
        ),
        "git_version": Field(
            "{% set git_version = ... %}",
            re.compile(r'^\{%-?\s*set\s+git_version\s*=\s*"(?P<value>[^"]*)"\s*-?%\}', re.M),
        ),
        "build": Field(
            "{% set build = ... %}",
            re.compile(r"^\{%-?\s*set\s+build\s*=\s*(?P<value>\d+)\s*-?%\}", re.M),
        ),
        "sha256": _SHA256,
        "url": _URL,
    },
    "v1": {
        "version": Field(
            "context version",
            re.compile(r'^[ \t]+version:[ \t]*"?(?P<value>[^"$\s{][^"\s]*)"?[ \t]*$', re.M),
        ),
        "git_version": Field(
            "context git_version",
            re.compile(r'^[ \t]+git_version:[ \t]*"?(?P<value>[^"$\s{][^"\s]*)"?[ \t]*$', re.M),
        ),
        "build": Field(
            "context build", re.compile(r"^[ \t]+build:[ \t]*(?P<value>\d+)[ \t]*$", re.M)
        ),
        "sha256": _SHA256,
        "url": _URL,
    },
}


@dataclass(frozen=True)
class RecipeFile:
    path: Path
    kind: str  # "v0" or "v1"
    text: str

    def field(self, key: str) -> str:
        return _one(self, key).group("value")

    def with_field(self, key: str, value: str) -> RecipeFile:
        match = _one(self, key)
        start, end = match.span("value")
        return replace(self, text=self.text[:start] + value + self.text[end:])

    def line_of(self, key: str) -> int:
        return self.text.count("\n", 0, _one(self, key).start()) + 1


def _one(recipe: RecipeFile, key: str) -> re.Match[str]:
    field = FIELDS[recipe.kind][key]
    found = list(field.pattern.finditer(recipe.text))
    if len(found) != 1:
        lines = ", ".join(str(recipe.text.count("\n", 0, m.start()) + 1) for m in found)
        where = f"found {len(found)} (lines {lines})" if found else "found none"
        raise UserError(
            f"{recipe.path}: expected one {field.name} line, {where}; "
            "bump edits that one line and needs it unambiguous"
        )
    return found[0]


# The recipe files a feedstock may hold, and which front-end reads each.
RECIPE_KINDS = {"meta.yaml": "v0", "recipe.yaml": "v1", "recipe-v1.yaml": "v1"}


def parse(path: Path, text: str) -> RecipeFile:
    """``text``, read from ``path`` (one of :data:`RECIPE_KINDS`)."""
    return RecipeFile(path, RECIPE_KINDS[path.name], text)


@dataclass(frozen=True)
class Release:
    """What a recipe says about the release it builds."""

    version: str
    build: int
    sha256: str
    url: str


def release_of(recipe: RecipeFile) -> Release:
    return Release(
        recipe.field("version"),
        int(recipe.field("build")),
        recipe.field("sha256"),
        recipe.field("url"),
    )


def disagreements(recipes: tuple[RecipeFile, ...]) -> list[str]:
    """One line per release field on which the recipes differ (drift --check fails on them).
    A field a recipe does not state as one line (a build number set some other way) is not
    compared."""
    problems = []
    first, *others = recipes
    for other in others:
        for key, name in (
            ("version", "version"),
            ("build", "build number"),
            ("sha256", "sha256"),
            ("git_version", "release commit (git_version)"),
        ):
            mine, theirs = _stated(first, key), _stated(other, key)
            if mine is None or theirs is None or mine == theirs:
                continue
            problems.append(
                f"the recipes disagree on the {name}: {first.path.name}:{first.line_of(key)} "
                f"has {mine}, {other.path.name}:{other.line_of(key)} has {theirs}; both build "
                "one release (python -m tools bump writes both)"
            )
    return problems


def recorded_commit(recipe: RecipeFile) -> str | None:
    """The release's commit the recipe records for torch.version.git_version (``git_version``),
    or ``None`` where it records none."""
    return _stated(recipe, "git_version")


def _stated(recipe: RecipeFile, key: str) -> str | None:
    try:
        return recipe.field(key)
    except UserError:
        return None


def patches_of(recipe: RecipeFile) -> tuple[str, ...]:
    """The source patches a recipe lists, as paths relative to the recipe directory."""
    return _listed(recipe, "patches")


def license_files_of(recipe: RecipeFile) -> tuple[str, ...]:
    """The licence files a recipe lists (``about: license_file``), as paths in the source."""
    return _listed(recipe, "license_file")


def _listed(recipe: RecipeFile, key: str) -> tuple[str, ...]:
    """Every item of each ``key:`` list in the recipe (a one-value ``key: X`` too), in order."""
    lines = recipe.text.splitlines()
    out: list[str] = []
    for index, line in enumerate(lines):
        head = re.match(rf"^([ \t]+){key}:[ \t]*(?P<value>[^#\s]*)", line)
        if not head:
            continue
        if head["value"]:
            out.append(head["value"].strip("\"'"))
            continue
        indent = len(head[1])
        for item in lines[index + 1 :]:
            if not item.strip() or item.lstrip().startswith("#"):
                continue
            entry = re.match(r"^([ \t]*)-[ \t]+(\S+)", item)
            if not entry or len(entry[1]) < indent:
                break
            out.append(entry[2].strip("\"'"))
    return tuple(dict.fromkeys(out))


# -- the Python skip --------------------------------------------------------------------------

_SKIP_NOTE = "Pythons upstream's Requires-Python leaves out (python -m tools bump writes this)"


def with_python_floor(recipe: RecipeFile, floor: str | None, output: str = "pytorch") -> RecipeFile:
    """The recipe with ``output`` skipped below Python ``floor`` (``3.11``), or with bump's
    skip removed when ``floor`` is ``None``."""
    lines = recipe.text.splitlines(keepends=True)
    edit = _v0_skip if recipe.kind == "v0" else _v1_skip
    return replace(recipe, text="".join(edit(recipe, lines, floor, output)))


def _block_after(
    recipe: RecipeFile, lines: list[str], start: re.Pattern[str], inner: re.Pattern[str], what: str
) -> tuple[int, str]:
    """Index and indent of the first line matching ``inner`` after the line matching ``start``."""
    begin = next((i for i, line in enumerate(lines) if start.match(line)), None)
    if begin is None:
        raise UserError(f"{recipe.path}: no output named by `{start.pattern}`; {what}")
    for index in range(begin + 1, len(lines)):
        found = inner.match(lines[index])
        if found:
            return index, found[1]
        if re.match(r"^[ \t]*- (?:name|package):", lines[index]):
            break
    raise UserError(f"{recipe.path}:{begin + 1}: that output has no `{inner.pattern}` line; {what}")


def _v0_skip(recipe: RecipeFile, lines: list[str], floor: str | None, output: str) -> list[str]:
    start = re.compile(rf"^[ \t]*- name:[ \t]*{re.escape(output)}[ \t]*$")
    index, indent = _block_after(
        recipe, lines, start, re.compile(r"^([ \t]+)build:[ \t]*$"), "add the skip by hand"
    )
    body = indent + "  "
    kept = [
        line
        for line in lines
        if not (line.startswith(body + "skip: true") and "# [py<" in line)
        and _SKIP_NOTE not in line
    ]
    if floor is None:
        return kept
    index = next(
        i for i, line in enumerate(kept) if i >= index and re.match(rf"^{indent}build:", line)
    )
    number = floor.replace(".", "")
    return [
        *kept[: index + 1],
        f"{body}# {_SKIP_NOTE}\n",
        f"{body}skip: true  # [py<{number}]\n",
        *kept[index + 1 :],
    ]


def _v1_skip(recipe: RecipeFile, lines: list[str], floor: str | None, output: str) -> list[str]:
    start = re.compile(rf"^[ \t]+name:[ \t]*{re.escape(output)}[ \t]*$")
    index, indent = _block_after(
        recipe, lines, start, re.compile(r"^([ \t]+)skip:[ \t]*$"), "add the skip by hand"
    )
    item = indent + "  - "
    kept = [
        line
        for line in lines
        if not (line.startswith(item + 'match(python, "<') and line.rstrip().endswith('")'))
        and _SKIP_NOTE not in line
    ]
    if floor is None:
        return kept
    # After the skip list's last item.
    end = index + 1
    while end < len(kept) and kept[end].startswith(item):
        end += 1
    return [
        *kept[:end],
        f"{indent}  # {_SKIP_NOTE}\n",
        f'{item}match(python, "<{floor}")\n',
        *kept[end:],
    ]
