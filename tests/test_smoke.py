"""`python -m tools smoke`: the GPU smoke test's input handling (its run over real packages
is in tests/test_e2e_real_engine.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tools.smoke.gpu import cuda_of_build

REPO = Path(__file__).resolve().parent.parent


def smoke(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools", "smoke", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_folder_without_pytorch_is_one_error_line(tmp_path):
    (tmp_path / "linux-64").mkdir()
    result = smoke(str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"error: {tmp_path / 'linux-64'} holds no pytorch package; build a config first"
    )


def test_an_existing_prefix_is_refused_not_overwritten(tmp_path):
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "mine").write_text("keep\n")
    result = smoke(str(tmp_path), "--prefix", str(tmp_path / "env"))
    assert result.returncode == 2 and "exists; name a new folder" in result.stderr
    assert (tmp_path / "env" / "mine").read_text() == "keep\n"


def test_the_cuda_version_comes_from_the_build_string():
    assert cuda_of_build("cuda130_generic_h1234567_200") == "13.0"
    assert cuda_of_build("cuda129_mkl_py312_h1234567_300") == "12.9"
    assert cuda_of_build("cpu_generic_h1234567_0") is None
