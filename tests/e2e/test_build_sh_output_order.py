"""The megabuild compiles each Python's bindings exactly once, whatever order conda-build
builds the pytorch outputs in: here the other Python's output first (tests/e2e/test_build_sh.py's
flow builds the megabuild Python's first and counts the same way).

conda-build shares one work directory between the top-level build and every output, and
orders the pytorch outputs differently from run to run (PYTHONHASHSEED decides; with the
real conda-build 26.7.1 the megabuild Python's output came first in some runs and last in
others). The compile stage compiles against the megabuild Python; when another Python's
output retargets the tree first, the megabuild Python's output must not compile its bindings
a second time. Counted from the compiler launcher's log (the build environment's ccache,
which FakeCondaBuild makes record every call): CMake recompacts .ninja_log when it
reconfigures, so that log cannot count repeats across outputs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.minitorch.fake_conda_build import FakeCondaBuild, Package
from helpers.minitorch.support import (
    CORE_OBJECTS,
    EXTENSION,
    LAYOUTS,
    PYTHON_BOUND,
    SCIKIT_BUILD_CORE,
    base_venv,
    install_blas,
    two_interpreters,
)

pytestmark = pytest.mark.slow

CPU = {"cuda_compiler_version": "None", "blas_impl": "generic"}


@dataclass(frozen=True)
class Outputs:
    layout: str
    launched: Counter[str]  # object -> compiler runs over every output (launcher's log)
    pytorch: dict[str, Package]  # "megabuild" / "other" -> that Python's pytorch package
    pythons: int  # how many different Pythons the outputs were built for


@pytest.fixture(scope="module", params=LAYOUTS)
def other_python_first(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Outputs:
    """A CPU build whose pytorch outputs come in the order the megabuild does not favour:
    the other Python's first (tests/e2e/test_build_sh.py's flow builds the megabuild's first)."""
    layout = request.param
    megabuild, other = two_interpreters()
    venvs = {
        "megabuild": base_venv(megabuild, layout=layout),
        "other": base_venv(other, flavour="a" if other != megabuild else "b", layout=layout),
    }
    scratch = tmp_path_factory.mktemp("conda-bld")
    conda = FakeCondaBuild(scratch, CPU, megabuild_python=megabuild.tag, layout=layout)
    install_blas(scratch / "blas", scratch)
    blas = conda.package_from("blas", scratch / "blas")
    conda.run_output("libtorch-build", venvs["megabuild"], [blas])
    libtorch = conda.run_output("libtorch", venvs["megabuild"], [blas])
    pytorch = {
        which: conda.run_output("pytorch", venvs[which], [blas, libtorch], label=which)
        for which in ("other", "megabuild")
    }
    return Outputs(
        layout, conda.launched_objects(), pytorch, len({megabuild.version, other.version})
    )


def test_every_core_object_compiles_once(other_python_first: Outputs) -> None:
    launched = other_python_first.launched
    assert {o: launched[o] for o in CORE_OBJECTS} == dict.fromkeys(CORE_OBJECTS, 1), launched


def test_the_bindings_compile_once_per_python(other_python_first: Outputs) -> None:
    launched, pythons = other_python_first.launched, other_python_first.pythons
    assert launched[PYTHON_BOUND] == pythons, launched
    # setuptools compiles torch._C itself, without the launcher
    assert launched[EXTENSION] == (pythons if other_python_first.layout == SCIKIT_BUILD_CORE else 0)


def test_each_python_gets_its_own_torch_c(other_python_first: Outputs) -> None:
    for which, package in other_python_first.pytorch.items():
        extensions = [f for f in package.files if Path(f).name.startswith("_C.")]
        assert len(extensions) == 1, (which, extensions)
