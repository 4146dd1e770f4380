"""``python -m tools switch --to rattler-build`` (and ``--to conda-build``): the feedstock moved to
the other engine, commit-ready (docs/rattler-build.md, "Switching the feedstock to
rattler-build").

To rattler-build: ``git rm recipe/meta.yaml``, ``git mv recipe/recipe-v1.yaml
recipe/recipe.yaml``, conda-forge.yml's ``conda_build_tool: rattler-build``, and ``.ci_support/``
with README.md's CI-job table as ``matrix --write`` computes them for recipe.yaml. Back: recipe.yaml
becomes recipe-v1.yaml again and meta.yaml comes back from the commit before the one that
removed it. It works on a clean work tree only, so every file it moves or rewrites is in git:
the recipe files are moved and conda-forge.yml rewritten first, in place (so the renders it
makes are the ones ``matrix --check`` and ``explain`` find on disk afterwards), then the matrix
is computed; when that fails (a recipe the new engine cannot render) or is interrupted,
``git reset --hard`` puts the tree back as it was, and nothing changed. Every change is staged.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from tools.foundation.log import Console

HELP = "switch the feedstock between conda-build (meta.yaml) and rattler-build (recipe.yaml)"

EPILOG = """\
What it cannot do: conda-smithy's rerender of .scripts/ and .github/workflows/ (their templates
read conda_build_tool); run `conda smithy rerender` before you commit, and it also writes
pixi.toml when conda-forge.yml sets conda_install_tool: pixi.

exit status: 0 switched (every change staged); 2 bad input (a dirty work tree, the feedstock
already builds with that engine, a recipe the engine cannot render: nothing changed).
"""

ENGINES = ("rattler-build", "conda-build")
RECIPE = "recipe/recipe.yaml"
V1_STAGED = "recipe/recipe-v1.yaml"  # the v1 recipe's name while conda-build builds
META = "recipe/meta.yaml"
EQUIVALENCE_TEST = "tests/unit/test_recipe_v1_equivalence.py"
_TOOL_LINE = re.compile(r"(?m)^(conda_build_tool:[ \t]*)([^\s#]+)")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--to", required=True, choices=ENGINES, help="the engine to build with")
    parser.add_argument("--pinning", metavar="PATH", help="conda-forge pinning (as for matrix)")


def run(args: argparse.Namespace, console: Console) -> int:
    from tools import rerender as ci_support
    from tools.foundation.errors import UserError
    from tools.foundation.repo import find_root
    from tools.smithy.forge import uses_rattler_build
    from tools.smithy.forge_yml import load_forge_yml

    root = find_root()
    pinning = ci_support.locate_pinning(args.pinning)
    _check_clean(root)
    current = "rattler-build" if uses_rattler_build(load_forge_yml(root)) else "conda-build"
    if current == args.to:
        raise UserError(f"{root / 'conda-forge.yml'}: the feedstock already builds with {args.to}")
    meta_text, v1_then = _meta_from_history(root) if args.to == "conda-build" else (None, None)
    moves = _moves(root, args.to)
    forge_text = _with_tool(root / "conda-forge.yml", args.to)
    try:
        changes = _switch(root, args.to, moves, forge_text, meta_text, pinning)
    except BaseException as error:
        # the tree was clean: what is not HEAD's is this command's own
        _git(root, "reset", "--quiet", "--hard", "HEAD", quiet=True)
        if isinstance(error, UserError):
            # an error in a moved recipe names the file as the user has it again
            message = str(error)
            for old, new in moves:
                if new is not None:
                    message = message.replace(str(root / new), str(root / old))
            raise UserError(message) from None
        raise
    for change in changes:
        console.say(change)
    console.say("staged: every change above (`git diff --cached --stat` lists them)")
    if args.to == "rattler-build":
        console.say(
            f"{EQUIVALENCE_TEST} skips from now on: there is no meta.yaml to compare "
            "recipe.yaml with (`switch --to conda-build` brings it back)"
        )
    elif v1_then != (root / V1_STAGED).read_text(encoding="utf-8"):
        console.warn(
            f"{META} is the one of the commit before the switch, and recipe.yaml changed "
            f"since: bring meta.yaml level with it ({EQUIVALENCE_TEST} compares them again)"
        )
    console.say(f"not done: {_not_done(root)}; then commit")
    return 0


def _git(root: Path, *args: str, quiet: bool = False, check: bool = True):
    from tools.foundation.proc import call

    return call("git", "-C", str(root), *args, capture=quiet, quiet=quiet, check=check)


def _check_clean(root: Path) -> None:
    from tools.foundation.errors import CommandError, UserError

    try:
        top = _git(root, "rev-parse", "--show-toplevel", quiet=True).stdout.strip()
    except CommandError:
        top = ""
    if not top or Path(top).resolve() != root.resolve():
        raise UserError(f"{root}: not the top of a git work tree; switch moves files with git")
    status = _git(root, "status", "--porcelain", "--untracked-files=all", quiet=True).stdout
    dirty = [line[3:] for line in status.splitlines() if line.strip()]
    if dirty:
        shown = ", ".join(dirty[:3]) + (f" and {len(dirty) - 3} more" if len(dirty) > 3 else "")
        raise UserError(
            f"{root}: uncommitted changes ({shown}); commit or stash them first: switch "
            "moves and rewrites files, and git is what undoes it"
        )


def _moves(root: Path, to: str) -> list[tuple[str, str | None]]:
    """(from, to) per recipe file; ``to`` None: removed."""
    from tools.foundation.errors import UserError

    if to == "rattler-build":
        needed, absent = (META, V1_STAGED), RECIPE
        moves: list[tuple[str, str | None]] = [(META, None), (V1_STAGED, RECIPE)]
    else:
        needed, absent = (RECIPE,), V1_STAGED
        moves = [(RECIPE, V1_STAGED)]
    for path in needed:
        if not (root / path).is_file():
            raise UserError(f"{root / path}: not found; switch --to {to} moves it")
    for path in (absent, *([META] if to == "conda-build" else [])):
        if (root / path).exists():
            raise UserError(f"{root / path}: already there; switch --to {to} would replace it")
    return moves


def _meta_from_history(root: Path) -> tuple[str, str | None]:
    """meta.yaml as the commit before the one that removed it had it, and the v1 recipe of
    that commit (to tell whether it changed since)."""
    from tools.foundation.errors import UserError

    removed = _git(
        root, "log", "-1", "--format=%H", "--diff-filter=D", "--", META, quiet=True
    ).stdout.strip()
    if not removed:
        raise UserError(f"{root}: no commit removed {META}; there is no meta.yaml to bring back")
    meta = _git(root, "show", f"{removed}^:{META}", quiet=True).stdout
    then = _git(root, "show", f"{removed}^:{V1_STAGED}", quiet=True, check=False)
    return meta, then.stdout if then.returncode == 0 else None


def _with_tool(path: Path, to: str) -> str:
    from tools.foundation.files import read_user_file

    text = read_user_file(path)
    if _TOOL_LINE.search(text):
        return _TOOL_LINE.sub(lambda m: m[1] + to, text, count=1)
    return text + ("" if text.endswith("\n") or not text else "\n") + f"conda_build_tool: {to}\n"


def _switch(root, to, moves, forge_text, meta_text, pinning) -> list[str]:
    """The recipe files moved and conda-forge.yml rewritten, then .ci_support and README.md's
    table computed for the recipe the engine now builds and written, all of it staged; the
    lines that say what changed."""
    from tools import rerender as ci_support
    from tools.commands.matrix import README_TABLE, planned_writes
    from tools.foundation.files import atomic_write_text, replace_files

    for old, new in moves:
        if new is None:
            _git(root, "rm", "--quiet", "--", old)
        else:
            _git(root, "mv", "--", old, new)
    if meta_text is not None:
        atomic_write_text(root / META, meta_text)
        _git(root, "add", "--", META)
    atomic_write_text(root / "conda-forge.yml", forge_text)
    matrix = ci_support.compute_matrix(root, root / "recipe", pinning)
    diffs, contents, table_changed = planned_writes(root, root / "recipe", matrix)
    replace_files(contents)
    paths = ["conda-forge.yml", ".ci_support", *(["README.md"] if table_changed else [])]
    _git(root, "add", "--all", "--", *paths)
    changes = [f"removed: {old}" if new is None else f"moved: {old} -> {new}" for old, new in moves]
    if meta_text is not None:
        changes.append(f"restored: {META} (from git history)")
    changes.append(f"updated: conda-forge.yml (conda_build_tool: {to})")
    changes += [d.written() for d in diffs]
    if table_changed:
        changes.append(f"updated: {README_TABLE}")
    recipe = RECIPE if meta_text is None else META
    changes.append(f"{len(matrix.jobs)} CI jobs, computed for {recipe}")
    return changes


def _not_done(root: Path) -> str:
    """The step only conda-smithy does."""
    from tools.smithy.forge_yml import load_forge_yml

    pixi = load_forge_yml(root).get("conda_install_tool") == "pixi"
    return (
        "conda-smithy's rerender of .scripts/ and .github/workflows/"
        + (" and pixi.toml (conda_install_tool: pixi)" if pixi else "")
        + ", whose templates read conda_build_tool: run `conda smithy rerender`"
    )
