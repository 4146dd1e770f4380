"""What every command promises: --help with its exit status, --json where it prints data,
--recipe-dir where it reads the recipe, --version, and where it can be run from."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from fixtures import feedstock_matrix
from fixtures.cli import run_tools
from fixtures.forge_lines import set_forge_line

from tools.__main__ import COMMANDS, WHERE_TO_RUN

ROOT = Path(__file__).resolve().parent.parent
# The config these tests name, read from .ci_support: a CPU one where the matrix has one (the
# fastest to render; conda-forge's first is linux-64), and the glob of its platform.
_ONE = feedstock_matrix.prefer({"cuda": False}, {})
ONE = _ONE.name if _ONE else "no-config-in-ci-support"
PLATFORM_GLOB = f"{_ONE.prefix}_*" if _ONE else "none_*"


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


@pytest.mark.parametrize("command", ["render", "matrix", "explain", "check", "drift", "bump"])
def test_every_command_that_reads_the_recipe_takes_recipe_dir(command: str) -> None:
    assert "--recipe-dir DIR" in _tools(command, "--help").stdout


# ------------------------------------------------------------------ --json


def test_explain_json_has_one_object_per_config_matching_the_filter() -> None:
    result = _tools("explain", "--filter", PLATFORM_GLOB, "--json")
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
    config = feedstock_matrix.find(cuda=True)
    several = len({c.cuda for c in feedstock_matrix.configs()}) > 1
    if config is not None and several:  # the jobs split on the CUDA version, and name it
        (cuda,) = [j for j in document["jobs"] if j["name"] == config.name]
        assert cuda["split"]["cuda_compiler_version"] == config.cuda
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
    result = _by_path(str(root / "tools"), "--version", cwd=root)
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
    assert _words(WHERE_TO_RUN) in _words(_tools("--help").stdout)
    assert "works from any directory inside the repository" not in readme


def test_python_m_tools_needs_the_repository_root() -> None:
    # Python's -m looks in the current directory; from recipe/ there is no `tools`.
    result = _tools("--version", cwd=ROOT / "recipe")
    assert result.returncode != 0 and "No module named tools" in result.stderr


def test_running_the_toolkit_by_path_works_from_a_subdirectory() -> None:
    recipe = ROOT / "recipe"
    result = _by_path("../tools", "explain", "--filter", PLATFORM_GLOB, "--json", cwd=recipe)
    assert result.returncode == 0, result.stderr
    assert {job["platform"] for job in json.loads(result.stdout)} == {_ONE.platform}


def test_running_the_toolkit_by_path_works_from_outside_the_repository(tmp_path: Path) -> None:
    result = _by_path(str(ROOT / "tools"), "render", ONE, "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert {o["subdir"] for o in json.loads(result.stdout)} >= {_ONE.platform}


# ------------------------------------------------------------------ one rule for messages
# README: an error is one line starting `error:` and exits 2 (a refused command line is
# followed by that command's usage); "checked and found problems" exits 1 and ends in one
# line starting `problems:`, never `error:`.

BUILD_LOCALLY = ROOT / "build-locally.py"


def _build_locally(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BUILD_LOCALLY), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unknown_option_is_an_error_line_then_that_commands_usage(command: str) -> None:
    result = _tools(command, "--bogus")
    assert result.returncode == 2
    # A command with a required argument reports that one first; either way, its usage.
    first, usage = result.stderr.splitlines()
    assert first in (
        "error: unrecognized arguments: --bogus",
        "error: the following arguments are required: PATH",
        "error: the following arguments are required: --arch",
        "error: the following arguments are required: VERSION",
        "error: the following arguments are required: SUBCOMMAND",
    )
    assert usage.startswith(f"usage: python -m tools {command} [-h]")


def test_a_missing_argument_is_an_error_line_then_that_commands_usage() -> None:
    result = _tools("check")
    assert result.returncode == 2
    first, usage = result.stderr.splitlines()
    assert first == "error: the following arguments are required: PATH"
    assert usage.startswith("usage: python -m tools check [-h]")


def test_an_unknown_command_is_an_error_line_then_the_top_level_usage() -> None:
    result = _tools("bogus")
    assert result.returncode == 2
    first, usage = result.stderr.splitlines()
    assert first.startswith("error: argument COMMAND: invalid choice: 'bogus'")
    assert usage.startswith("usage: python -m tools [-h] [--version] COMMAND")


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["two.fifteen"], "VERSION 'two.fifteen' is not a version (like 2.15.0)"),
        (["0.1"], "bump does not go back to 0.1"),
        (["99.0.0", "--source", "/nonexistent/pytorch.tar.gz"], "no such file"),
        (
            ["99.0.0", "--source", "http://127.0.0.1:9/p.tar.gz", "--pinning", "/p"],
            "then run python -m tools bump 99.0.0 --source pytorch-v99.0.0.tar.gz --pinning /p",
        ),
        (["99.0.0", "--source", "{tmp}/pytorch-v99.0.0.tar.gz"], "not a readable tar archive"),
        (["99.0.0", "--wheel", "/nonexistent.whl"], "no such wheel file"),
    ],
    ids=["not-a-version", "backwards", "no-source", "no-network", "not-an-archive", "no-wheel"],
)
def test_bump_refuses_bad_input_with_one_error_line(
    argv: list[str], fragment: str, tmp_path: Path
) -> None:
    # Every refusal comes before a write: the repository's recipe is the one on trial.
    before = (ROOT / "recipe" / "meta.yaml").read_bytes()
    (tmp_path / "pytorch-v99.0.0.tar.gz").write_text("not an archive\n")
    result = _tools("bump", *(a.replace("{tmp}", str(tmp_path)) for a in argv))
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and fragment in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert (ROOT / "recipe" / "meta.yaml").read_bytes() == before


@pytest.mark.parametrize(
    "argv",
    [["--bogus"], ["--engine"], ["--merge", "d"], ["--verify", ".", "--commit", "abc1234"]],
    ids=["unknown", "engine-no-value", "moved-merge", "moved-verify"],
)
def test_build_locally_refuses_a_command_line_with_an_error_line(argv: list[str]) -> None:
    result = _build_locally(*argv)
    assert result.returncode == 2
    assert result.stderr.startswith("error: "), result.stderr


def test_review_verify_refuses_a_commit_that_is_not_a_sha_with_an_error_line() -> None:
    result = _tools("review", "verify", ".", "--commit", "HEAD")
    assert result.returncode == 2
    error, usage = result.stderr.splitlines()
    assert error.startswith("error: argument --commit: 'HEAD': expected a git commit sha")
    assert usage.startswith("usage: python -m tools review verify")


def _tiny_failing_package(folder: Path) -> Path:
    """A package one check must fail: a member climbing out with '..'."""
    folder.mkdir()
    index = {
        "name": "libtorch",
        "version": "2.13.0",
        "build": "cpu_0",
        "build_number": 0,
        "subdir": "linux-64",
        "depends": [],
    }
    with tarfile.open(folder / "libtorch-2.13.0-cpu_0.tar.bz2", "w:bz2") as tar:
        for name, data in (("info/index.json", json.dumps(index).encode()), ("../x", b"x")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return folder


def _assert_problems(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 1, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert not [line for line in lines if line.startswith("error")], result.stderr
    assert lines[-1].startswith("problems: "), result.stderr


def test_check_that_finds_problems_ends_in_a_problems_line(tmp_path: Path) -> None:
    _assert_problems(_tools("check", _tiny_failing_package(tmp_path / "pkgs")))


def test_drift_check_with_a_conflict_ends_in_a_problems_line(tmp_path: Path) -> None:
    source = tmp_path / "src"
    shutil.copytree(ROOT / "tests" / "fixtures" / "drift" / "pytorch-src", source)
    requirements = source / "requirements.txt"
    text = requirements.read_text()
    assert "sympy>=1.13.3" in text
    requirements.write_text(text.replace("sympy>=1.13.3", "sympy<1.0"))
    result = _tools("drift", "--source", source, "--config", ONE, "--offline", "--check")
    _assert_problems(result)
    assert result.stderr.splitlines()[-1].endswith(": sympy")


def test_matrix_check_with_a_stale_file_ends_in_a_problems_line(
    tmp_path: Path, pinning_dir: Path
) -> None:
    root = tmp_path / "feedstock"
    for name in ("recipe", ".ci_support"):
        shutil.copytree(ROOT / name, root / name)
    shutil.copy2(ROOT / "conda-forge.yml", root / "conda-forge.yml")
    (root / ".ci_support" / "linux_64_stale.yaml").write_text("target_platform:\n- linux-64\n")
    result = run_tools(
        "matrix", "--pinning", pinning_dir, "--check", cwd=root, env=_with_toolkit_on_path()
    )
    _assert_problems(result)
    assert "stale: .ci_support/linux_64_stale.yaml" in result.stdout


def _with_toolkit_on_path() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


# ------------------------------------------------------------------ conda-forge.yml, one loader


def _feedstock(tmp_path: Path) -> Path:
    """This repository's recipe, variant files, conda-forge.yml and build-locally.py, to damage
    (the toolkit stays where it is, on PYTHONPATH)."""
    root = tmp_path / "feedstock"
    for name in ("recipe", ".ci_support"):
        shutil.copytree(ROOT / name, root / name)
    for name in ("conda-forge.yml", "build-locally.py", "README.md"):
        shutil.copy2(ROOT / name, root / name)
    return root


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _in(root: Path, *argv: str | Path) -> subprocess.CompletedProcess[str]:
    if argv[0] == "build-locally.py":
        return subprocess.run(
            [sys.executable, str(root / "build-locally.py"), *map(str, argv[1:])],
            cwd=root,
            env=_with_toolkit_on_path(),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    return run_tools(*argv, cwd=root, env=_with_toolkit_on_path())


def _one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, result.stderr
    return lines[0]


FORGE_READERS = {
    "render": ["render", ONE],
    "explain": ["explain"],
    "matrix-check": ["matrix", "--pinning", "PINNING", "--check"],
    "runners": ["runners"],
    "build-locally-list": ["build-locally.py", "--list"],
}


@pytest.mark.parametrize("argv", FORGE_READERS.values(), ids=FORGE_READERS)
def test_every_command_refuses_a_conda_forge_yml_typo_the_same_way(
    tmp_path: Path, pinning_dir: Path, argv: list[str]
) -> None:
    root = _feedstock(tmp_path)
    forge = root / "conda-forge.yml"
    _edit(forge, "conda_build_tool: conda-build", "conda_build_tool: rattler_build")
    number = forge.read_text().splitlines().index("conda_build_tool: rattler_build") + 1
    result = _in(root, *[str(pinning_dir) if a == "PINNING" else a for a in argv])
    assert _one_error_line(result) == (
        f"error: {forge}:{number}: conda_build_tool: 'rattler_build' is not a valid value; "
        "did you mean 'rattler-build'?"
    )


def test_matrix_write_with_a_build_platform_typo_writes_and_deletes_nothing(
    tmp_path: Path, pinning_dir: Path
) -> None:
    root = _feedstock(tmp_path)
    # the line written whatever the feedstock's file has: a fork's that builds linux-64 alone
    # may have no build_platform section, or one without linux_aarch64
    set_forge_line(root / "conda-forge.yml", "build_platform", "linux_aarch64", "linux64")
    before = sorted(p.name for p in (root / ".ci_support").iterdir())
    result = _in(root, "matrix", "--pinning", pinning_dir, "--write")
    line = _one_error_line(result)
    assert "build_platform.linux_aarch64: 'linux64' is not a valid value; did you mean" in line
    assert "'linux_64'" in line and "linux-64" not in line
    assert sorted(p.name for p in (root / ".ci_support").iterdir()) == before


def test_version_of_a_recipe_whose_version_cannot_be_read_names_the_line(tmp_path: Path) -> None:
    root = _feedstock(tmp_path)
    meta = root / "recipe" / "meta.yaml"
    _edit(meta, '{% set version = "', "{% set version = ")  # the quotes and the jinja broken
    number = next(
        n for n, line in enumerate(meta.read_text().splitlines(), 1) if "set version" in line
    )
    _edit(meta, "%}", "%")
    result = _by_path(str(ROOT / "tools"), "--version", cwd=root)
    assert _one_error_line(result) == (
        f"error: {meta}:{number}: cannot read the version here; write it as "
        '{% set version = "..." %}'
    )
    assert result.stdout == ""


def test_a_variant_file_path_that_does_not_exist_is_no_such_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    result = _tools("render", str(missing))
    assert _one_error_line(result).startswith(f"error: {missing}: no such file; ")
    assert "closest" not in result.stderr


def test_version_of_a_switched_recipe_that_is_not_yaml_names_the_line(tmp_path: Path) -> None:
    root = _feedstock(tmp_path)
    (root / "recipe" / "meta.yaml").unlink()
    recipe = root / "recipe" / "recipe.yaml"
    (root / "recipe" / "recipe-v1.yaml").rename(recipe)
    lines = recipe.read_text().splitlines(keepends=True)
    lines[3] = "context: [\n"
    recipe.write_text("".join(lines))
    result = _by_path(str(ROOT / "tools"), "--version", cwd=root)
    assert _one_error_line(result).startswith(f"error: {recipe}:")
    assert "not valid YAML" in result.stderr
