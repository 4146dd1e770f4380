"""The megabuild flow recipe/build.sh runs in tests/e2e/test_build_sh.py: a faked conda-build run
of every output of a Linux CUDA configuration of the miniature, in conda-build's order (the
top-level build libtorch-build, which compiles; then by dependency libtorch-cuda-linalg
magma and nomagma, libtorch, pytorch for two Pythons) in one shared work directory and one
$PREFIX path, recreated for each output, and what each step left behind."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.minitorch.build_records import Compile, compiles, ninja_log, ran_between
from helpers.minitorch.fake_conda_build import FakeCondaBuild, Package
from helpers.minitorch.support import (
    Interpreter,
    base_venv,
    install_blas,
    install_magma,
    two_interpreters,
)


@dataclass(frozen=True)
class Flow:
    conda: FakeCondaBuild
    pythons: tuple[Interpreter, Interpreter]
    venvs: tuple[Path, Path]
    magma: Package
    blas: Package
    libtorch: Package
    libtorch_compiles: list[Compile]
    linalg: dict[str, Package]
    pytorch: tuple[Package, Package]
    ran_for_second_python: set[str]
    compiler_cache_calls_for_second_python: list[str]
    every_compile: list[Compile]
    changed_option: subprocess.CompletedProcess[str]
    ran_for_changed_option: set[str]


def megabuild_flow(layout: str, tmp_path_factory: pytest.TempPathFactory) -> Flow:
    """Every output of the flow built for the miniature's ``layout`` (its module fixture)."""
    first, second = two_interpreters()
    venvs = (
        base_venv(first, layout=layout),
        base_venv(second, flavour="a" if second != first else "b", layout=layout),
    )
    scratch = tmp_path_factory.mktemp("conda-bld")
    conda = FakeCondaBuild(
        scratch,
        {"cuda_compiler_version": "13.0", "blas_impl": "generic"},
        megabuild_python=first.tag,
        layout=layout,
    )
    install_magma(scratch / "libmagma", scratch)
    magma = conda.package_from("libmagma", scratch / "libmagma")
    install_blas(scratch / "blas", scratch)
    blas = conda.package_from("blas", scratch / "blas")

    # conda-build's PKG_NAME for meta.yaml's top-level build (no CF_TORCH_BUILD_STAGE here)
    conda.run_output("libtorch-build", venvs[0], [magma, blas])
    libtorch_compiles = compiles(conda.src_dir / "build")
    linalg = {
        "magma": conda.run_output(
            "libtorch-cuda-linalg",
            venvs[0],
            [magma],
            {"CF_TORCH_LINALG_FLAVOR": "magma"},
            label="linalg-magma",
        ),
        "nomagma": conda.run_output(
            "libtorch-cuda-linalg",
            venvs[0],
            [],
            {"CF_TORCH_LINALG_FLAVOR": "nomagma"},
            label="linalg-nomagma",
        ),
    }
    libtorch = conda.run_output("libtorch", venvs[0], [magma, blas])
    host = [magma, blas, libtorch, linalg["magma"]]
    # Another Python's pytorch stage whose environment sets a build option the compile stage
    # did not: the forwarding would write it into the cache on this output's configure.
    before = ninja_log(conda.src_dir / "build")
    changed_option = conda.attempt_output("pytorch", venvs[1], host, {"USE_DISTRIBUTED": "1"})
    ran_for_changed_option = ran_between(before, ninja_log(conda.src_dir / "build"))
    pytorch_first = conda.run_output("pytorch", venvs[0], host, label="pytorch-first")
    before = ninja_log(conda.src_dir / "build")
    calls_before = len(conda.compiler_cache_calls())
    pytorch_second = conda.run_output("pytorch", venvs[1], host, label="pytorch-second")
    ran = ran_between(before, ninja_log(conda.src_dir / "build"))
    return Flow(
        conda,
        (first, second),
        venvs,
        magma,
        blas,
        libtorch,
        libtorch_compiles,
        linalg,
        (pytorch_first, pytorch_second),
        ran,
        conda.compiler_cache_calls()[calls_before:],
        compiles(conda.src_dir / "build"),
        changed_option,
        ran_for_changed_option,
    )
