"""docs/fork.md, run: every command of the walk-through, in order, on a copy of this feedstock.

The copy holds the repository's tracked files (tests/ aside) committed in a fresh git
repository; the doc's diff is applied as printed, `matrix --write` reads the reference pinning
(as it reads $CONDA_PREFIX's in a conda environment), and the builds use the fake container
engine and the fake conda-build of tests/fixtures/fake_docker. Their packages are not
PyTorch, so `--verify` and `--publish` must refuse them for `tools check`'s findings and for
nothing else; tests/e2e/test_build_locally_publish.py publishes a batch that passes and installs
from it over HTTP.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import feedstock_matrix
from helpers.fake_engine_feedstock import install_fake_engine

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="drives bash scripts (POSIX)")

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "fork.md"
FAKE_DOCKER = REPO / "tests" / "fixtures" / "fake_docker" / "docker"
CONTAINER_BIN = FAKE_DOCKER.parent / "container_bin"
LAB_CONFIG = "linux_64_channel_targetssmithlab_mainis_rcFalse"
TOKEN = "lab-3f9a0c27e1d4"
# What a refusal may blame on the fake packages: `tools check` on the real recipe's config.
TOOLS_CHECK_ONLY = re.compile(
    rf"NOT verified: (\d+) problem\(s\) .* first: linux-64 cuda13\.0 mkl: `tools check "
    rf"--config {LAB_CONFIG}` failed: .*; the upload holds 1 of 1 configs built"
)


def fenced(kind: str) -> list[str]:
    """The bodies of the doc's ```KIND blocks, in order."""
    return re.findall(rf"^```{kind}\n(.*?)^```$", DOC.read_text(), flags=re.M | re.S)


def commands() -> list[str]:
    return [line for block in fenced("bash") for line in block.splitlines() if line.strip()]


@dataclass
class Ran:
    command: str
    returncode: int
    stdout: str
    stderr: str


@dataclass
class Walkthrough:
    clone: Path  # where the doc's commands ran
    native: Path  # the copy `--native` built in
    anaconda: Path  # the fake anaconda-client, which leaves <it>.called when run
    ran: dict[str, Ran]

    def of(self, *words: str) -> Ran:
        [found] = [r for c, r in self.ran.items() if all(w in c for w in words)]
        return found


@pytest.fixture(scope="module")
def walkthrough(tmp_path_factory, pinning_dir: Path) -> Walkthrough:
    if not feedstock_matrix.targets_conda_forge(REPO):
        # the doc's diff tailors conda-forge's feedstock; it does not apply to a fork's own
        pytest.skip(
            "docs/fork.md starts from conda-forge's feedstock; this one builds for "
            f"{feedstock_matrix.configs(REPO)[0].first('channel_targets')!r}"
        )
    tmp = tmp_path_factory.mktemp("lab")
    clone = tmp / "pytorch-feedstock"
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    for name in filter(None, files):
        if not name.startswith("tests/") and (REPO / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, clone / name)
    [diff] = fenced("diff")
    (tmp / "lab.diff").write_text(diff)
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    install_fake_engine(bin_dir)
    anaconda = bin_dir / "anaconda"  # must never be reached: the batch is refused before
    anaconda.write_text('#!/bin/sh\necho called > "$0.called"\nexit 0\n')
    anaconda.chmod(0o755)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CI", "GITHUB_", "DOCKER_", "CONDA_", "FAKE_", "GIT_"))
        and "TOKEN" not in k
    }
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        PYTHONPATH=str(clone),
        HOME=str(tmp / "home"),
        CONDA_PREFIX=str(pinning_dir),  # matrix reads $CONDA_PREFIX/conda_build_config.yaml
        FAKE_DOCKER_STATE=str(tmp / "engine-state"),
        GIT_AUTHOR_NAME="Lab",
        GIT_AUTHOR_EMAIL="lab@example.org",
        GIT_COMMITTER_NAME="Lab",
        GIT_COMMITTER_EMAIL="lab@example.org",
        ANACONDA_API_TOKEN=TOKEN,
    )
    git = ["git", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=clone, env=env, check=True)
    subprocess.run([*git, "add", "-A"], cwd=clone, env=env, check=True)
    subprocess.run([*git, "commit", "-qm", "the fork"], cwd=clone, env=env, check=True)

    ran: dict[str, Ran] = {}
    native = tmp / "native" / clone.name
    for command in commands():
        where, extra = clone, {}
        if "--native" in command:
            # the other way to build, from the same commit: a copy that has built nothing
            shutil.copytree(
                clone,
                native,
                symlinks=True,
                ignore=lambda folder, names: ["build_artifacts"] if folder == str(clone) else [],
            )
            where, extra = native, {"PATH": f"{CONTAINER_BIN}{os.pathsep}{env['PATH']}"}
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", command],
            cwd=where,
            env={**env, **extra},
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        ran[command] = Ran(command, done.returncode, done.stdout, done.stderr)
    return Walkthrough(clone, native, anaconda, ran)


def test_the_doc_shows_the_lab_tailoring_as_one_diff_of_about_twenty_lines() -> None:
    [diff] = fenced("diff")
    # an edited line is one `+` line (with its `-`), an added one a `+` alone
    added = [line for line in diff.splitlines() if line[:1] == "+" and line[:3] != "+++"]
    assert 15 <= len(added) <= 25
    assert set(re.findall(r"^\+\+\+ b/(\S+)", diff, flags=re.M)) == {
        "conda-forge.yml",
        "recipe/conda_build_config.yaml",
        "recipe/cuda_arch_lists.txt",
    }


def test_the_docs_diff_is_the_patch_the_tailored_clone_test_applies() -> None:
    """One tailoring: the diff the doc prints is docs/fork-tailoring.patch, the one
    tests/e2e/test_fork_clone.py applies before it runs the matrix-reading tests."""
    [diff] = fenced("diff")
    patch = (REPO / "docs" / "fork-tailoring.patch").read_text(encoding="utf-8")
    assert diff.strip() == patch[patch.index("diff --git") :].strip()


def test_every_command_of_the_doc_ran_and_did_what_the_doc_says(walkthrough) -> None:
    """One expectation per command; a command the doc gains fails here until it has one."""
    expected_to_pass = (
        "git apply",
        "matrix --write",
        "matrix --check",
        "--list",
        "git add",
        "git commit",
        "build-locally.py --all",
    )
    refused_for_the_fake_packages = ("review verify", "review publish")
    for command in commands():
        result = walkthrough.ran[command]
        if any(p in command for p in refused_for_the_fake_packages):
            assert result.returncode == 1, (command, result.stderr)
        elif any(p in command for p in expected_to_pass):
            assert result.returncode == 0, (command, result.stdout, result.stderr)
        else:
            pytest.fail(f"docs/fork.md runs {command!r}, which this test has no expectation for")


def test_the_tailored_matrix_is_the_one_lab_config(walkthrough) -> None:
    clone = walkthrough.clone
    assert sorted(p.name for p in (clone / ".ci_support").glob("*.yaml")) == [f"{LAB_CONFIG}.yaml"]
    config = (clone / ".ci_support" / f"{LAB_CONFIG}.yaml").read_text()
    assert "blas_impl:\n- mkl\n" in config and "cuda_compiler_version:\n- '13.0'\n" in config
    assert "channel_targets:\n- smithlab main\n" in config
    assert "up to date (1 CI jobs)" in walkthrough.of("matrix --check").stdout
    assert walkthrough.of("--list").stdout.split() == [
        "linux-64",
        "cuda13.0",
        "mkl",
        LAB_CONFIG,
    ]


def test_both_builds_build_the_lab_config_from_the_commit(walkthrough) -> None:
    clone = walkthrough.clone
    for root in (clone, walkthrough.native):
        assert (root / "build_artifacts" / f"conda-forge-build-done-{LAB_CONFIG}").exists()
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True, check=True
    ).stdout.strip()
    summary = (clone / "build_artifacts" / "summary.json").read_text()
    assert f'"commit": "{head}"' in summary and '"dirty": false' in summary


def test_verify_and_publish_find_only_tools_checks_findings_on_the_fake_packages(
    walkthrough,
) -> None:
    verify = walkthrough.of("review verify")
    fails = [line for line in verify.stdout.splitlines() if line.startswith("FAIL ")]
    assert fails == [
        f"FAIL linux-64 cuda13.0 mkl: `tools check --config {LAB_CONFIG}` failed: "
        + fails[0].split("failed: ", 1)[1]
    ]
    assert TOOLS_CHECK_ONLY.search(verify.stderr), verify.stderr
    for destination in ("~/channels/smithlab", "smithlab/label/main"):
        publish = walkthrough.of("review publish", destination)
        [line] = publish.stderr.splitlines()
        assert line.startswith("error: review publish: refused, build_artifacts/ is NOT verified")
        assert TOOLS_CHECK_ONLY.search(line), line
        assert TOKEN not in publish.stdout + publish.stderr
    assert not (walkthrough.clone.parent / "home" / "channels").exists()
    assert not walkthrough.anaconda.with_name("anaconda.called").exists()
