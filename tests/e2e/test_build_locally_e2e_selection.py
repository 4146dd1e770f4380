"""build-locally.py end to end: the dry run decides as the run does; selection, shards,
the menu.

The repository's .scripts run through a fake `docker` in a throw-away feedstock
(tests/helpers/fake_engine_feedstock.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers.fake_engine_feedstock import (
    ARM,
    CPU,
    CUDA,
    V1_RECIPE,
    Feedstock,
    answer_menu,
)

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="drives bash scripts through a pseudo-terminal (POSIX only)"
)


@pytest.fixture
def feedstock(tmp_path: Path) -> Feedstock:
    return Feedstock(tmp_path)


# ---------------------------------------------------------------- the dry run decides as the run


def _damage(feedstock: Feedstock, config: str) -> None:
    (feedstock.root / ".ci_support" / f"{config}.yaml").write_text("cuda_compiler_version:\n- [\n")


def test_a_damaged_config_a_glob_chose_fails_instead_of_being_skipped(feedstock: Feedstock) -> None:
    _damage(feedstock, CPU)
    run = feedstock.run("linux_64_*")
    assert run.returncode == 1, run.stderr
    assert "cannot build on this machine" not in run.stderr
    configs = feedstock.summary()["configs"]
    assert configs[CPU]["status"] == "failed" and configs[CUDA]["status"] == "done"
    assert f"{CPU}.yaml:3: not valid YAML" in configs[CPU]["note"]
    assert "rerender" in configs[CPU]["note"]
    assert f"1 of 2 config(s) failed: {CPU}" in run.stderr.splitlines()[-1]


def test_why_of_a_damaged_config_gives_the_reason_it_never_started(feedstock: Feedstock) -> None:
    _damage(feedstock, CPU)
    assert feedstock.run("linux_64_*").returncode == 1
    why = feedstock.review("why", CPU)
    assert why.returncode == 0, why.stderr
    assert why.stdout.startswith(f"{CPU} (failed): ") and "rerender" in why.stdout


def test_dry_run_of_a_damaged_config_says_it_would_fail_and_exits_1(feedstock: Feedstock) -> None:
    _damage(feedstock, CPU)
    run = feedstock.run("linux_64_*", "--dry-run")
    assert run.returncode == 1, run.stderr
    assert (
        f"[!] {CPU}: would fail: " in run.stdout  # a damaged file has no label
        and "cannot build on this machine" not in run.stdout
    )
    assert f"[1/1] linux-64 cuda12.9: would build\n  config:  {CUDA}\n" in run.stdout
    assert [c["kind"] for c in feedstock.calls()] == ["info"]


def test_fail_fast_with_a_damaged_config_starts_nothing(feedstock: Feedstock) -> None:
    _damage(feedstock, CPU)
    run = feedstock.run("linux_64_*", "--fail-fast")
    assert run.returncode == 1, run.stderr
    assert feedstock.summary()["configs"][CUDA]["status"] == "pending"
    assert feedstock.calls("run") == []


def test_dry_run_with_nothing_buildable_is_the_runs_error(feedstock: Feedstock) -> None:
    osx = "osx_arm64_cuda_compiler_versionNone"
    (feedstock.root / ".ci_support" / f"{osx}.yaml").write_text("target_platform:\n- osx-arm64\n")
    real, dry = feedstock.run("osx_arm64*"), feedstock.run("osx_arm64*", "--dry-run")
    assert (dry.returncode, dry.stderr) == (real.returncode, real.stderr) == (2, real.stderr)
    assert dry.stderr.startswith("error: none of the 1 selected config(s) builds on this machine")


def test_a_recipe_that_does_not_render_is_refused_before_any_container(
    feedstock: Feedstock,
) -> None:
    (feedstock.root / "recipe" / "meta.yaml").write_text(
        "package:\n  name: libtorch\n  version: {{ nonsense(1) }}\n"
    )
    real, dry = feedstock.run(CPU), feedstock.run(CPU, "--dry-run")
    assert (dry.returncode, dry.stderr) == (real.returncode, real.stderr) == (2, real.stderr)
    [line] = dry.stderr.splitlines()
    assert line.startswith("error: ") and "meta.yaml:3" in line
    # the engine answered the ladder (`info`); nothing was pulled or run
    assert {c["kind"] for c in feedstock.calls()} == {"info"} and "would build" not in dry.stdout


def _switch_to_rattler_build(feedstock: Feedstock, recipe: str) -> None:
    """The switch docs/ describes: conda_build_tool: rattler-build, recipe.yaml alone."""
    feedstock.set_forge_config("rattler-build")
    (feedstock.root / "recipe" / "meta.yaml").unlink()
    (feedstock.root / "recipe" / "recipe.yaml").write_text(recipe)


def test_the_dry_run_of_a_switched_feedstock_renders_recipe_yaml(feedstock: Feedstock) -> None:
    _switch_to_rattler_build(feedstock, V1_RECIPE)
    run = feedstock.run(CPU, "--dry-run")
    assert run.returncode == 0, run.stderr
    assert "not rendered here" not in run.stdout
    assert "[1/1] linux-64 cpu: would build" in run.stdout


def test_the_dry_run_refuses_a_recipe_yaml_that_rattler_build_cannot_render(
    feedstock: Feedstock,
) -> None:
    # Before: "recipe/recipe.yaml: not rendered here", "would build" and exit 0.
    _switch_to_rattler_build(feedstock, V1_RECIPE.replace("${{ version }}", "${{ version ~ }}"))
    real, dry = feedstock.run(CPU), feedstock.run(CPU, "--dry-run")
    assert (dry.returncode, dry.stderr) == (real.returncode, real.stderr) == (2, real.stderr)
    [line] = dry.stderr.splitlines()
    render = subprocess.run(
        [sys.executable, "-m", "tools", "render", CPU],
        cwd=feedstock.root,
        env=feedstock.env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert render.returncode == 2 and render.stderr.splitlines() == [line]  # render's own line
    assert "recipe.yaml" in line and "Jinja" in line
    # the engine answered the ladder (`info`); nothing was pulled or run
    assert {c["kind"] for c in feedstock.calls()} == {"info"} and "would build" not in dry.stdout


# ---------------------------------------------------------------- selection, shards, the menu


def test_list_with_a_pattern_lists_only_its_matches(feedstock: Feedstock) -> None:
    run = feedstock.run("--list", "linux_64_*")
    assert run.returncode == 0, run.stderr
    assert [line.split()[-1] for line in run.stdout.splitlines()] == [CUDA, CPU]


def test_list_with_a_misspelt_glob_is_an_error_naming_the_closest(feedstock: Feedstock) -> None:
    run = feedstock.run("--list", "linux_46_*")
    assert run.returncode == 2 and run.stdout == ""
    first, *names = run.stderr.splitlines()
    assert first == "error: pattern 'linux_46_*' matches none of the 3 configs; the closest are:"
    assert {n.split()[-1] for n in names[:2]} == {CUDA, CPU}


def test_an_empty_shard_says_why_this_machine_builds_nothing(feedstock: Feedstock) -> None:
    run = feedstock.run("--all", "--shard", "5/5")
    assert run.returncode == 0, run.stderr
    assert feedstock.calls() == []
    assert (
        "shard 5/5: nothing to build on this machine: 3 config(s) split over 5 machines "
        "leave machines 4-5 without one; --shard K/3 uses every machine"
    ) in run.stderr


def test_a_refused_command_line_is_an_error_line_then_the_usage(feedstock: Feedstock) -> None:
    for args in (("--engine",), ("--bogus",), ("--shard",)):
        run = feedstock.run(*args)
        assert run.returncode == 2, args
        error, usage = run.stderr.splitlines()
        assert error.startswith("error: ") and usage.startswith("usage: build-locally [-h]")


def test_the_menu_marks_the_configs_this_machine_cannot_build(feedstock: Feedstock) -> None:
    win = "win_64_cuda_compiler_versionNone"
    (feedstock.root / ".ci_support" / f"{win}.yaml").write_text("target_platform:\n- win-64\n")
    _damage(feedstock, ARM)
    returncode, stdout, stderr = answer_menu(feedstock, b"2\n", "--dry-run")
    assert returncode == 0, stderr
    menu = [line.split(". ", 1)[1] for line in stdout.splitlines() if ". " in line[:6]]
    # sorted, label then name; the ones this machine builds are unmarked
    assert [line.split() for line in menu[:2]] == [
        ["linux-64", "cuda12.9", CUDA],
        ["linux-64", "cpu", CPU],
    ]
    assert menu[2] == f"{ARM}  [damaged: cannot be read, rerender]"  # unreadable: no label
    assert menu[3].startswith("win-64 cpu")
    assert f"{win}  [cannot build on this machine: Windows configs build" in menu[3]


def test_channel_and_source_cache_are_refused_for_the_container_engine(
    feedstock: Feedstock, tmp_path: Path
) -> None:
    # They feed the embedded engine; the container builds with the config's channels.
    run = feedstock.run(CPU, "--channel", str(tmp_path), "--source-cache", str(tmp_path))
    assert run.returncode == 2
    [line] = run.stderr.splitlines()
    assert "--channel and --source-cache feed the embedded engine" in line
    assert feedstock.calls("run") == [] and not feedstock.artifacts.exists()
