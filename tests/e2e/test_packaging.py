"""Installing the project installs its dependencies, never a top-level ``tools`` package.

PyTorch has its own ``tools`` package, which this recipe copies into its test environment;
ours in site-packages would shadow it.  The toolkit runs from the repository root instead.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_wheel_holds_metadata_only(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for name in ("pyproject.toml", "requirements.txt", "LICENSE.txt"):
        shutil.copy(REPO / name, project / name)
    shutil.copytree(REPO / "tools", project / "tools")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path / "dist"), str(project)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert [n for n in names if not n.split("/")[0].endswith(".dist-info")] == []
    metadata = next(n for n in names if n.endswith("/METADATA"))
    assert "Requires-Dist: ruamel.yaml" in zipfile.ZipFile(wheel).read(metadata).decode()
