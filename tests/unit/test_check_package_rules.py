"""The package rules on records: layout, CUDA linking, metadata against the render."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers.check_records import elf, fails, package, statuses

from tools.check import Expectations, OutputExpectation, run_checks
from tools.check.expectations import (
    build_string_cuda_major,
    build_string_flavor,
    build_string_python,
    from_rendered,
)
from tools.check.rules.metadata import compare_specs
from tools.check.tree import Tree

REPO = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ layout


def test_bytecode_for_another_python_fails():
    py = package(
        "pytorch",
        "cpu_generic_py312_h1_2",
        files=[
            "lib/python3.12/site-packages/functorch/__pycache__/__init__.cpython-312.pyc",
            "lib/python3.12/site-packages/functorch/__pycache__/__init__.cpython-314.pyc",
        ],
    )
    failing = fails(run_checks([py]), "layout.pyc")
    assert [f.path.endswith("cpython-314.pyc") for f in failing] == [True]


def test_torch_lib_copy_of_a_prefix_lib_file_fails():
    lib = package(files=["lib/libc10.so"])
    py = package(
        "pytorch",
        "cpu_generic_py312_h1_2",
        files=["lib/python3.12/site-packages/torch/lib/libc10.so"],
    )
    assert "should be a link" in fails(run_checks([lib, py]), "layout.torch-lib-links")[0].detail


def test_torch_lib_link_that_resolves_nowhere_fails():
    py = package(
        "pytorch",
        "cpu_generic_py312_h1_2",
        links=[("lib/python3.12/site-packages/torch/lib/libc10.so", "../../../../libc10.so")],
    )
    assert fails(run_checks([py]), "layout.torch-lib-links")


def test_same_named_alternatives_may_share_paths():
    py312 = package("pytorch", "cpu_generic_py312_h1_2", files=["lib/libtorch_python.so"])
    py313 = package("pytorch", "cpu_generic_py313_h2_2", files=["lib/libtorch_python.so"])
    lib = package(files=["lib/libc10.so"])
    assert statuses(run_checks([lib, py312, py313]), "layout.overlap") == ["pass"]


def test_cuda_libtorch_must_ship_the_cuda_libraries():
    lib = package(
        build="cuda129_generic_h1_202",
        files=[f"lib/lib{n}.so" for n in ("c10", "shm", "torch", "torch_cpu", "torch_global_deps")]
        + ["share/cmake/Torch/TorchConfig.cmake"],
    )
    missing = {f.detail for f in fails(run_checks([lib]), "layout.expected-files")}
    assert missing == {
        "missing lib/libc10_cuda.so",
        "missing lib/libcaffe2_nvrtc.so",
        "missing lib/libtorch_cuda.so",
    }


def test_tree_does_not_follow_links_out_of_the_packages():
    tree = Tree([package(links=[("lib/a.so", "../../../etc/passwd"), ("lib/b.so", "a.so")])])
    assert tree.resolve("lib/b.so") is None


# ------------------------------------------------------------------ CUDA


def test_cudart_of_another_major_fails():
    lib = package(
        build="cuda130_generic_h1_200", elves={"lib/libtorch_cuda.so": elf(["libcudart.so.12"])}
    )
    assert "libcudart.so.13" in fails(run_checks([lib]), "cuda.runtime")[0].detail


def test_cpu_build_linking_cuda_fails():
    lib = package(elves={"lib/libtorch_cpu.so": elf(["libcudart.so.12"])})
    assert fails(run_checks([lib], Expectations(cuda_compiler_version="None")), "cuda.runtime")


def test_nomagma_linalg_linking_magma_fails():
    linalg = package(
        "libtorch-cuda-linalg",
        "cuda129_nomagma_generic_h1_200",
        elves={"lib/libtorch_cuda_linalg.so": elf(["libmagma.so", "libcudart.so.12"])},
    )
    assert fails(run_checks([linalg]), "cuda.magma")


def test_magma_linalg_without_magma_fails():
    linalg = package(
        "libtorch-cuda-linalg",
        "cuda129_magma_generic_h1_250",
        elves={"lib/libtorch_cuda_linalg.so": elf(["libcudart.so.12"])},
    )
    assert fails(run_checks([linalg]), "cuda.magma")


def test_magma_outside_the_linalg_library_fails():
    lib = package(
        build="cuda129_generic_h1_200", elves={"lib/libtorch_cuda.so": elf(["libmagma.so"])}
    )
    assert fails(run_checks([lib]), "cuda.magma")


@pytest.mark.parametrize(
    ("build", "major", "flavor", "python"),
    [
        ("cuda129_magma_generic_h1_250", 12, "magma", None),
        ("cuda130_nomagma_mkl_h1_300", 13, "nomagma", None),
        ("cpu_generic_py312_h1234_2", 0, None, "3.12"),
        ("h1234567_0", None, None, None),
    ],
)
def test_build_strings_name_the_variant(build, major, flavor, python):
    assert (
        build_string_cuda_major(build),
        build_string_flavor(build),
        build_string_python(build),
    ) == (major, flavor, python)


# ------------------------------------------------------------------ metadata


def test_rendered_run_requirement_missing_from_index_json_fails():
    findings = compare_specs("metadata.depends", "p", ["python", "filelock"], ["python >=3.12"])
    assert [f.detail for f in findings if f.status == "fail"] == [
        "rendered 'filelock' is missing from info/index.json"
    ]


def test_requirements_added_at_build_time_are_fine():
    findings = compare_specs(
        "metadata.depends", "p", ["python"], ["python >=3.12", "libstdcxx >=14"]
    )
    assert [f.status for f in findings] == ["pass"] and "libstdcxx" in findings[0].detail


def test_declared_run_exports_missing_from_the_package_fails():
    lib = package(run_exports=None)
    expect = Expectations(outputs=(OutputExpectation("libtorch", declares_run_exports=True),))
    assert fails(run_checks([lib], expect), "metadata.run-exports")


@dataclass(frozen=True)
class FakeRendered:
    name: str
    build_string: str
    variant: dict
    requirements: dict = field(default_factory=dict)
    run_exports: dict = field(default_factory=dict)
    skip: bool = False


def test_expectations_come_from_the_render_with_flavour_per_output():
    variant = {
        "c_stdlib_version": "2.28",
        "cxx_compiler_version": "14",
        "cuda_compiler_version": "13.0",
        "python": "3.12.* *_cpython",
    }
    expect = from_rendered(
        [
            FakeRendered(
                "libtorch-cuda-linalg",
                "cuda130_magma_generic_ha_250",
                {**variant, "cuda_linalg_flavor": "magma"},
            ),
            FakeRendered(
                "libtorch-cuda-linalg",
                "cuda130_nomagma_generic_hb_200",
                {**variant, "cuda_linalg_flavor": "nomagma"},
            ),
            FakeRendered(
                "pytorch",
                "cuda130_generic_py312_hc_200",
                variant,
                {"run": ("python",)},
                {"weak": ("pytorch >=2.13",)},
            ),
            FakeRendered("pytorch", "skipped", variant, skip=True),
        ],
        config="cfg",
    )
    assert (expect.c_stdlib_version, expect.cuda_major, expect.cuda_linalg_flavor) == (
        "2.28",
        13,
        None,
    )
    assert (
        expect.output_for(
            "libtorch-cuda-linalg", None, "cuda130_nomagma_generic_hb_200"
        ).cuda_linalg_flavor
        == "nomagma"
    )
    pytorch = expect.output_for("pytorch", "3.12")
    assert (pytorch.run, pytorch.declares_run_exports, pytorch.python) == (
        ("python",),
        True,
        "3.12",
    )
    assert len(expect.outputs) == 3


def test_libtorch_shipping_another_outputs_library_fails():
    lib = package(files=["lib/libtorch_python.so"])
    assert any(
        "belongs to pytorch" in f.detail for f in fails(run_checks([lib]), "layout.expected-files")
    )
