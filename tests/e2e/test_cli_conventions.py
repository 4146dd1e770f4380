"""What every command promises: --help with its exit status, --json where it prints data,
--recipe-dir where it reads the recipe, --version, and where it can be run from."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import feedstock_matrix
from helpers.cli_conventions import ONE, ONE_CONFIG, PLATFORM_GLOB, ROOT, run_by_path, run_toolkit

from tools.__main__ import COMMANDS, WHERE_TO_RUN


def _words(text: str) -> str:
    return " ".join(text.split())


# ------------------------------------------------------------------ --help


@pytest.mark.parametrize("command", COMMANDS)
def test_every_commands_help_has_an_exit_status_paragraph(command: str) -> None:
    result = run_toolkit(command, "--help")
    assert result.returncode == 0, result.stderr
    assert re.search(r"^exit status: 0 ", result.stdout, re.MULTILINE), result.stdout


def test_top_level_and_build_locally_help_have_an_exit_status_paragraph() -> None:
    assert "\nexit status: 0 " in run_toolkit("--help").stdout
    build = subprocess.run(
        [sys.executable, str(ROOT / "build-locally.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "\nexit status: 0 " in build.stdout


def test_emulate_usage_line_names_every_option_it_has() -> None:
    help_text = run_toolkit("emulate", "--help").stdout
    usage = _words(help_text.split("\n\n", 1)[0])
    options = set(re.findall(r"^\s+(--[a-z-]+)", help_text, re.MULTILINE))
    assert options >= {"--arch", "--cpu", "--timeout", "--index-url"}
    assert [o for o in sorted(options) if o not in usage] == []


@pytest.mark.parametrize("command", ["render", "matrix", "explain", "check", "drift", "bump"])
def test_every_command_that_reads_the_recipe_takes_recipe_dir(command: str) -> None:
    assert "--recipe-dir DIR" in run_toolkit(command, "--help").stdout


# ------------------------------------------------------------------ --json


def test_explain_json_has_one_object_per_config_matching_the_filter() -> None:
    result = run_toolkit("explain", "--filter", PLATFORM_GLOB, "--json")
    assert result.returncode == 0, result.stderr
    jobs = json.loads(result.stdout)
    expected = sorted(p.name[:-5] for p in (ROOT / ".ci_support").glob(f"{PLATFORM_GLOB}.yaml"))
    assert [job["config"] for job in jobs] == expected
    for job in jobs:
        assert set(job) == {
            "config",
            "label",
            "platform",
            "build_platform",
            "cross",
            "cuda",
            "cuda_arch_list",
            "cuda_arch_set",
            "blas",
            "pythons",
            "packages",
        }
        config = next(c for c in feedstock_matrix.configs() if c.name == job["config"])
        assert job["cuda"] == config.cuda
        assert job["cross"] is (job["build_platform"] != job["platform"])
        packages = {"libtorch", "pytorch", "pytorch-gpu" if config.cuda else "pytorch-cpu"}
        if config.cuda and config.platform.startswith("linux"):
            packages.add("libtorch-cuda-linalg")
        assert {p["name"] for p in job["packages"]} == packages
        assert next(p for p in job["packages"] if p["name"] == "pytorch")["count"] == len(
            job["pythons"]
        )


def test_explain_fits_a_terminal_and_names_configs_by_label() -> None:
    from tools.foundation.selection import read_labels

    result = run_toolkit("explain")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100
    names = sorted(p.stem for p in (ROOT / ".ci_support").glob("*.yaml"))
    labels = read_labels(ROOT / ".ci_support", names)
    rows = [line for line in lines[1:] if not line.startswith(" ")]
    assert [row.split("  ")[0] for row in rows] == [labels[n] for n in names]


def test_explain_filter_matching_nothing_is_an_error() -> None:
    result = run_toolkit("explain", "--filter", "solaris_*")
    assert result.returncode == 2
    assert result.stderr.startswith("error: --filter 'solaris_*' matches none of the")


def test_matrix_json_lists_the_jobs_with_their_split_keys(pinning_dir: Path) -> None:
    result = run_toolkit("matrix", "--pinning", str(pinning_dir), "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    names = sorted(p.name[:-5] for p in (ROOT / ".ci_support").glob("*.yaml"))
    assert sorted(job["name"] for job in document["jobs"]) == names
    config = feedstock_matrix.find(cuda=True)
    several = len({c.cuda for c in feedstock_matrix.configs()}) > 1
    if config is not None and several:  # the jobs split on the CUDA version, and name it
        (cuda,) = [j for j in document["jobs"] if j["name"] == config.name]
        assert cuda["split"]["cuda_compiler_version"] == config.cuda
    assert document["closed_migrations"] == []


def test_matrix_json_with_check_reports_the_differences(pinning_dir: Path) -> None:
    result = run_toolkit("matrix", "--pinning", str(pinning_dir), "--json", "--check")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["differences"] == []


# ------------------------------------------------------------------ --recipe-dir


def test_check_recipe_dir_without_a_recipe_is_an_error(tmp_path: Path) -> None:
    result = run_toolkit("check", "--recipe-dir", str(tmp_path), str(tmp_path))
    assert result.returncode == 2
    assert result.stderr == (
        f"error: {tmp_path}: no meta.yaml or recipe.yaml here; "
        "pass --recipe-dir pointing at the recipe\n"
    )


# ------------------------------------------------------------------ --version


def test_version_names_the_recipe_version_and_the_git_revision() -> None:
    result = run_toolkit("--version")
    assert result.returncode == 0, result.stderr
    meta = (ROOT / "recipe" / "meta.yaml").read_text()
    version = re.search(r'set version = "([^"]+)"', meta).group(1)
    recipe_line, toolkit_line = result.stdout.splitlines()
    assert recipe_line.startswith(f"recipe: pytorch {version}, build ")
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    if head.returncode == 0:
        assert toolkit_line.startswith(f"toolkit: git {head.stdout.strip()}")
    else:
        assert toolkit_line.startswith("toolkit: git revision unknown")


def _committed_copy(tmp_path: Path) -> Path:
    """The toolkit, build-locally.py and the recipe in a git repository of their own."""
    root = tmp_path / "feedstock"
    shutil.copytree(ROOT / "tools", root / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "recipe", root / "recipe")
    for name in ("build-locally.py", "conda-forge.yml"):
        shutil.copy2(ROOT / name, root / name)
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "copy"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    return root


def _toolkit_line(root: Path) -> str:
    result = run_by_path(str(root / "tools"), "--version", cwd=root)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()[1]


def test_version_is_not_dirty_when_only_the_recipe_was_edited(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = _committed_copy(tmp_path)
    assert "uncommitted" not in _toolkit_line(root)
    with (root / "recipe" / "meta.yaml").open("a") as meta:
        meta.write("# a maintainer's edit\n")
    assert "uncommitted" not in _toolkit_line(root)


@pytest.mark.parametrize("edited", ["tools/foundation/log.py", "build-locally.py"])
def test_version_is_dirty_when_the_toolkit_itself_was_edited(tmp_path: Path, edited: str) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = _committed_copy(tmp_path)
    with (root / edited).open("a") as source:
        source.write("# an edit\n")
    assert " + uncommitted changes " in _toolkit_line(root)


# ------------------------------------------------------------------ where to run it


def test_readme_and_help_say_the_same_about_where_to_run_the_toolkit() -> None:
    readme = _words((ROOT / "README.md").read_text())
    assert _words(WHERE_TO_RUN) in readme
    assert _words(WHERE_TO_RUN) in _words(run_toolkit("--help").stdout)
    assert "works from any directory inside the repository" not in readme


def test_python_m_tools_needs_the_repository_root() -> None:
    # Python's -m looks in the current directory; from recipe/ there is no `tools`.
    result = run_toolkit("--version", cwd=ROOT / "recipe")
    assert result.returncode != 0 and "No module named tools" in result.stderr


def test_running_the_toolkit_by_path_works_from_a_subdirectory() -> None:
    recipe = ROOT / "recipe"
    result = run_by_path("../tools", "explain", "--filter", PLATFORM_GLOB, "--json", cwd=recipe)
    assert result.returncode == 0, result.stderr
    assert {job["platform"] for job in json.loads(result.stdout)} == {ONE_CONFIG.platform}


def test_running_the_toolkit_by_path_works_from_outside_the_repository(tmp_path: Path) -> None:
    result = run_by_path(str(ROOT / "tools"), "render", ONE, "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert {o["subdir"] for o in json.loads(result.stdout)} >= {ONE_CONFIG.platform}
