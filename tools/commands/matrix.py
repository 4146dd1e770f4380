"""``python -m tools matrix``: the CI jobs, and the .ci_support files that describe them."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tools.foundation.log import Console

HELP = (
    "compute the CI jobs from the recipe, its cbc, the pinning and migrations; "
    "--check/--write .ci_support"
)

EPILOG = """\
The pinning is conda-forge-pinning's conda_build_config.yaml, or a directory laid out like
the installed package (conda_build_config.yaml + share/conda-forge/migrations/). Without
--pinning, $CONDA_PREFIX/conda_build_config.yaml is used when it exists.

Migrations in .ci_support/migrations/ follow CFEP-9 as conda-smithy applies them: a file
with use_local: true (or no timestamp) is used as is; one whose name and migrator_ts match
the pinning's copy is replaced by that copy; any other is a closed migration (--write
deletes it, --check reports it).

Platforms, as conda-smithy decides them: a target platform gets CI jobs when the provider
line of the platform it is built on (conda-forge.yml build_platform) is not null, so a
provider line of a cross-compiled platform (osx_64 built on osx_arm64) has no effect; a
warning names such a line when it asks for something else, and the line that decides. A
noarch output counts on conda-forge.yml's noarch_platforms only (linux_64 by default).

On a feedstock switched to rattler-build (conda_build_tool: rattler-build), the jobs are
those conda-smithy computes for recipe/recipe.yaml: rattler-build renders each platform and
says which variant keys each package uses (docs/rattler-build.md).

--json (with no mode, or with --check) prints a document instead of text:
  {"jobs": [{"name": str, "platform": str, "build_platform": str,
             "split": {key: value}}],
   "closed_migrations": [str],
   "differences": [{"path": str,
                    "kind": "missing"|"stale"|"changed"|"closed-migration"|"readme-table"}]}
  "differences" is present with --check only.

README.md's CI-job table (between <!-- matrix-table:start --> and <!-- matrix-table:end -->,
as `explain --markdown` prints it) is generated from the same inputs: --write rewrites it,
--check reports it when stale ("readme-table"). A README without the markers is left alone.

exit status: 0 up to date / written, 1 --check found differences, 2 bad input.
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--pinning", metavar="PATH", help="conda-forge pinning file or directory")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--check", action="store_true", help="exit 1 and list differences if .ci_support is stale"
    )
    mode.add_argument("--write", action="store_true", help="regenerate .ci_support/*.yaml")
    parser.add_argument("--diff", action="store_true", help="with --check: show a unified diff")
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the jobs (and with --check the differences) as JSON",
    )
    parser.add_argument(
        "--recipe-dir", metavar="DIR", help="recipe directory (default: <repo>/recipe)"
    )


def run(args: argparse.Namespace, console: Console) -> int:
    from tools import rerender as ci_support
    from tools.foundation import readme
    from tools.foundation.errors import ProblemsFound, UserError
    from tools.foundation.files import replace_files
    from tools.foundation.repo import find_root, recipe_dir

    if args.diff and not args.check:
        raise UserError("--diff shows what --check finds: use `matrix --check --diff`")
    if args.json and (args.write or args.diff):
        raise UserError("--json describes the jobs or --check's differences; drop --write / --diff")
    root = find_root()
    recipe = recipe_dir(args.recipe_dir, root)
    pinning = ci_support.locate_pinning(args.pinning)
    matrix = ci_support.compute_matrix(root, recipe, pinning)
    for message in matrix.warnings:
        console.warn(message)
    folder = root / ".ci_support"
    if args.write:
        diffs, contents, table_changed = planned_writes(root, recipe, matrix)
        replace_files(contents)
        for change in diffs:
            console.say(change.written())
        if table_changed:
            console.say(f"updated: {README_TABLE}")
        changed = len(diffs) + table_changed
        console.say(f"{len(matrix.jobs)} CI jobs; {changed} file(s) changed")
        return 0
    if args.json:
        document = _document(matrix)
        if args.check:
            diffs = _all_differences(root, recipe, matrix)
            document["differences"] = [{"path": d.path, "kind": d.kind} for d in diffs]
        console.say(json.dumps(document, indent=2))
        if args.check and document["differences"]:
            raise ProblemsFound(f"{len(document['differences'])} difference(s) in .ci_support")
        return 0
    if args.check:
        diffs = _all_differences(root, recipe, matrix)
        if not diffs:
            with_table = readme.section_of(root / "README.md", readme.MATRIX_TABLE) is not None
            what = (
                ".ci_support and README.md's CI-job table are" if with_table else ".ci_support is"
            )
            console.say(f"{what} up to date ({len(matrix.jobs)} CI jobs)")
            return 0
        for diff in diffs:
            console.say(diff)
        if args.diff:
            names = [
                d.path.split("/", 1)[1]
                for d in diffs
                if d.kind in ("changed", "missing", "stale") and d.path.startswith(".ci_support/")
            ]
            console.say(ci_support.unified_diff(folder, matrix, names), end="")
            if any(d.kind == "readme-table" for d in diffs):
                console.say(_readme_diff(root, recipe, matrix), end="")
        raise ProblemsFound(
            f"{len(diffs)} difference(s) in .ci_support and README.md's CI-job table; "
            "run `python -m tools matrix --write"
            + (f" --pinning {args.pinning}`" if args.pinning else "`")
        )
    for job in matrix.jobs:
        split = ", ".join(
            f"{k}={job.config[k][0]}" for k in job.loop_vars if k != "target_platform"
        )
        where = f"{job.platform} (built on {job.build_platform})"
        console.say(f"{job.name}\n    {where}; {split or 'no split keys'}")
    for path in matrix.migrations.closed:
        console.say(f"closed migration (would be deleted): .ci_support/migrations/{path.name}")
        console.say(f"    {matrix.migrations.reason(path)}")
    return 0


# The README's CI-job table is generated from .ci_support and the recipe, so the command that
# writes .ci_support writes it too, and --check checks it.
README_TABLE = "README.md (CI-job table between the matrix-table markers)"


def planned_writes(root: Path, recipe: Path, matrix) -> tuple[list, dict[Path, str | None], bool]:
    """What ``--write`` changes: the differences, each file's new text (``None``: delete it)
    and whether README.md's table is among them. Everything is computed, the README's table
    included (it renders the recipe, which may refuse), before any file changes; then every
    file is written or none is."""
    from tools import rerender as ci_support
    from tools.foundation import readme

    diffs, contents = ci_support.planned(root / ".ci_support", matrix)
    table = _readme_table(root, recipe, matrix)
    readme_text = (
        None
        if table is None
        else readme.updated_text(root / "README.md", table, readme.MATRIX_TABLE)
    )
    if readme_text is not None:
        contents[root / "README.md"] = readme_text
    return diffs, contents, readme_text is not None


def _readme_table(root, recipe, matrix) -> str | None:
    """The table the README should carry, or ``None`` when its README has no such section
    (a feedstock that does not keep the table)."""
    from tools import rerender as ci_support
    from tools.commands.explain import readme_table_of
    from tools.foundation import readme

    if readme.section_of(root / "README.md", readme.MATRIX_TABLE) is None:
        return None
    files = {n: t for n, t in ci_support.expected_files(matrix).items() if n.endswith(".yaml")}
    return readme_table_of(files, root, recipe)


def _readme_diff(root, recipe, matrix) -> str:
    """The unified diff ``--write`` would make to README.md's CI-job table."""
    import difflib

    from tools.foundation import readme

    path = root / "README.md"
    old = path.read_text(encoding="utf-8")
    new = readme.replace_section(
        old, _readme_table(root, recipe, matrix), str(path), readme.MATRIX_TABLE
    )
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            "a/README.md",
            "b/README.md",
        )
    )


def _all_differences(root, recipe, matrix) -> list:
    from tools import rerender as ci_support
    from tools.foundation import readme

    diffs = ci_support.differences(root / ".ci_support", matrix)
    table = _readme_table(root, recipe, matrix)
    if table is not None and readme.section_of(root / "README.md", readme.MATRIX_TABLE) != table:
        diffs.append(ci_support.Difference("README.md", "readme-table"))
    return diffs


def _document(matrix) -> dict:
    jobs = [
        {
            "name": job.name,
            "platform": job.platform,
            "build_platform": job.build_platform,
            "split": {k: _scalar(job.config[k]) for k in job.loop_vars if k != "target_platform"},
        }
        for job in matrix.jobs
    ]
    closed = [f".ci_support/migrations/{path.name}" for path in matrix.migrations.closed]
    return {"jobs": jobs, "closed_migrations": closed}


def _scalar(value):
    if isinstance(value, (list, tuple)):
        value = value[0] if len(value) == 1 else list(value)
    if value is None or isinstance(value, (str, int, float, bool, list)):
        return value
    return str(value)
