"""recipe/bld.bat under Wine's cmd stops where a step fails (issue 42), and its compile stage in
a reused work directory compiles instead of installing.

One work directory (the setuptools layout, a CPU config) is compiled, compiled again as a
rebuild in a kept work directory does, and libtorch is installed; then each test drives one
failure path with a stand-in that fails as the real program would (WINE_STANDIN_FAIL and the
products in tests/fixtures/wine/standins.py) and checks the stage's status and bld.bat's (or
the recipe helper's) message. tests/test_bld_bat_wine.py runs the successful sequences.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from fixtures.feedstock_matrix import need
from fixtures.minitorch.support import SCIKIT_BUILD_CORE, SETUPTOOLS, Interpreter, two_interpreters
from fixtures.wine.harness import PYBIND11, Output, WineCondaBuild, host_python, stage
from fixtures.wine.products import miniature_products

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Work:
    build: WineCondaBuild
    other: Interpreter
    compiled: Output
    recompiled: Output
    libtorch: Output

    def pytorch(self, fail: str = "", **host: bytes) -> Output:
        """A pytorch output of the other Python (retarget and pip install) on libtorch."""
        extra = {**stage("pytorch"), "WINE_STANDIN_FAIL": fail}
        return self.build.run_output(
            "pytorch", self.other, extra, host=[self.libtorch], host_files={**PYBIND11, **host}
        )


def _variant(cuda: bool = False) -> dict[str, str]:
    config = need(platform="win-64", cuda=cuda)
    return {"blas_impl": "mkl", "cuda_compiler_version": config.cuda or "None"}


def _new_build(root: Path, layout: str = SETUPTOOLS) -> WineCondaBuild:
    first, _ = two_interpreters()
    return WineCondaBuild(
        root,
        layout=layout,
        products=miniature_products(root / "products", cuda=False),
        variant=_variant(),
        megabuild=host_python(first, layout),
    )


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Work:
    build = _new_build(tmp_path_factory.mktemp("wine-failures"))
    compiled = build.run_output("libtorch-build", build.megabuild, stage("compile"))
    recompiled = build.run_output("libtorch-build", build.megabuild, stage("compile"))
    libtorch = build.run_output("libtorch", build.megabuild, stage("libtorch"))
    _, second = two_interpreters()
    return Work(build, host_python(second, SETUPTOOLS), compiled, recompiled, libtorch)


def _failed(out: Output, status: int, message: str) -> None:
    assert out.returncode == status, out.log[-3000:]
    assert message in out.log, out.log[-3000:]


def test_the_compile_stage_in_a_compiled_work_directory_compiles_and_installs_nothing(
    work: Work,
) -> None:
    assert work.compiled.returncode == 0, work.compiled.log[-3000:]
    assert work.recompiled.returncode == 0, work.recompiled.log[-3000:]
    assert work.recompiled.files == {}
    # It ran the compile step (pip wheel) again and wrote the marker anew.
    assert work.recompiled.log.count(" -m pip wheel . ") == 1, work.recompiled.log[-3000:]
    assert (work.build.src_dir / "_stage" / "compiled").is_file()


def test_a_variable_conda_build_sets_that_is_missing_stops_the_first_lines(
    tmp_path: Path,
) -> None:
    build = _new_build(tmp_path)
    out = build.run_output("libtorch", build.megabuild, {**stage("libtorch"), "PKG_VERSION": None})
    _failed(out, 2, "bld.bat: error: PKG_VERSION is not set;")


def test_a_failing_compile_stops_the_compile_stage_without_its_marker(tmp_path: Path) -> None:
    build = _new_build(tmp_path)
    out = build.run_output(
        "libtorch-build", build.megabuild, {**stage("compile"), "WINE_STANDIN_FAIL": "pip-wheel"}
    )
    _failed(out, 1, "pip (stand-in): error: the build failed")
    assert not (build.src_dir / "_stage" / "compiled").exists()


def test_a_failing_install_of_the_scikit_build_core_tree_stops_the_compile_stage(
    tmp_path: Path,
) -> None:
    build = _new_build(tmp_path, SCIKIT_BUILD_CORE)
    out = build.run_output(
        "libtorch-build",
        build.megabuild,
        {**stage("compile"), "WINE_STANDIN_FAIL": "cmake-install"},
    )
    _failed(out, 1, "cmake (stand-in): error: file INSTALL cannot copy")
    assert not (build.src_dir / "_stage" / "compiled").exists()


def test_a_libtorch_file_a_host_package_installed_stops_libtorch(work: Work) -> None:
    out = work.build.run_output(
        "libtorch",
        work.build.megabuild,
        stage("libtorch"),
        host_files={"Library/bin/c10.dll": b"another package's c10.dll\n"},
    )
    _failed(out, 2, "c10.dll already exists (installed by a host dependency)")


def test_a_failing_pip_install_stops_the_pytorch_output(work: Work) -> None:
    out = work.pytorch(fail="pip-install")
    _failed(out, 1, "pip (stand-in): error: the build failed")
    assert not [f for f in out.files if f.startswith("Library/")]


def test_bytecode_of_another_python_in_the_installed_torch_stops_the_pytorch_output(
    work: Work,
) -> None:
    out = work.pytorch(fail="foreign-pyc")
    _failed(out, 1, "ops_format.cpython-39.pyc is bytecode for another Python")


def test_a_failing_copy_of_pybind11s_headers_stops_the_pytorch_output(work: Work) -> None:
    _failed(work.pytorch(fail="robocopy"), 1, "robocopy (stand-in): error: a file could not")


def test_a_locked_file_stops_the_copy_of_pybind11s_headers_within_a_minute(work: Work) -> None:
    # robocopy's defaults retry it 1,000,000 times, 30 s apart: until the job's timeout.
    out = work.pytorch(fail="robocopy-locked")
    _failed(out, 1, "robocopy (stand-in): error: a locked file, retried")
    (waited,) = re.findall(r"gave up after (\d+) s", out.log)
    assert int(waited) <= 60


def test_no_pybind11_in_the_host_prefix_stops_the_pytorch_output(work: Work) -> None:
    out = work.build.run_output(
        "pytorch", work.other, stage("pytorch"), host=[work.libtorch], host_files={}
    )
    _failed(out, 2, "bld.bat: error: no pybind11\\pybind11.h in")


def test_a_library_for_no_output_stops_the_pytorch_output(work: Work) -> None:
    # Last in this file: the library stays in the work directory's build tree.
    stray = work.build.products / "lib" / "torch_newlib.dll"
    stray.write_bytes(b"a library no rule places\n")
    try:
        out = work.pytorch()
    finally:
        stray.unlink()
    _failed(out, 2, "torch_newlib.dll is neither torch_python nor a file libtorch installed")
