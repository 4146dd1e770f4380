"""CUDA packages built without tests, then tested on a GPU machine (test_built_packages.sh).

The build half runs through build-locally.py and the fake engine like every e2e
test; the test half runs the repository's script against the same fake engine,
which runs it "in the container" with the stand-in conda-build.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers.fake_engine_feedstock import CPU, CUDA, Feedstock

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="drives bash scripts through the fake engine (POSIX only)"
)

IMAGE = "quay.io/condaforge/linux-anvil-x86_64:alma10"


def test_script(fs: Feedstock, config: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(fs.root / ".scripts" / "test_built_packages.sh")],
        cwd=fs.root,
        env={**fs.env, "CONFIG": config, "DOCKER_IMAGE": IMAGE, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


test_script.__test__ = False  # a helper, not a test


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Feedstock:
    """The CUDA config built the way build.yml's job does when a GPU runner tests it."""
    fs = Feedstock(tmp_path_factory.mktemp("gpu"))
    run = fs.run(CUDA, CONDA_FORGE_DOCKER_RUN_ARGS="-e EXTRA_CB_OPTIONS=--no-test")
    assert run.returncode == 0, run.stderr
    return fs


def test_the_build_job_skips_the_tests_when_asked_through_extra_cb_options(built) -> None:
    [build] = built.builds()
    assert "--no-test" in build["argv"]


def test_without_extra_cb_options_the_tests_run_where_the_build_ran(tmp_path) -> None:
    fs = Feedstock(tmp_path)
    assert fs.run(CUDA).returncode == 0
    [build] = fs.builds()
    assert "--no-test" not in build["argv"]


def test_gpu_tests_run_every_built_package_in_the_container_with_all_gpus(built) -> None:
    result = test_script(built, CUDA)
    assert result.returncode == 0, result.stderr
    [run] = [c for c in built.calls("run") if "test_built_packages.sh" in " ".join(c["command"])]
    assert run["image"] == IMAGE
    assert run["argv"][run["argv"].index("--gpus") + 1] == "all"
    tested = sorted(
        b["argv"][b["argv"].index("--test") + 1].rsplit("/", 1)[-1]
        for b in built.builds()
        if "--test" in b["argv"]
    )
    assert tested == sorted(p.name for p in (built.artifacts / "linux-64").glob("*.conda"))


def test_gpu_test_output_lands_in_a_log_that_log_files_zip_picks_up(built) -> None:
    assert test_script(built, CUDA).returncode == 0
    log = (built.artifacts / f"{CUDA}-gpu-test-log.txt").read_text()
    assert "TEST END: libtorch-2.13.0" in log
    assert log.rstrip().endswith("passed their tests")


def test_a_failing_package_fails_the_gpu_job_and_is_named(built) -> None:
    result = test_script(built, CUDA, FAKE_TEST_FAIL="pytorch-*")
    assert result.returncode == 1
    assert "error: tests failed for pytorch-2.13.0-" in result.stdout + result.stderr


def test_a_config_that_did_not_build_is_refused_before_starting_a_container(built) -> None:
    result = test_script(built, CPU)
    assert result.returncode == 1
    assert f"conda-forge-build-done-{CPU} is missing" in result.stderr
    assert not [c for c in built.calls("run") if c["container_env"].get("CONFIG") == CPU]
