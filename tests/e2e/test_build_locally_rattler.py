"""build-locally.py with conda_build_tool: rattler-build, through the fake container engine.

.scripts/build_steps.sh runs `rattler-build build` on the v1 recipe; inside the fake
container that is tests/fixtures/rattler_build (py-rattler-build, the real engine), building
a one-output recipe offline against an empty local channel. build-locally.py is unchanged.
"""

from __future__ import annotations

import sys

import pytest
from helpers.fake_engine_feedstock import CPU, rattler_feedstock

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="builds a linux-64 package with bash"
)


def test_rattler_build_tool_builds_the_v1_recipe_into_build_artifacts(tmp_path) -> None:
    fs = rattler_feedstock(tmp_path)
    run = fs.run(CPU)
    assert run.returncode == 0, run.stdout + run.stderr
    assert fs.marker(CPU).exists()
    [package] = (fs.artifacts / "linux-64").glob("libtorch-1.0-*.conda")
    assert package.name in (fs.artifacts / "SHA256SUMS").read_text()
    assert fs.summary()["configs"][CPU]["status"] == "done"
    assert fs.builds() == []  # conda-build never ran


def test_rattler_build_runs_the_recipe_tests_natively(tmp_path) -> None:
    fs = rattler_feedstock(tmp_path, test_passes=False)
    run = fs.run(CPU)
    assert run.returncode != 0
    assert not fs.marker(CPU).exists()


def test_no_test_becomes_rattler_builds_test_skip(tmp_path) -> None:
    # The build workflow hands the container EXTRA_CB_OPTIONS=--no-test (GPU runners test
    # the CUDA packages afterwards); rattler-build's word for it is `--test skip`.
    fs = rattler_feedstock(tmp_path, test_passes=False)
    run = fs.run(
        CPU, CONDA_FORGE_DOCKER_RUN_ARGS="-e EXTRA_CB_OPTIONS", EXTRA_CB_OPTIONS="--no-test"
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert list((fs.artifacts / "linux-64").glob("libtorch-1.0-*.conda"))


def test_conda_build_tool_variable_builds_recipe_v1_beside_meta_yaml(tmp_path) -> None:
    # A one-off experiment before switching: CONDA_BUILD_TOOL handed into the container.
    fs = rattler_feedstock(tmp_path, switched=False)
    run = fs.run(
        CPU, CONDA_FORGE_DOCKER_RUN_ARGS="-e CONDA_BUILD_TOOL", CONDA_BUILD_TOOL="rattler-build"
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert list((fs.artifacts / "linux-64").glob("libtorch-1.0-*.conda"))
    assert fs.builds() == []
