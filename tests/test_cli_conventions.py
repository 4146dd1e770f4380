"""What every command promises: --help with its exit status, --json where it prints data,
--recipe-dir where it reads the recipe, --version, and where it can be run from."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.cli import run_tools

from tools.__main__ import COMMANDS, WHERE_TO_RUN

ROOT = Path(__file__).resolve().parent.parent


def _tools(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return run_tools(*args, cwd=cwd)


def _by_path(tools: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python <repository>/tools ...``, as README and --help tell people to run it."""
    return subprocess.run(
        [sys.executable, tools, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _words(text: str) -> str:
    return " ".join(text.split())


# ------------------------------------------------------------------ --help


@pytest.mark.parametrize("command", COMMANDS)
def test_every_commands_help_has_an_exit_status_paragraph(command: str) -> None:
    result = _tools(command, "--help")
    assert result.returncode == 0, result.stderr
    assert re.search(r"^exit status: 0 ", result.stdout, re.MULTILINE), result.stdout


def test_top_level_and_build_locally_help_have_an_exit_status_paragraph() -> None:
    assert "\nexit status: 0 " in _tools("--help").stdout
    build = subprocess.run(
        [sys.executable, str(ROOT / "build-locally.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "\nexit status: 0 " in build.stdout


def test_emulate_usage_line_names_every_option_it_has() -> None:
    help_text = _tools("emulate", "--help").stdout
    usage = _words(help_text.split("\n\n", 1)[0])
    options = set(re.findall(r"^\s+(--[a-z-]+)", help_text, re.MULTILINE))
    assert options >= {"--arch", "--cpu", "--timeout", "--index-url"}
    assert [o for o in sorted(options) if o not in usage] == []


@pytest.mark.parametrize("command", ["render", "matrix", "explain", "check", "drift"])
def test_every_command_that_reads_the_recipe_takes_recipe_dir(command: str) -> None:
    assert "--recipe-dir DIR" in _tools(command, "--help").stdout


# ------------------------------------------------------------------ --json


def test_explain_json_has_one_object_per_config_matching_the_filter() -> None:
    result = _tools("explain", "--filter", "osx_*", "--json")
    assert result.returncode == 0, result.stderr
    jobs = json.loads(result.stdout)
    expected = sorted(p.name[:-5] for p in (ROOT / ".ci_support").glob("osx_*.yaml"))
    assert [job["config"] for job in jobs] == expected
    for job in jobs:
        assert set(job) == {
            "config",
            "label",
            "platform",
            "build_platform",
            "cross",
            "cuda",
            "blas",
            "pythons",
            "packages",
        }
        assert job["cuda"] is None
        assert job["cross"] is (job["build_platform"] != job["platform"])
        assert {p["name"] for p in job["packages"]} == {"libtorch", "pytorch", "pytorch-cpu"}
        assert next(p for p in job["packages"] if p["name"] == "pytorch")["count"] == len(
            job["pythons"]
        )


def test_explain_fits_a_terminal_and_names_configs_by_label() -> None:
    from tools.selection import read_labels

    result = _tools("explain")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100
    names = sorted(p.stem for p in (ROOT / ".ci_support").glob("*.yaml"))
    labels = read_labels(ROOT / ".ci_support", names)
    rows = [line for line in lines[1:] if not line.startswith(" ")]
    assert [row.split("  ")[0] for row in rows] == [labels[n] for n in names]


def test_explain_filter_matching_nothing_is_an_error() -> None:
    result = _tools("explain", "--filter", "solaris_*")
    assert result.returncode == 2
    assert result.stderr.startswith("error: --filter 'solaris_*' matches none of the")


def test_matrix_json_lists_the_jobs_with_their_split_keys(pinning_dir: Path) -> None:
    result = _tools("matrix", "--pinning", str(pinning_dir), "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    names = sorted(p.name[:-5] for p in (ROOT / ".ci_support").glob("*.yaml"))
    assert sorted(job["name"] for job in document["jobs"]) == names
    cuda = next(j for j in document["jobs"] if "cuda_compiler_version12.9" in j["name"])
    assert cuda["split"]["cuda_compiler_version"] == "12.9"
    assert document["closed_migrations"] == []


def test_matrix_json_with_check_reports_the_differences(pinning_dir: Path) -> None:
    result = _tools("matrix", "--pinning", str(pinning_dir), "--json", "--check")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["differences"] == []


# ------------------------------------------------------------------ --recipe-dir


def test_check_recipe_dir_without_a_recipe_is_an_error(tmp_path: Path) -> None:
    result = _tools("check", "--recipe-dir", str(tmp_path), str(tmp_path))
    assert result.returncode == 2
    assert result.stderr == (
        f"error: {tmp_path}: no meta.yaml or recipe.yaml here; "
        "pass --recipe-dir pointing at the recipe\n"
    )


# ------------------------------------------------------------------ --version


def test_version_names_the_recipe_version_and_the_git_revision() -> None:
    result = _tools("--version")
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


# ------------------------------------------------------------------ where to run it


def test_readme_and_help_say_the_same_about_where_to_run_the_toolkit() -> None:
    readme = _words((ROOT / "README.md").read_text())
    assert _words(WHERE_TO_RUN) in readme
    assert _words(WHERE_TO_RUN) in _words(_tools("--help").stdout)
    assert "works from any directory inside the repository" not in readme


def test_python_m_tools_needs_the_repository_root() -> None:
    # Python's -m looks in the current directory; from recipe/ there is no `tools`.
    result = _tools("--version", cwd=ROOT / "recipe")
    assert result.returncode != 0 and "No module named tools" in result.stderr


def test_running_the_toolkit_by_path_works_from_a_subdirectory() -> None:
    recipe = ROOT / "recipe"
    result = _by_path("../tools", "explain", "--filter", "osx_arm64_*", "--json", cwd=recipe)
    assert result.returncode == 0, result.stderr
    assert [job["platform"] for job in json.loads(result.stdout)] == ["osx-arm64"]


def test_running_the_toolkit_by_path_works_from_outside_the_repository(tmp_path: Path) -> None:
    result = _by_path(str(ROOT / "tools"), "render", "osx_arm64", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert {o["subdir"] for o in json.loads(result.stdout)} >= {"osx-arm64"}
