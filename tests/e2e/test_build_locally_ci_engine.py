"""Packages for conda-forge come from the engine conda-forge's CI builds with, or say so (issue 44).

conda-forge's CI builds this feedstock in its container with conda-forge.yml's
``conda_build_tool``. Without a container engine, build-locally falls back to the conda-build on
PATH (here: the fake one of tests/fixtures/fake_docker/container_bin, which writes real .conda
packages) or the embedded rattler-build: fine for a person's own build, but those packages are
not what CI would have built. The batch says so first, each record names its engine and recipe
file, and the commands that hand packages to conda-forge refuse them unless told otherwise.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from helpers.e2e_feedstock import without_engines
from helpers.fake_engine_feedstock import CPU, FAKE_DOCKER, Feedstock, git_in, rattler_feedstock

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="drives bash scripts (POSIX)")

CONDA_BUILD_ON_PATH = FAKE_DOCKER.parent / "container_bin"


def _without_docker(fs: Feedstock) -> str:
    """A machine with the conda-build on PATH and no container engine."""
    for engine in ("docker", "podman"):
        (fs.bin / engine).unlink()
    return f"{CONDA_BUILD_ON_PATH}{os.pathsep}{without_engines(os.environ['PATH'])}"


@pytest.fixture(scope="module")
def native(tmp_path_factory) -> tuple[Feedstock, str]:
    """One config built by the ladder's conda-build rung: no container, so not CI's engine."""
    fs = Feedstock(tmp_path_factory.mktemp("native"))
    path = _without_docker(fs)
    run = fs.run(CPU, PATH=path)
    assert run.returncode == 0, run.stderr
    return fs, run.stderr


@pytest.fixture(scope="module")
def container(tmp_path_factory) -> tuple[Feedstock, str]:
    """The same config built in the (fake) conda-forge container."""
    fs = Feedstock(tmp_path_factory.mktemp("container"))
    run = fs.run(CPU)
    assert run.returncode == 0, run.stderr
    return fs, run.stderr


def test_a_batch_outside_the_container_says_first_that_it_is_not_conda_forges_engine(
    native,
) -> None:
    _, stderr = native
    first = stderr.splitlines()[0]
    assert first.startswith("engine: conda-build on PATH, no container"), first
    assert "NOT conda-forge's CI engine" in first
    assert "container with conda-build, recipe/meta.yaml" in first
    assert "--allow-other-engine" in first


def test_a_batch_in_the_container_says_nothing_more_of_its_engine(container) -> None:
    _, stderr = container
    first = stderr.splitlines()[0]
    assert first.startswith("engine: docker") and "NOT conda-forge's" not in first, first


def test_each_record_names_its_engine_and_recipe_file(native, container) -> None:
    for (fs, _), engine, ours in ((native, "conda-build (no container)", False),
                                  (container, "docker ", True)):  # fmt: skip
        source = fs.summary()["configs"][CPU]["provenance"]
        assert source["engine"].startswith(engine), source
        assert source["recipe_file"] == "recipe/meta.yaml"
        assert source["ci_engine"] is ours
        log = (fs.artifacts / f"{CPU}-log.txt").read_text()
        assert "recipe file" in log and "recipe/meta.yaml" in log


def test_cfep3_request_refuses_packages_of_another_engine_in_one_line(native) -> None:
    fs, _ = native
    run = fs.review("request", "jdoe/label/cfep03")
    assert run.returncode == 1 and run.stdout == "", run.stdout
    [line] = run.stderr.splitlines()
    assert line.startswith("problems: review request: 1 config(s) not built as conda-forge's CI")
    assert "(conda-build, recipe/meta.yaml)" in line
    assert f"python build-locally.py --engine docker --force {CPU}" in line
    assert "--allow-other-engine" in line


def test_cfep3_request_with_the_override_states_it_in_the_request(native) -> None:
    fs, _ = native
    run = fs.review("request", "jdoe/label/cfep03", "--allow-other-engine")
    assert run.returncode == 0, run.stderr
    head = run.stdout.splitlines()
    assert head[0].startswith("# --allow-other-engine: 1 config(s) NOT built as conda-forge's")
    assert head[1] == f"#   {CPU}: conda-build, recipe/meta.yaml"
    assert "action: cfep3_copy" in run.stdout


def test_cfep3_request_takes_the_containers_packages_without_a_word(container) -> None:
    fs, _ = container
    run = fs.review("request", "jdoe/label/cfep03")
    assert run.returncode == 0, run.stderr
    assert "--allow-other-engine" not in run.stdout and "action: cfep3_copy" in run.stdout


def test_a_record_of_another_recipe_than_the_feedstocks_is_refused(tmp_path: Path) -> None:
    # Built in the container from meta.yaml; the feedstock then switched to rattler-build, so
    # CI now builds recipe/recipe.yaml and these packages are not what it would upload.
    fs = Feedstock(tmp_path)
    assert fs.run(CPU).returncode == 0
    fs.set_forge_config("rattler-build")
    run = fs.review("request", "jdoe/label/cfep03")
    assert run.returncode == 1, run.stdout
    assert "container with rattler-build, recipe/recipe.yaml" in run.stderr
    assert "(docker" in run.stderr and "recipe/meta.yaml)" in run.stderr


def test_verify_takes_a_switched_feedstocks_batch_from_the_containers_rattler_build(
    tmp_path: Path,
) -> None:
    # The other side of the refusal above: switched to rattler-build, CI builds recipe.yaml
    # in its container with rattler-build, and a batch built so is CI's engine's.
    fs = rattler_feedstock(tmp_path)
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "switched")):
        git_in(fs, *args)  # a checkout: the build embeds its commit
    assert fs.run(CPU).returncode == 0
    source = fs.summary()["configs"][CPU]["provenance"]
    assert (source["recipe_file"], source["ci_engine"]) == ("recipe/recipe.yaml", True)
    run = fs.review("verify", "build_artifacts")
    lines = run.stdout.splitlines()
    assert [line for line in lines if "engine" in line and not line.startswith("ok")] == []
    assert not any("--allow-other-engine" in line for line in lines), run.stdout


def test_verify_refuses_packages_of_another_engine_unless_told(native) -> None:
    fs, _ = native
    run = fs.review("verify", "build_artifacts")
    assert run.returncode == 1
    [engine] = [line for line in run.stdout.splitlines() if line.startswith("FAIL engine:")]
    assert f"--engine docker --force {CPU}" in engine
    allowed = fs.review("verify", "build_artifacts", "--allow-other-engine")
    assert not any(line.startswith("FAIL engine:") for line in allowed.stdout.splitlines())
    assert any(line.startswith("NOTE --allow-other-engine") for line in allowed.stdout.splitlines())


def test_merge_refuses_another_engines_folder_before_copying_anything(
    native, tmp_path: Path
) -> None:
    fs, _ = native
    theirs = Path(shutil.copytree(fs.artifacts, tmp_path / "theirs"))
    ours = Feedstock(tmp_path / "ours")
    run = ours.review("merge", str(theirs))
    assert run.returncode == 1, run.stderr
    [line] = run.stderr.splitlines()
    assert line.startswith("problems: review merge: 1 config(s) not built as conda-forge's CI")
    assert not ours.artifacts.exists() or not list(ours.artifacts.rglob("*.conda"))
    allowed = ours.review("merge", str(theirs), "--allow-other-engine")
    assert allowed.returncode == 0, allowed.stderr
    assert list(ours.artifacts.rglob("*.conda"))


def test_the_override_on_a_build_is_refused_in_one_line_naming_the_review(container) -> None:
    fs, _ = container
    run = fs.run(CPU, "--allow-other-engine")
    assert run.returncode == 2
    [line] = run.stderr.splitlines()
    assert line.startswith("error: build-locally.py --allow-other-engine: moved to `python -m")
