"""``python -m tools --version``: which recipe, and which toolkit, the user is running.

The recipe version is read the way conda-forge's bots read it, from
``{% set version = "..." %}`` (and ``{% set build = N %}``) at the top of
``meta.yaml``, so that ``--version`` stays instant and works on a recipe that
does not render.  A recipe whose version cannot be read that way is an error naming
the file and the line to fix (the ``set`` line that does not parse, or the file's first
line when there is none).  The toolkit has no release number of its own: its git
revision is what identifies it.
"""

from __future__ import annotations

import re
from pathlib import Path

from tools.foundation.errors import ToolError, UserError

_SET = re.compile(r"""\{%-?\s*set\s+(version|build)\s*=\s*["']?([^"'\s%]+)["']?\s*-?%\}""")


def recipe_version(meta_text: str, source: str = "meta.yaml") -> tuple[str | None, str | None]:
    """``(version, build number)`` from the jinja ``set`` statements, None where absent."""
    found: dict[str, str] = {}
    for key, value in _SET.findall(meta_text):
        found.setdefault(key, value)
    return found.get("version"), found.get("build")


def v1_recipe_version(
    recipe_text: str, source: str = "recipe.yaml"
) -> tuple[str | None, str | None]:
    """``(version, build number)`` from a v1 recipe.yaml's ``context``, None where absent or
    templated (read without rendering, as for meta.yaml); YAML that does not parse is a
    UserError naming ``source`` and the line."""
    from tools.foundation.files import load_yaml_text, safe_yaml

    data = load_yaml_text(recipe_text, source, safe_yaml)
    context = data.get("context") if isinstance(data, dict) else None
    context = context if isinstance(context, dict) else {}
    version, build = (context.get(key) for key in ("version", "build"))

    def plain(value: object) -> str | None:
        return None if value is None or "${{" in str(value) else str(value)

    return plain(version), plain(build)


def _unreadable(recipe: Path, text: str, key: str) -> str | None:
    """Where the recipe's ``key`` should be and is not readable: the line that mentions it,
    else the file's first line; None for a build number the recipe does not set that way
    (``build: number: 0`` written out is no mistake)."""
    if recipe.name == "recipe.yaml":
        mention = re.compile(rf"^\s+{key}\s*:")
        expected = f"context: {key}: a plain value"
    else:
        mention = re.compile(rf"set\s+{key}\b")
        expected = f'{{% set {key} = "..." %}}'
    lines = text.splitlines()
    line = next((n for n, body in enumerate(lines, 1) if mention.search(body)), None)
    if line is None:
        if key == "build":
            return None
        return f"{recipe}:1: no {expected}, which --version (and conda-forge's bots) read"
    return f"{recipe}:{line}: cannot read the {key} here; write it as {expected}"


# What the toolkit is made of: its package and its entry points.  Edits elsewhere (the
# recipe, .ci_support, the README) change what it works on, not what it is.
TOOLKIT_PATHS = ("tools", "build-locally.py")


def git_revision(directory: Path) -> str | None:
    """``<short sha>`` (``+ uncommitted changes`` when the toolkit's own files differ from
    it: :data:`TOOLKIT_PATHS`), or None."""
    from tools.foundation import proc

    try:
        head = proc.call(
            "git",
            "-C",
            directory,
            "rev-parse",
            "--short=12",
            "HEAD",
            capture=True,
            quiet=True,
            check=False,
            timeout=10,
        )
        if head.returncode != 0:
            return None
        status = proc.call(
            "git",
            "-C",
            directory,
            "status",
            "--porcelain",
            "--untracked-files=no",
            "--",
            *TOOLKIT_PATHS,
            capture=True,
            quiet=True,
            check=False,
            timeout=10,
        )
    except ToolError:  # no git on PATH, or it hung
        return None
    revision = head.stdout.strip()
    if status.returncode == 0 and status.stdout.strip():
        revision += " + uncommitted changes"
    return revision


def release_fields(feedstock: Path):
    """The recipe file that names the release, and the reader of its version and build:
    meta.yaml, or recipe.yaml in a feedstock switched to rattler-build."""
    meta = feedstock / "recipe" / "meta.yaml"
    v1 = feedstock / "recipe" / "recipe.yaml"
    if v1.is_file() and not meta.is_file():
        return v1, v1_recipe_version
    return meta, recipe_version


def describe(feedstock: Path | None, toolkit: Path) -> str:
    """The two lines ``--version`` prints."""
    if feedstock is None:
        recipe_line = "recipe: unknown (not inside the feedstock)"
    else:
        meta, read = release_fields(feedstock)
        try:
            text = meta.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"{meta}: cannot read the recipe ({exc})") from None
        version, build = read(text, str(meta))
        for key, value in (("version", version), ("build", build)):
            problem = _unreadable(meta, text, key) if value is None else None
            if problem:
                raise UserError(problem)
        recipe_line = f"recipe: pytorch {version or 'unknown'}, build {build or 'unknown'} ({meta})"
    revision = git_revision(toolkit)
    toolkit_line = f"toolkit: git {revision}" if revision else "toolkit: git revision unknown"
    return f"{recipe_line}\n{toolkit_line} ({toolkit / 'tools'})"
