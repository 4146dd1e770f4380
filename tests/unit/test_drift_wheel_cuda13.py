"""drift on a PyTorch >= 2.14 wheel (2.15.0's real METADATA): a row for Python itself, the
CUDA release from `cuda-toolkit[...]==X` against the configurations of that CUDA major, and
NVIDIA libraries judged by the host packages whose run_exports provide them."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.drift.synthetic import Output

from tools.drift import table
from tools.drift.model import Status
from tools.drift.recipe import specs_from_rendered
from tools.drift.upstream_wheel import claims_from_metadata

METADATA = (
    Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "drift" / "torch-2.15.0-METADATA"
).read_text()

# What a CUDA configuration's host holds (a slice of recipe/meta.yaml's): no libnvshmem-dev and
# no libnvjitlink-dev, as in the recipe today.
CUDA_HOST = (
    "cuda-cudart-dev",
    "cuda-cupti-dev",
    "cuda-nvrtc-dev",
    "cuda-nvtx-dev",
    "cusparselt",
    "libcublas-dev",
    "libcudnn-dev",
    "libcufft-dev",
    "libcufile-dev",
    "libcusolver-dev",
    "libcusparse-dev",
    "nccl",
)


def _config(cuda: str, pythons: tuple[str, ...]) -> list[Output]:
    variant = {"cuda_compiler_version": cuda, "target_platform": "linux-64"}
    host = ("numpy",) if cuda == "None" else (f"cuda-version {cuda}.*", *CUDA_HOST)
    return [
        Output(
            "pytorch",
            {"host": (f"python {p}.* *_cpython", *host), "run": ("sympy >=1.13.3",)},
            {**variant, "python": f"{p}.* *_cpython"},
        )
        for p in pythons
    ]


def _report(pythons: tuple[str, ...] = ("3.10", "3.11", "3.12")) -> table.Report:
    rendered = [(f"linux_64_cuda{c}", _config(c, pythons)) for c in ("None", "12.9", "13.0")]
    specs, configs, _ = specs_from_rendered(rendered)
    claims = claims_from_metadata(METADATA, "torch-2.15.0.whl")
    return table.build_report(claims, table.RecipeView(specs, configs), None)


def _row(report: table.Report, package: str) -> table.DriftRow:
    (row,) = [r for r in report.rows if r.package == package]
    return row


def test_requires_python_is_a_row_naming_the_python_the_recipe_must_skip() -> None:
    row = _row(_report(), "python")
    assert row.upstream.spec == ">=3.11"
    assert row.status is Status.LOOSER
    assert "builds for Python 3.10, which upstream's Requires-Python: >=3.11 rejects" in row.reason


def test_python_row_is_ok_once_the_recipe_skips_the_dropped_python() -> None:
    row = _row(_report(("3.11", "3.12")), "python")
    assert row.status is Status.OK, row.reason


def test_cuda_toolkit_pin_is_compared_only_with_configs_of_its_cuda_major() -> None:
    row = _row(_report(), "cuda-version")
    assert row.upstream.text == "cuda-toolkit==13.2.2"
    assert [g.configs for g in row.recipe] == [("linux_64_cuda13.0",)]
    assert row.status is Status.DIFFERS
    assert "older than upstream's cuda-toolkit==13.2.2" in row.reason


@pytest.mark.parametrize(
    ("package", "host_package"),
    [("libnvshmem3", "libnvshmem-dev"), ("cuda-toolkit", "libnvjitlink-dev")],
)
def test_a_library_no_host_package_provides_is_the_finding(package: str, host_package: str) -> None:
    row = _row(_report(), package)
    assert row.status is Status.LOOSER
    assert row.reason.startswith(f"no {host_package} in host"), row.reason
    assert "missing from the recipe's run" not in row.reason


def test_a_library_a_host_package_provides_comes_from_its_run_exports() -> None:
    row = _row(_report(), "libcudnn-dev")
    assert row.status is Status.UNKNOWN
    assert row.reason.startswith("comes from the run_exports of host libcudnn-dev"), row.reason


def test_cuda_components_apply_only_to_cuda_13_configurations() -> None:
    row = _row(_report(), "libnvshmem3")
    assert {c for g in row.recipe for c in g.configs} == {"linux_64_cuda13.0"}
