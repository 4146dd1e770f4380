""".scripts/ holds what build-locally.py runs (shellcheck runs in tests/e2e/test_lint.py)."""

from __future__ import annotations

from pathlib import Path

from tools.smithy.forge import FALLBACK_DOCKER_IMAGE

REPO = Path(__file__).resolve().parents[2]


def test_every_script_build_locally_needs_exists() -> None:
    names = {p.name for p in (REPO / ".scripts").iterdir()}
    assert {
        "build_steps.sh",
        "run_docker_build.sh",
        "run_osx_build.sh",
        "run_win_build.bat",
        "logging_utils.sh",
    } <= names


def test_run_docker_build_falls_back_to_the_toolkits_image() -> None:
    # The shell script cannot import the constant; this keeps the two copies equal.
    script = (REPO / ".scripts" / "run_docker_build.sh").read_text()
    assert f'FALLBACK_IMAGE="{FALLBACK_DOCKER_IMAGE}"' in script
