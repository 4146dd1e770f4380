"""matrix on feedstocks switched to rattler-build writes the .ci_support files the real
``conda smithy rerender`` wrote for them (tests/fixtures/recipes/v1-smithy, README there)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "recipes" / "v1-smithy"


@pytest.mark.parametrize("name", ["mini", "mini2", "mini3"])
def test_matrix_writes_what_conda_smithy_wrote(
    name: str, tmp_path: Path, pinning_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tools.rerender import expected_files, locate_pinning
    from tools.rerender.matrix import compute_matrix

    monkeypatch.setenv("PYTORCH_FEEDSTOCK_CACHE", "off")
    monkeypatch.setenv("PYTORCH_FEEDSTOCK_WORKERS", "1")
    root = tmp_path / f"{name}-feedstock"
    shutil.copytree(FIXTURES / name, root, ignore=shutil.ignore_patterns(".ci_support"))
    matrix = compute_matrix(root, root / "recipe", locate_pinning(str(pinning_dir)))
    written = {n: t for n, t in expected_files(matrix).items() if n.endswith(".yaml")}
    smithy = {p.name: p.read_text() for p in (FIXTURES / name / ".ci_support").glob("*.yaml")}
    assert sorted(written) == sorted(smithy)
    for file, text in smithy.items():
        assert written[file] == text, file
