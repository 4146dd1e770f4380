"""``python -m tools render`` says why an output is skipped, and refuses an --output a
config does not have (run as a user runs it, against this feedstock's real recipe)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import feedstock_matrix
from helpers.cli import REPO, run_tools
from helpers.in_process import run_python
from helpers.recipe_release import current

from tools.recipe import release

RC = f"{current().version}rc1"  # a release candidate of the version the recipe builds
# A config of the feedstock's matrix: a CPU one where it has one (it renders fastest).
ANY = feedstock_matrix.prefer({"cuda": False}, {})


def _render_in(root: Path, *args: str) -> subprocess.CompletedProcess:
    """The toolkit by path from another feedstock, as the README says to run it there."""
    return run_python([sys.executable, REPO / "tools", "render", *args], cwd=root, timeout=120)


def _release_candidate(tmp_path: Path) -> Path:
    root = tmp_path / "pytorch-feedstock"
    shutil.copytree(REPO / "recipe", root / "recipe")
    shutil.copytree(REPO / ".ci_support", root / ".ci_support")
    shutil.copy(REPO / "conda-forge.yml", root / "conda-forge.yml")
    meta = root / "recipe" / "meta.yaml"
    meta.write_text(release.parse(meta, meta.read_text()).with_field("version", RC).text)
    return root


def _any() -> str:
    if ANY is None:
        pytest.skip(".ci_support holds no configs")
    return ANY.name


def test_an_rc_version_under_is_rc_false_says_why_every_output_is_skipped(tmp_path) -> None:
    result = _render_in(_release_candidate(tmp_path), _any())
    assert result.returncode == 0, result.stderr
    headings = [line for line in result.stdout.splitlines() if not line.startswith(" ")]
    reasons = [line for line in result.stdout.splitlines() if line.startswith("  skipped: ")]
    assert headings and all("SKIPPED" in line for line in headings)
    assert len(reasons) == len(headings)
    assert all("skip: {{ skip_rc_mismatch }}" in line for line in reasons)
    assert all(f"is_rc=False, version={RC}" in line for line in reasons)


def test_an_output_skipped_by_a_selector_names_its_line_and_the_values_it_read() -> None:
    config = feedstock_matrix.need(cuda=False)  # CPU configs skip the CUDA-only output
    result = run_tools("render", config.name, "--output", "libtorch-cuda-linalg", "--json")
    assert result.returncode == 0, result.stderr
    reasons = {o["skip_reason"] for o in json.loads(result.stdout)}
    (reason,) = reasons
    assert 'skip: true # [not linux or cuda_compiler_version == "None"]' in reason
    assert reason.endswith("cuda_compiler_version=None")
    assert "/recipe/meta.yaml:" in reason


def test_a_built_output_has_no_skip_reason() -> None:
    result = run_tools("render", _any(), "--output", "libtorch", "--json")
    assert [o["skip_reason"] for o in json.loads(result.stdout)] == [None]


def test_output_missing_from_one_of_the_named_configs_is_an_error() -> None:
    # pytorch-gpu is an output of the CUDA configs only; the glob names every config of a
    # platform that has a CPU one, and the error the first of those without it
    cpu = feedstock_matrix.need(cuda=False)
    result = run_tools("render", f"{cpu.prefix}_*", "--output", "pytorch-gpu")
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    first = feedstock_matrix.select(platform=cpu.platform, cuda=False)[0]
    assert line.startswith(f"error: {first.name}: "), line
    assert "no output named 'pytorch-gpu' in this config (its outputs: libtorch," in line
    assert result.stdout == ""


def test_a_python_range_skip_shows_the_py_value_it_read(tmp_path) -> None:
    # pyext builds for Python >= 3.12 (`skip: true  # [py<312]`); a config for 3.11, as a
    # Python-range change leaves behind, is skipped, and the reason shows what py was.
    root = tmp_path / "pyext"
    shutil.copytree(REPO / "tests" / "fixtures" / "recipes" / "pyext", root)
    source = root / ".ci_support" / "linux_64_python3.12.____cpython.yaml"
    config = root / ".ci_support" / "linux_64_python3.11.____cpython.yaml"
    config.write_text(source.read_text().replace("3.12", "3.11"))
    result = _render_in(root, config.stem, "--json")
    assert result.returncode == 0, result.stderr
    (output,) = json.loads(result.stdout)
    assert output["skip"] is True
    assert output["skip_reason"].endswith("skip: true # [py<312]; py=311")


def test_after_bump_drops_the_oldest_python_the_skip_reason_shows_py(tmp_path) -> None:
    from tools.recipe.release import parse, with_python_floor

    config = _any()
    pythons = sorted(
        {p.split(".*")[0] for p in ANY.pythons}, key=lambda v: tuple(map(int, v.split(".")))
    )
    if len(pythons) < 2:
        pytest.skip(f"{config} builds for one Python: a floor above it skips everything")
    oldest, floor = pythons[0], pythons[1]

    root = tmp_path / "pytorch-feedstock"
    for name in ("recipe", ".ci_support"):
        shutil.copytree(REPO / name, root / name)
    shutil.copy(REPO / "conda-forge.yml", root / "conda-forge.yml")
    meta = root / "recipe" / "meta.yaml"
    meta.write_text(with_python_floor(parse(meta, meta.read_text()), floor).text)  # as bump does
    result = _render_in(root, config, "--output", "pytorch", "--json")
    assert result.returncode == 0, result.stderr
    skipped = [o for o in json.loads(result.stdout) if o["skip"]]
    assert [o["variant"]["python"].split(".*")[0] for o in skipped] == [oldest]
    # conda-build's py: 3.11 -> 311
    floor_py, oldest_py = floor.replace(".", ""), oldest.replace(".", "")
    assert skipped[0]["skip_reason"].endswith(f"skip: true # [py<{floor_py}]; py={oldest_py}")
