"""The real torch 2.13.0 wheel against this recipe's rendered pytorch run requirements."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import feedstock_matrix

from tools.drift import present, table
from tools.drift.model import Status
from tools.drift.recipe import render_all, specs_from_rendered
from tools.drift.upstream_wheel import read_wheel

ROOT = Path(__file__).resolve().parents[2]
WHEEL_RUN_DEPENDENCIES = {
    "filelock",
    "typing_extensions",
    "setuptools",
    "sympy",
    "networkx",
    "jinja2",
    "fsspec",
}


def _cpu_linux_configs(reference_dir: Path) -> list[str]:
    """Our own linux-64 CPU configs, or conda-forge's reference ones where the matrix has none
    (a fork that builds CUDA only)."""
    ours = feedstock_matrix.select(platform="linux-64", cuda=False, root=ROOT)
    if ours:
        return [c.name for c in ours]
    return [
        str(p)
        for p in sorted((reference_dir / "ci_support").glob("linux_64*cuda_compiler_versionNone*"))
    ]


@pytest.fixture(scope="module")
def recipe_view(reference_dir: Path) -> table.RecipeView:
    if not (ROOT / "recipe" / "meta.yaml").is_file():
        pytest.skip("recipe/meta.yaml is absent")
    configs = _cpu_linux_configs(reference_dir)
    specs, config_records, unparsable = specs_from_rendered(render_all(ROOT, configs))
    assert not unparsable, unparsable
    return table.RecipeView(specs, config_records)


@pytest.mark.slow
def test_every_required_wheel_dependency_is_a_pytorch_run_requirement(
    torch_wheel, recipe_view
) -> None:
    report = table.build_report(read_wheel(torch_wheel), recipe_view, None)
    required = {row.package: row for row in report.rows if not row.upstream.extra}
    assert set(required) >= WHEEL_RUN_DEPENDENCIES
    for name in WHEEL_RUN_DEPENDENCIES:
        row = required[name]
        assert all(group.present for group in row.recipe), (
            f"{name}: {present.recipe_cell(row, '; ')}"
        )
        assert row.status in (Status.OK, Status.STRICTER), (
            f"{name}: {row.status.value}: {row.reason}"
        )


@pytest.mark.slow
def test_real_wheel_table_has_no_conflict(torch_wheel, recipe_view) -> None:
    report = table.build_report(read_wheel(torch_wheel), recipe_view, None)
    assert not table.conflicts(report), present.markdown(report)
