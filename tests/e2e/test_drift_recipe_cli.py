"""``python -m tools drift`` against this feedstock's real recipe, run as a user runs it:
the step line, run_constrained, and the checks on the comparison itself (the wheel's version
against the recipe's, the recipe's sha256 against git HEAD's)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers import feedstock_matrix
from helpers.cli import REPO, run_tools
from helpers.in_process import run_python

from tools.recipe import release

# One config of the feedstock's matrix (a CPU one where it has one: it renders fastest).
_CHOSEN = feedstock_matrix.prefer({"cuda": False}, {})
CONFIG = _CHOSEN.name if _CHOSEN else "no-config"
# Its platform prefix with the last two letters swapped (osx_arm64 -> osx_arm46): no config's.
TYPO = _CHOSEN.prefix[:-2] + _CHOSEN.prefix[-1] + _CHOSEN.prefix[-2] if _CHOSEN else "x"
pytestmark = pytest.mark.skipif(_CHOSEN is None, reason=".ci_support holds no configs")
# What the recipe builds, read from it: a bump changes these and no test.
RELEASE = release.release_of(
    release.parse(REPO / "recipe" / "meta.yaml", (REPO / "recipe" / "meta.yaml").read_text())
)
VERSION = RELEASE.version
NEXT = ".".join([*VERSION.split(".")[:2], str(int(VERSION.split(".")[2]) + 1)])


def _wheel(tmp_path: Path, version: str, requires: str = "") -> Path:
    """A wheel holding only METADATA: all drift reads of one."""
    path = tmp_path / f"torch-{version}-cp312-cp312-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(
            f"torch-{version}.dist-info/METADATA",
            f"Metadata-Version: 2.4\nName: torch\nVersion: {version}\n{requires}",
        )
    return path


def _drift(*args: str | Path, cwd: Path = REPO) -> subprocess.CompletedProcess:
    """From this checkout as ``python -m tools``, from another feedstock by path, as the
    README says to run it there."""
    argv = ["drift", "--offline", "--config", CONFIG, *map(str, args)]
    if cwd == REPO:
        return run_tools(*argv, timeout=120)
    return run_python([sys.executable, REPO / "tools", *argv], cwd=cwd, timeout=120)


def _feedstock(tmp_path: Path, *, commit: bool) -> Path:
    """A copy of this feedstock's recipe and configs, optionally committed to its own git."""
    root = tmp_path / "pytorch-feedstock"
    root.mkdir()
    shutil.copytree(REPO / "recipe", root / "recipe")
    shutil.copytree(REPO / ".ci_support", root / ".ci_support")
    shutil.copy(REPO / "conda-forge.yml", root / "conda-forge.yml")
    if commit:
        git = shutil.which("git")
        if git is None:
            pytest.skip("git is not on PATH")
        identity = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]
        for args in (["init", "-q"], ["add", "-A"], [*identity, "commit", "-qm", "recipe"]):
            subprocess.run([git, *args], cwd=root, check=True, capture_output=True)
    return root


def _edit(root: Path, key: str, value: str, names=("meta.yaml", "recipe-v1.yaml")) -> None:
    """One release field of the named recipes (both: a bump), as bump edits it."""
    for name in names:
        path = root / "recipe" / name
        path.write_text(release.parse(path, path.read_text()).with_field(key, value).text)


def _bump(root: Path, version: str) -> None:
    _edit(root, "version", version)


def _rows(result: subprocess.CompletedProcess) -> dict[str, dict]:
    assert result.returncode == 0, result.stderr
    return {row["package"]: row for row in json.loads(result.stdout)["rows"]}


# -- the step line --------------------------------------------------------------------------


def test_one_config_step_line_says_one_configuration(tmp_path: Path) -> None:
    result = _drift("--wheel", _wheel(tmp_path, f"{VERSION}+cpu"))
    assert result.returncode == 0, result.stderr
    assert f"==> render one configuration ({CONFIG}" in result.stderr
    assert "every" not in result.stderr


def test_misspelt_config_is_bad_input_not_a_failed_render(tmp_path: Path) -> None:
    result = run_tools("drift", "--offline", "--config", TYPO, "--wheel", _wheel(tmp_path, VERSION))
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: no config named {TYPO!r}"), result.stderr
    assert "FAILED" not in result.stderr and "==>" not in result.stderr


# -- run_constrained -------------------------------------------------------------------------

OPTREE_EXTRA = 'Provides-Extra: optree\nRequires-Dist: optree>=0.13.0; extra == "optree"\n'


def test_an_extra_the_recipe_constrains_is_compared_with_run_constrained(tmp_path: Path) -> None:
    rows = _rows(_drift("--json", "--wheel", _wheel(tmp_path, f"{VERSION}+cpu", OPTREE_EXTRA)))
    optree = rows["optree"]
    assert optree["status"] == "ok"
    assert optree["recipe"][0]["spec"] == ">=0.13.0" and optree["recipe"][0]["constrained"]
    assert "run_constrained" in optree["reason"] and "leaves it out" not in optree["reason"]


def test_an_extra_looser_than_run_constrained_is_not_ok(tmp_path: Path) -> None:
    wheel = _wheel(
        tmp_path,
        f"{VERSION}+cpu",
        'Provides-Extra: optree\nRequires-Dist: optree>=0.14.0; extra == "optree"\n',
    )
    rows = _rows(_drift("--json", "--wheel", wheel))
    assert rows["optree"]["status"] == "looser"


def test_a_required_package_only_constrained_is_looser(tmp_path: Path) -> None:
    rows = _rows(_drift("--json", "--wheel", _wheel(tmp_path, VERSION, "Requires-Dist: optree\n")))
    assert rows["optree"]["status"] == "looser"
    assert "only constrains it (run_constrained)" in rows["optree"]["reason"]


def test_text_table_marks_the_constrained_spec(tmp_path: Path) -> None:
    result = _drift("--wheel", _wheel(tmp_path, f"{VERSION}+cpu", OPTREE_EXTRA))
    line = next(x for x in result.stdout.splitlines() if x.startswith("optree"))
    assert ">=0.13.0 (run_constrained)" in line and "absent" not in line


# -- the wheel's version against the recipe's ----------------------------------------------


def test_wheel_of_another_version_is_a_problem(tmp_path: Path) -> None:
    root = _feedstock(tmp_path, commit=False)
    _bump(root, NEXT)
    result = _drift("--json", "--wheel", _wheel(tmp_path, f"{VERSION}+cpu"), cwd=root)
    assert result.returncode == 0, result.stderr
    (problem,) = json.loads(result.stdout)["problems"]
    assert f"is {VERSION}, the recipe builds pytorch {NEXT}" in problem
    assert "warning: version mismatch:" in result.stderr


def test_check_exits_1_on_a_version_mismatch(tmp_path: Path) -> None:
    root = _feedstock(tmp_path, commit=False)
    _bump(root, NEXT)
    result = _drift("--check", "--wheel", _wheel(tmp_path, f"{VERSION}+cpu"), cwd=root)
    assert result.returncode == 1, result.stderr
    assert "problem: version mismatch" in result.stdout
    assert "1 problem(s) with the comparison" in result.stderr


def test_the_wheel_of_the_recipe_version_is_no_problem(tmp_path: Path) -> None:
    result = _drift("--json", "--check", "--wheel", _wheel(tmp_path, f"{VERSION}+cpu"))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["problems"] == []


# -- the sha256 against git HEAD's ---------------------------------------------------------


def test_version_bump_keeping_heads_sha256_is_a_problem(tmp_path: Path) -> None:
    root = _feedstock(tmp_path, commit=True)
    _bump(root, NEXT)
    result = _drift("--json", "--wheel", _wheel(tmp_path, NEXT), cwd=root)
    assert result.returncode == 0, result.stderr
    (problem,) = json.loads(result.stdout)["problems"]
    assert f"version changed from {VERSION} to {NEXT} (git HEAD to now)" in problem
    assert f"sha256 {RELEASE.sha256[:12]}... did not" in problem


def test_version_bump_with_a_new_sha256_is_no_problem(tmp_path: Path) -> None:
    root = _feedstock(tmp_path, commit=True)
    _bump(root, NEXT)
    _edit(root, "sha256", "0123456789ab" + RELEASE.sha256[12:])
    result = _drift("--json", "--wheel", _wheel(tmp_path, NEXT), cwd=root)
    assert json.loads(result.stdout)["problems"] == []


# -- meta.yaml against the v1 recipe ---------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "named"),
    [
        ("version", "99.0.0", "version"),
        ("build", str(RELEASE.build + 1), "build number"),
        ("sha256", "f" * 64, "sha256"),
    ],
)
def test_check_fails_when_the_recipes_disagree(
    tmp_path: Path, key: str, value: str, named: str
) -> None:
    root = _feedstock(tmp_path, commit=False)
    _edit(root, key, value, names=("meta.yaml",))
    result = _drift("--check", "--json", "--wheel", _wheel(tmp_path, VERSION), cwd=root)
    assert result.returncode == 1, result.stderr
    problems = json.loads(result.stdout)["problems"]
    assert any(
        p.startswith(f"the recipes disagree on the {named}: meta.yaml:")
        and f"has {value}, recipe-v1.yaml:" in p
        for p in problems
    ), problems
    assert result.stderr.splitlines()[-1].startswith("problems: ")


def test_recipes_that_agree_are_no_problem(tmp_path: Path) -> None:
    root = _feedstock(tmp_path, commit=False)
    _edit(root, "build", str(RELEASE.build + 1))  # both: a rebuild
    result = _drift("--check", "--json", "--wheel", _wheel(tmp_path, VERSION), cwd=root)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["problems"] == []
