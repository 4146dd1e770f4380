"""matrix on a copy of this feedstock: README.md's CI-job table (--write writes it with
.ci_support, --check checks it, a --write the table refuses changes no file), and a key the
recipe's conda_build_config.yaml sets that the CI jobs do not get."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from helpers.cli import run_tools

REPO = Path(__file__).resolve().parents[2]


def tools(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_tools(*args, cwd=cwd, env=dict(os.environ, PYTHONPATH=str(REPO)))


# -- README.md's CI-job table: written by --write, checked by --check -----------------------

PYTHON_315 = """\
migrator_ts: 1790000000
__migrator:
    commit_message: Rebuild for python 3.15
    migration_number: 1
    operation: key_add
    primary_key: python
    use_local: true
    ordering:
        python:
            - 3.10.* *_cpython
            - 3.11.* *_cpython
            - 3.12.* *_cpython
            - 3.13.* *_cp313
            - 3.14.* *_cp314
            - 3.15.* *_cp315
python:
- 3.15.* *_cp315
is_python_min:
- false
"""


@pytest.fixture
def pytorch_feedstock(repo_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh copy of this feedstock: recipe, .ci_support, conda-forge.yml and README.md.
    Each test's copy is made anew in one folder: the render cache knows files by path and
    contents, so what a test leaves as it was renders once per worker, not once per test
    (about 2.7 s each), and what it changes renders anew (issue 59)."""
    dest = tmp_path_factory.getbasetemp() / "matrix-on-this-feedstock" / "pytorch-feedstock"
    shutil.rmtree(dest, ignore_errors=True)
    for name in ("recipe", ".ci_support"):
        shutil.copytree(repo_root / name, dest / name)
    for name in ("conda-forge.yml", "README.md"):
        shutil.copy(repo_root / name, dest / name)
    return dest


def _python_cell(readme: Path) -> str:
    """The Python column of the README's first CI job: the Pythons the recipe builds (read,
    never assumed: a bump can skip one)."""
    header, _rule, first = (
        readme.read_text().split("<!-- matrix-table:start -->")[1].split("\n")[1:4]
    )
    column = [c.strip() for c in header.split("|")].index("Python")
    return [c.strip() for c in first.split("|")][column]


def test_write_after_a_new_python_migration_updates_the_readme_table(
    pytorch_feedstock, pinning_dir
):
    pythons = _python_cell(pytorch_feedstock / "README.md")
    (pytorch_feedstock / ".ci_support" / "migrations" / "python315.yaml").write_text(PYTHON_315)
    result = tools("matrix", "--pinning", str(pinning_dir), "--write", cwd=pytorch_feedstock)
    assert result.returncode == 0, result.stderr
    assert "updated: README.md (CI-job table between the matrix-table markers)" in result.stdout
    table = (pytorch_feedstock / "README.md").read_text().split("<!-- matrix-table:start -->")[1]
    assert f"| {pythons}, 3.15 |" in table
    again = tools("matrix", "--pinning", str(pinning_dir), "--check", cwd=pytorch_feedstock)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "README.md's CI-job table are up to date" in again.stdout


def test_check_reports_a_stale_readme_table_and_exits_1(pytorch_feedstock, pinning_dir):
    readme = pytorch_feedstock / "README.md"
    stale = readme.read_text().replace(f"| {_python_cell(readme)} |", "| 2.7 |")
    assert stale != readme.read_text()
    readme.write_text(stale)
    result = tools("matrix", "--pinning", str(pinning_dir), "--check", cwd=pytorch_feedstock)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "changed: README.md (CI-job table between the matrix-table markers)"
    ]
    as_json = tools(
        "matrix", "--pinning", str(pinning_dir), "--check", "--json", cwd=pytorch_feedstock
    )
    assert json.loads(as_json.stdout)["differences"] == [
        {"path": "README.md", "kind": "readme-table"}
    ]


def test_check_diff_shows_the_readme_tables_diff(pytorch_feedstock, pinning_dir):
    readme = pytorch_feedstock / "README.md"
    text = readme.read_text()
    stale = text.replace("| 3.10, 3.11, 3.12, 3.13, 3.14 |", "| 3.10 |", 1)
    readme.write_text(stale)
    result = tools(
        "matrix", "--pinning", str(pinning_dir), "--check", "--diff", cwd=pytorch_feedstock
    )
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[1:3] == ["--- a/README.md", "+++ b/README.md"]
    removed = [line[1:] for line in lines if line.startswith("-") and not line.startswith("---")]
    added = [line[1:] for line in lines if line.startswith("+") and not line.startswith("+++")]
    assert len(removed) == len(added) == 1 and "| 3.10 |" in removed[0]
    assert added[0] in text.splitlines()
    assert readme.read_text() == stale  # --check writes nothing


# -- --write changes every file or none ------------------------------------------------------


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_write_refused_by_the_readme_table_changes_no_file(pytorch_feedstock, pinning_dir):
    """The README's table renders the recipe, which refuses a GPU row shorter than its
    cuda_arch_set says; that refusal comes after .ci_support is computed, and must come
    before any of it is written (issue 43, item 7)."""
    from helpers import feedstock_matrix

    cuda = feedstock_matrix.select(cuda=True, root=pytorch_feedstock)
    if not cuda:
        pytest.skip(".ci_support holds no CUDA config")
    row = feedstock_matrix.arch_row(cuda[0], root=pytorch_feedstock)
    lists = pytorch_feedstock / "recipe" / "cuda_arch_lists.txt"
    # a row the config's claim does not match: conda-forge's "full" one cut short, or a fork's
    # one-arch row (named by its set) changed to another GPU
    short = row.split(";")[0].removesuffix("+PTX")
    if short == row:
        short = "8.0" if row != "8.0" else "9.0"
    # on the config's own line: a fork's "9.0" is also a part of other rows
    lines = lists.read_text().splitlines(keepends=True)
    at = next(
        n
        for n, line in enumerate(lines)
        if line.split("#", 1)[0].split()[:2] == [cuda[0].cuda, cuda[0].platform]
    )
    lines[at] = lines[at].replace(row, short, 1)
    lists.write_text("".join(lines))
    # A change --write would make: one CI job's file gone.
    gone = pytorch_feedstock / ".ci_support" / f"{cuda[0].name}.yaml"
    gone.unlink()
    before = _snapshot(pytorch_feedstock)
    result = tools("matrix", "--pinning", str(pinning_dir), "--write", cwd=pytorch_feedstock)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""  # no "added:" for a file that is not there
    assert "cuda_arch_lists.txt" in result.stderr and "cuda_arch_set" in result.stderr
    assert _snapshot(pytorch_feedstock) == before


# -- a key set in recipe/conda_build_config.yaml that the CI jobs do not get -----------------


def _one_python(root: Path) -> str:
    """A Python the CI jobs build, as the pinning spells it: the oldest of the first job
    (a migration adds newer ones; one it adds is refused as the recipe's only Python)."""
    from helpers import feedstock_matrix

    return feedstock_matrix.configs(root)[0].pythons[0]


def _migrations_setting(root: Path, key: str) -> list[str]:
    return sorted(
        p.name
        for p in (root / ".ci_support" / "migrations").glob("*.yaml")
        if key in (yaml.safe_load(p.read_text()) or {})
    )


def test_a_python_the_recipe_cbc_sets_alone_is_warned_about_with_its_zipped_partner(
    pytorch_feedstock, pinning_dir
):
    """Before: `matrix --write` said "0 file(s) changed" and the jobs kept every Python,
    silently (issue 43, item 9)."""
    python = _one_python(pytorch_feedstock)
    cbc = pytorch_feedstock / "recipe" / "conda_build_config.yaml"
    line = len(cbc.read_text().splitlines()) + 2
    cbc.write_text(cbc.read_text() + f"\npython:\n  - {python}\n")
    result = tools("matrix", "--pinning", str(pinning_dir), "--write", cwd=pytorch_feedstock)
    assert result.returncode == 0, result.stderr
    [warning] = [w for w in result.stderr.splitlines() if " python is set to " in w]
    assert warning.startswith(f"warning: {cbc}:{line}: python is set to ['{python}'], ")
    assert "set is_python_min there too, one entry per python entry" in warning
    for name in _migrations_setting(pytorch_feedstock, "python"):
        assert f".ci_support/migrations/{name}" in warning


def test_a_migration_that_adds_to_a_key_the_recipe_cbc_sets_is_named(
    pytorch_feedstock, pinning_dir
):
    migrations = _migrations_setting(pytorch_feedstock, "python")
    if not migrations:
        pytest.skip(".ci_support/migrations holds no migration that adds a Python")
    python = _one_python(pytorch_feedstock)
    cbc = pytorch_feedstock / "recipe" / "conda_build_config.yaml"
    cbc.write_text(cbc.read_text() + f"\npython:\n  - {python}\nis_python_min:\n  - false\n")
    result = tools("matrix", "--pinning", str(pinning_dir), "--write", cwd=pytorch_feedstock)
    assert result.returncode == 0, result.stderr
    [warning] = [w for w in result.stderr.splitlines() if " python is set to " in w]
    assert "is_python_min" not in warning  # set: the group is whole
    assert all(f".ci_support/migrations/{name}" in warning for name in migrations)
    assert "after the recipe's list: delete" in warning
    # Deleting them, as the warning says, gives the jobs the one Python and no warning.
    for name in migrations:
        (pytorch_feedstock / ".ci_support" / "migrations" / name).unlink()
    again = tools("matrix", "--pinning", str(pinning_dir), "--write", cwd=pytorch_feedstock)
    assert again.returncode == 0 and " is set to " not in again.stderr, again.stderr
    jobs = (pytorch_feedstock / ".ci_support").glob("*.yaml")
    assert {tuple(yaml.safe_load(p.read_text())["python"]) for p in jobs} == {(python,)}


def test_this_feedstocks_recipe_cbc_is_what_its_jobs_get(repo_root, pinning_dir):
    result = tools("matrix", "--pinning", str(pinning_dir), cwd=repo_root)
    assert result.returncode == 0, result.stderr
    assert " is set to " not in result.stderr
