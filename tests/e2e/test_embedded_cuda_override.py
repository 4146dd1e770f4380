"""The embedded engine tests a CUDA config on a machine without a GPU (issue 44).

pytorch and pytorch-gpu run-depend on ``__cuda``; rattler-build's test phase solves their test
environment with this machine's virtual packages, which show no ``__cuda`` without a GPU.
.scripts/build_steps.sh exports CONDA_OVERRIDE_CUDA for the container path; the embedded engine
hands the build the same. (tests/e2e/test_e2e_real_engine.py builds and tests a CUDA config through
the embedded engine for real.)
"""

from __future__ import annotations

import os
import sys

import pytest
from helpers.e2e_feedstock import without_engines
from helpers.fake_engine_feedstock import CPU, CUDA, V1_RECIPE, Feedstock

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="drives bash scripts (POSIX)")


@pytest.fixture
def feedstock(tmp_path) -> Feedstock:
    return Feedstock(tmp_path)


def _embedded_plan(fs: Feedstock, config: str) -> list[str]:
    for engine in ("docker", "podman"):
        (fs.bin / engine).unlink()
    (fs.root / "recipe" / "recipe-v1.yaml").write_text(V1_RECIPE)
    dry = fs.run(config, "--dry-run", PATH=without_engines(os.environ["PATH"]))
    assert dry.returncode == 0, dry.stderr
    return dry.stdout.splitlines()


def test_a_cuda_config_through_the_embedded_engine_gets_conda_override_cuda(
    feedstock: Feedstock,
) -> None:
    plan = _embedded_plan(feedstock, CUDA)
    assert plan[0].startswith("engine: rattler-build")
    # Before: RATTLER_CACHE_DIR alone; the test environment of pytorch-gpu could not solve.
    env = [line.split(maxsplit=1)[-1] for line in plan if "=" in line and "run:" not in line]
    assert "CONDA_OVERRIDE_CUDA=12.9" in env, plan


def test_a_cpu_config_gets_no_cuda_override(feedstock: Feedstock) -> None:
    plan = _embedded_plan(feedstock, CPU)
    assert not [line for line in plan if "CONDA_OVERRIDE_CUDA" in line], plan
