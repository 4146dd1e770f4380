"""What every command promises about its messages: a refused command line is an error line and
that command's usage, found problems end in a `problems:` line, and conda-forge.yml is read by
one loader that every command refuses a typo of the same way."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from helpers.cli import run_tools
from helpers.cli_conventions import ONE, ROOT, run_by_path, run_toolkit
from helpers.forge_lines import set_forge_line
from helpers.in_process import run_python

from tools.__main__ import COMMANDS


def _words(text: str) -> str:
    return " ".join(text.split())


# ------------------------------------------------------------------ one rule for messages
# README: an error is one line starting `error:` and exits 2 (a refused command line is
# followed by that command's usage); "checked and found problems" exits 1 and ends in one
# line starting `problems:`, never `error:`.

BUILD_LOCALLY = ROOT / "build-locally.py"


def _build_locally(*args: str) -> subprocess.CompletedProcess[str]:
    return run_python([sys.executable, BUILD_LOCALLY, *args], cwd=ROOT, timeout=120)


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unknown_option_is_an_error_line_then_that_commands_usage(command: str) -> None:
    result = run_toolkit(command, "--bogus")
    assert result.returncode == 2
    # A command with a required argument reports that one first; either way, its usage.
    first, usage = result.stderr.splitlines()
    assert first in (
        "error: unrecognized arguments: --bogus",
        "error: the following arguments are required: PATH",
        "error: the following arguments are required: --arch",
        "error: the following arguments are required: VERSION",
        "error: the following arguments are required: --to",
        "error: the following arguments are required: SUBCOMMAND",
    )
    assert usage.startswith(f"usage: python -m tools {command} [-h]")


def test_a_missing_argument_is_an_error_line_then_that_commands_usage() -> None:
    result = run_toolkit("check")
    assert result.returncode == 2
    first, usage = result.stderr.splitlines()
    assert first == "error: the following arguments are required: PATH"
    assert usage.startswith("usage: python -m tools check [-h]")


def test_an_unknown_command_is_an_error_line_then_the_top_level_usage() -> None:
    result = run_toolkit("bogus")
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
    result = run_toolkit("bump", *(a.replace("{tmp}", str(tmp_path)) for a in argv))
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
    result = run_toolkit("review", "verify", ".", "--commit", "HEAD")
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
    _assert_problems(run_toolkit("check", _tiny_failing_package(tmp_path / "pkgs")))


def test_drift_check_with_a_conflict_ends_in_a_problems_line(tmp_path: Path) -> None:
    source = tmp_path / "src"
    shutil.copytree(ROOT / "tests" / "fixtures" / "drift" / "pytorch-src", source)
    requirements = source / "requirements.txt"
    text = requirements.read_text()
    assert "sympy>=1.13.3" in text
    requirements.write_text(text.replace("sympy>=1.13.3", "sympy<1.0"))
    result = run_toolkit("drift", "--source", source, "--config", ONE, "--offline", "--check")
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
        argv = (sys.executable, root / "build-locally.py", *argv[1:])
        return run_python(argv, cwd=root, env=_with_toolkit_on_path())
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
    result = run_by_path(str(ROOT / "tools"), "--version", cwd=root)
    assert _one_error_line(result) == (
        f"error: {meta}:{number}: cannot read the version here; write it as "
        '{% set version = "..." %}'
    )
    assert result.stdout == ""


def test_a_variant_file_path_that_does_not_exist_is_no_such_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    result = run_toolkit("render", str(missing))
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
    result = run_by_path(str(ROOT / "tools"), "--version", cwd=root)
    assert _one_error_line(result).startswith(f"error: {recipe}:")
    assert "not valid YAML" in result.stderr
