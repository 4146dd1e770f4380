"""The miniature feedstock switched to rattler-build (tests/fixtures/recipes/v1-staging), copied
for a test, and the toolkit run by path inside it: what test_render_v1.py and
test_render_v1_other_commands.py share."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.cli import REPO
from helpers.in_process import run_python

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "recipes" / "v1-staging"
V1_RECIPE = REPO / "recipe" / "recipe-v1.yaml"


def run_tools(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The toolkit run by path inside another feedstock, as its maintainer runs it there (in
    this process, as that child would run: tests/helpers/in_process.py)."""
    return run_python([sys.executable, REPO / "tools", *args], cwd=cwd)


def copy_feedstock(tmp_path: Path, tool: str = "rattler-build") -> Path:
    """A copy of the fixture feedstock building with ``tool``."""
    root = tmp_path / tool
    shutil.copytree(FIXTURE, root)
    forge = root / "conda-forge.yml"
    text = forge.read_text()
    assert "conda_build_tool: rattler-build" in text
    forge.write_text(text.replace("conda_build_tool: rattler-build", f"conda_build_tool: {tool}"))
    return root


def tools_json(root: Path, *args: str) -> list[dict]:
    result = run_tools(*args, "--json", cwd=root)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def switch_this_feedstock(root: Path) -> Path:
    """A copy of this feedstock in ``root``, switched as docs/rattler-build.md says: meta.yaml
    removed, recipe-v1.yaml renamed recipe.yaml, conda_build_tool: rattler-build."""
    if not V1_RECIPE.is_file():
        pytest.skip(f"{V1_RECIPE} is absent (the v1 recipe has not landed on this branch)")
    shutil.copytree(REPO / "recipe", root / "recipe")
    shutil.copytree(REPO / ".ci_support", root / ".ci_support")
    (root / "recipe" / "meta.yaml").unlink()
    (root / "recipe" / "recipe-v1.yaml").rename(root / "recipe" / "recipe.yaml")
    forge = (REPO / "conda-forge.yml").read_text()
    assert "conda_build_tool: conda-build\n" in forge
    (root / "conda-forge.yml").write_text(
        forge.replace("conda_build_tool: conda-build\n", "conda_build_tool: rattler-build\n")
    )
    return root
