"""recipe/foreign_bytecode.py: bytecode of another Python among torch's installed files (issue 49).

bld.bat's pytorch stage runs it with the output's own interpreter instead of FINDSTR, whose
multi-literal search can miss the shorter literal."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "recipe" / "foreign_bytecode.py"
TAG = sys.implementation.cache_tag


def _run(site: Path, *record: str) -> subprocess.CompletedProcess[str]:
    if record:
        info = site / "torch-2.13.0.dist-info"
        info.mkdir(parents=True)
        (info / "RECORD").write_text("".join(f"{line},sha256=x,1\n" for line in record))
    return subprocess.run(
        [sys.executable, "-B", str(SCRIPT), str(site), "--fix", "remove it in recipe\\bld.bat"],
        capture_output=True,
        text=True,
        check=False,
    )


def test_this_pythons_bytecode_in_every_optimization_passes(tmp_path: Path) -> None:
    own = [f"torch/__pycache__/a.{TAG}{opt}.pyc" for opt in ("", ".opt-1", ".opt-2")]
    result = _run(tmp_path, "torch/a.py", *own)
    assert (result.returncode, result.stderr) == (0, "")


def test_another_pythons_bytecode_is_named_with_what_to_do(tmp_path: Path) -> None:
    result = _run(tmp_path, f"torch/__pycache__/a.{TAG}.pyc", "torch/__pycache__/b.cpython-39.pyc")
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert "b.cpython-39.pyc is bytecode for another Python" in line
    assert line.endswith("remove it in recipe\\bld.bat")


def test_no_record_is_bad_input(tmp_path: Path) -> None:
    result = _run(tmp_path)
    assert result.returncode == 2
    assert "torch-*.dist-info" in result.stderr and "Traceback" not in result.stderr
