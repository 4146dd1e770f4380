""".scripts/ pass shellcheck (skipped where shellcheck is not installed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tools.smithy.forge import FALLBACK_DOCKER_IMAGE

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = sorted((REPO / ".scripts").glob("*.sh"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_script_passes_shellcheck(script: Path) -> None:
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (apt-get install shellcheck)")
    result = subprocess.run(
        [shellcheck, "--external-sources", "--severity=style", str(script)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout


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
