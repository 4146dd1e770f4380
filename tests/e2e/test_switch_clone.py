"""``python -m tools switch`` on a clone of this repository, and the commands a maintainer runs on
the switched clone (issue 58): matrix --check, explain, render, drift, bump, build-locally's
container path with build_steps.sh's build made a dry run; then the switch back, which gives
the tree the clone started from.

The clone is tests/helpers/switched_clone.py's. ``check --config`` and ``review verify
--allow-other-engine`` on a batch the embedded engine built from such a clone are
tests/e2e/test_e2e_real_engine.py's (its CPU batch), so no second build of the miniature runs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import feedstock_matrix
from helpers.bump import command, releases
from helpers.cli import run_tools
from helpers.fake_engine_feedstock import install_fake_engine
from helpers.feedstock_matrix import PINNING
from helpers.switched_clone import SwitchedClone, git, switched_clone

CPU = feedstock_matrix.find(platform="linux-64", cuda=False)
pytestmark = pytest.mark.skipif(CPU is None, reason=".ci_support holds no linux-64 CPU config")


@pytest.fixture(scope="module")
def switched(tmp_path_factory: pytest.TempPathFactory) -> SwitchedClone:
    return switched_clone(tmp_path_factory.mktemp("switched") / "pytorch-cpu-feedstock")


def _tools(root: Path, *args: str | Path):
    return run_tools(*args, cwd=root, timeout=600)


def _edits(diff: str) -> list[str]:
    """The removed and added lines of a unified diff, its file headers left out."""
    return [
        line
        for line in diff.splitlines()
        if line[:1] in ("+", "-") and not line.startswith(("+++ ", "--- "))
    ]


def _copy(switched: SwitchedClone, tmp_path: Path) -> Path:
    """A clone of the switched clone, for a test that writes."""
    copy = tmp_path / "pytorch-cpu-feedstock"
    git(tmp_path, "clone", "-q", str(switched.root), str(copy))
    return copy


# -- the switch -------------------------------------------------------------------------------


def test_the_switch_moves_the_recipes_sets_the_tool_and_rewrites_ci_support(switched) -> None:
    changed = git(switched.root, "diff", "--name-status", "-M", switched.start, "HEAD")
    rows = sorted(line.split("\t") for line in changed.splitlines())
    configs = sorted(p.name for p in (switched.root / ".ci_support").glob("*.yaml"))
    assert rows == sorted(
        [
            ["D", "recipe/meta.yaml"],
            ["M", "conda-forge.yml"],
            ["R100", "recipe/recipe-v1.yaml", "recipe/recipe.yaml"],
            *(["M", f".ci_support/{name}"] for name in configs),
        ]
    )
    forge = git(switched.root, "diff", "-U0", switched.start, "HEAD", "--", "conda-forge.yml")
    assert re.findall(r"^[-+]conda_build_tool:.*$", forge, re.M) == [
        "-conda_build_tool: conda-build",
        "+conda_build_tool: rattler-build",
    ]
    # conda-smithy drops the pinning's keys named like an output (compat's get_used_vars)
    ci = git(switched.root, "diff", "-U0", switched.start, "HEAD", "--", ".ci_support")
    edits = _edits(ci)
    assert {line for line in edits if not line.startswith("-- ")} == {"-libtorch:", "-pytorch:"}
    assert len(edits) == 4 * len(configs)


def test_the_switch_says_what_it_staged_and_the_one_step_it_cannot_do(switched) -> None:
    lines = switched.output.splitlines()
    assert "removed: recipe/meta.yaml" in lines
    assert "moved: recipe/recipe-v1.yaml -> recipe/recipe.yaml" in lines
    assert "updated: conda-forge.yml (conda_build_tool: rattler-build)" in lines
    [last] = [line for line in lines if line.startswith("not done: ")]
    assert "conda-smithy's rerender of .scripts/ and .github/workflows/" in last
    assert "`conda smithy rerender`" in last and "pixi" not in last  # no conda_install_tool: pixi


def test_the_recipe_equivalence_test_skips_and_says_why(switched) -> None:
    argv = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p"]
    argv += ["no:randomly", "tests/unit/test_recipe_v1_equivalence.py"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    result = subprocess.run(
        argv, cwd=switched.root, env=env, capture_output=True, text=True, timeout=300
    )
    # the module skips whole: pytest's "no tests ran" (5), with the reason
    assert result.returncode == 5, result.stdout[-2000:]
    assert "1 skipped" in result.stdout
    assert "switched to rattler-build" in result.stdout and "switch --to conda-build" in (
        result.stdout
    )


# -- the commands on the switched clone -------------------------------------------------------


def test_matrix_check_finds_what_the_switch_wrote(switched) -> None:
    result = _tools(switched.root, "matrix", "--check", "--pinning", PINNING)
    assert result.returncode == 0, result.stdout + result.stderr
    count = len(list((switched.root / ".ci_support").glob("*.yaml")))
    assert f"up to date ({count} CI jobs)" in result.stdout


def test_explain_and_render_read_recipe_yaml(switched) -> None:
    jobs = json.loads(_tools(switched.root, "explain", "--json").stdout)
    assert sorted(j["config"] for j in jobs) == sorted(
        p.stem for p in (switched.root / ".ci_support").glob("*.yaml")
    )
    result = _tools(switched.root, "render", CPU.name, "--json")
    assert result.returncode == 0, result.stderr
    outputs = json.loads(result.stdout)
    assert {o["name"] for o in outputs} == {"libtorch", "pytorch", "pytorch-cpu"}
    # rattler-build's hash: the used variant as rattler-build lists it (hash_input)
    assert all(o["hash_input"].get("target_platform") == "linux-64" for o in outputs)


def test_drift_reads_the_recipe_column_from_recipe_yaml(switched, tmp_path: Path) -> None:
    version = command.recipe_releases(switched.root / "recipe")[0].version
    wheel = command.wheel(tmp_path, version)
    result = _tools(
        switched.root, "drift", "--offline", "--config", CPU.name, "--json", "--wheel", wheel
    )
    assert result.returncode == 0, result.stderr
    rows = {row["package"]: row for row in json.loads(result.stdout)["rows"]}
    assert rows["filelock"]["recipe"], rows["filelock"]  # the v1 recipe's pytorch run pins


def test_bump_moves_recipe_yaml_alone(switched, tmp_path: Path) -> None:
    copy = _copy(switched, tmp_path)
    releases.write_patches(copy / "recipe")  # patches the miniature release takes
    git(copy, "commit", "-qam", "the miniature's patches")
    before = command.recipe_releases(copy / "recipe")
    version = command.releases_after(before[0].version)[0]
    archive = releases.older_release(tmp_path / "releases", version, tmp_path)
    result = command.bump(
        copy, version, "--source", archive, "--wheel", command.wheel(tmp_path, version)
    )
    assert result.returncode == 0, result.stdout + result.stderr
    changed = set(git(copy, "diff", "--name-only").split())
    assert (
        "recipe/recipe.yaml" in changed
        and not {"recipe/meta.yaml", "recipe/recipe-v1.yaml"} & changed
    )
    [after] = command.recipe_releases(copy / "recipe")
    assert (after.version, after.build) == (version, 0)
    recipe_diff = git(copy, "diff", "-U0", "--", "recipe/recipe.yaml")
    edits = _edits(recipe_diff)
    removed = [line[1:].split(":")[0].strip() for line in edits if line.startswith("-")]
    added = [line[1:] for line in edits if line.startswith("+")]
    # the release's commit too, from the wheel's torch/version.py
    assert removed == ["version", "git_version", "build", "sha256"], recipe_diff
    assert [line.split(":")[0].strip() for line in added[:4]] == removed, recipe_diff
    assert f'git_version: "{command.wheel_commit()}"' in added[1], recipe_diff
    # and the skip of the Pythons the wheel's Requires-Python leaves out, if any
    assert all("python" in line.lower() for line in added[4:]), recipe_diff


def test_the_container_build_takes_build_steps_rattler_build_branch(
    switched, tmp_path: Path
) -> None:
    # EXTRA_CB_OPTIONS=--render-only: the build a dry run (tools/rattler_build/cli.py), run by
    # the repository's own .scripts/build_steps.sh under the fake container engine
    copy = _copy(switched, tmp_path)
    (tmp_path / "bin").mkdir()
    install_fake_engine(tmp_path / "bin")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CI", "GITHUB_", "FAKE_"))},
        "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "FAKE_DOCKER_STATE": str(tmp_path / "engine-state"),
        "CONDA_FORGE_DOCKER_RUN_ARGS": "-e EXTRA_CB_OPTIONS",
        "EXTRA_CB_OPTIONS": "--render-only",
        "HOME": str(tmp_path / "home"),
    }
    run = subprocess.run(
        [sys.executable, "build-locally.py", CPU.name],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stderr.splitlines()[0].startswith("engine: docker")
    log = (copy / "build_artifacts" / f"{CPU.name}-log.txt").read_text()
    assert "build-locally: recipe file: recipe/recipe.yaml" in log
    assert f"Running rattler-build build for {CPU.name}" in log
    assert not (tmp_path / "engine-state" / "conda-build.jsonl").exists()
    rendered = json.loads(_json_block(log))
    names = {o["recipe"]["package"]["name"] for o in rendered}
    assert names == {"libtorch", "pytorch", "pytorch-cpu"}


def _json_block(log: str) -> str:
    """The JSON rattler-build printed, out of the timestamped log lines."""
    lines = [re.sub(r"^\[\d\d:\d\d:\d\d\] ", "", line) for line in log.splitlines()]
    start = lines.index("[")
    end = lines.index("]", start)
    return "\n".join(lines[start : end + 1])


# -- and back ---------------------------------------------------------------------------------


def test_switching_back_gives_the_tree_it_started_from(switched, tmp_path: Path) -> None:
    copy = _copy(switched, tmp_path)
    result = _tools(copy, "switch", "--to", "conda-build", "--pinning", PINNING)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "restored: recipe/meta.yaml (from git history)" in result.stdout.splitlines()
    assert "warning" not in result.stderr  # recipe.yaml did not change since the switch
    assert git(copy, "status", "--porcelain", "--untracked-files=no").strip()  # staged
    git(copy, "commit", "-qm", "switch back")
    assert git(copy, "diff", "--stat", switched.start, "HEAD") == ""
