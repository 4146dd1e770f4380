"""recipe/bld.bat under Wine's cmd and a free-threaded Python (issue 53 item 3, Windows).

A 3.14t pytorch output is its own ABI: bld.bat must tell its interpreter from a GIL one of
the same X.Y (conda-build's PY_VER says 3.14 for both; the recipes hand over
CF_TORCH_PYTHON), never install the compile stage's GIL wheel into it, and never let the
compile stage build the core against a free-threaded Python or in a kept tree one
retargeted. No free-threaded interpreter runs here (docs/testing.md), so the free-threaded
Python is ``free_threaded``'s stand-in; the kept 3.14t tree is the CMake cache
tests/e2e/test_cmake_cache_free_threaded.py lays out.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.free_threaded_cache import configured_cache, lay_out
from helpers.minitorch.support import SETUPTOOLS, Interpreter, two_interpreters
from helpers.wine.harness import PYBIND11, Output, WineCondaBuild, host_python, stage
from helpers.wine.products import miniature_products

pytestmark = pytest.mark.slow

#: sysconfig as a ``--disable-gil`` CPython answers it: Py_GIL_DISABLED is 1 (its pyconfig.h
#: defines it). bld.bat and recipe/cmake_cache learn the ABI from that variable alone.
SITECUSTOMIZE = """\
import sysconfig

_get_config_var = sysconfig.get_config_var


def get_config_var(name):
    return 1 if name == "Py_GIL_DISABLED" else _get_config_var(name)


sysconfig.get_config_var = get_config_var
"""


def free_threaded(python: Interpreter, folder: Path) -> Interpreter:
    """A stand-in for the free-threaded CPython of ``python``'s X.Y: ``python`` started with
    a sitecustomize that makes its sysconfig report Py_GIL_DISABLED, for every way bld.bat
    and the helpers it runs start it (``-c`` code, scripts, a subprocess of cmake_cache)."""
    folder.mkdir(parents=True)
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE)
    exe = folder / "python"
    exe.write_text(
        f'#!/bin/sh\nPYTHONPATH="{folder}${{PYTHONPATH:+:$PYTHONPATH}}" '
        f'exec "{python.executable}" "$@"\n'
    )
    exe.chmod(0o755)
    return Interpreter(exe, python.version)


def _new_build(root: Path) -> WineCondaBuild:
    first, _ = two_interpreters()
    return WineCondaBuild(
        root,
        layout=SETUPTOOLS,
        products=miniature_products(root / "products", cuda=False),
        variant={"blas_impl": "mkl", "cuda_compiler_version": "None"},
        megabuild=host_python(first, SETUPTOOLS),
    )


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[WineCondaBuild, Output]:
    """A work directory the compile stage compiled, its GIL wheel kept, and libtorch."""
    build = _new_build(tmp_path_factory.mktemp("wine-free-threaded"))
    out = build.run_output("libtorch-build", build.megabuild, stage("compile"))
    assert out.returncode == 0, out.log[-3000:]
    libtorch = build.run_output("libtorch", build.megabuild, stage("libtorch"))
    assert libtorch.returncode == 0, libtorch.log[-3000:]
    return build, libtorch


def _free_threaded_variant(python: Interpreter) -> str:
    # conda-forge's python314t migration spells 3.14t "3.14.* *_cp314t"; the recipes pass it
    # as it is and bld_pytorch.bat reads the t from it.
    return f"{python.tag}.* *_cp{python.tag.replace('.', '')}t"


def _pytorch(compiled, python: Interpreter, cf_torch_python: str) -> Output:
    build, libtorch = compiled
    extra = {**stage("pytorch"), "CF_TORCH_PYTHON": cf_torch_python}
    return build.run_output("pytorch", python, extra, host=[libtorch], host_files=dict(PYBIND11))


def _torch_files(out: Output) -> list[str]:
    return [rel for rel in out.files if rel.startswith("Lib/site-packages/torch")]


def test_a_314t_output_refuses_a_python_with_the_gil_before_installing(compiled) -> None:
    python = compiled[0].megabuild
    out = _pytorch(compiled, python, _free_threaded_variant(python))
    assert out.returncode == 2, out.log[-3000:]
    assert f"is Python {python.tag} but CF_TORCH_PYTHON='{python.tag}t'" in out.log
    assert "installing the compile stage's" not in out.log
    assert _torch_files(out) == []


def test_a_free_threaded_output_never_takes_the_gil_wheel(compiled, tmp_path) -> None:
    # The megabuild Python's X.Y, free-threaded: its wheel tag is cp3Y-cp3Yt, not the kept
    # cp3Y-cp3Y wheel's, so the tree is retargeted to it as for any other Python.
    python = free_threaded(compiled[0].megabuild, tmp_path / "free-threaded")
    out = _pytorch(compiled, python, _free_threaded_variant(python))
    assert "installing the compile stage's" not in out.log, out.log[-3000:]
    assert 'cmake_cache" retarget-python' in out.log, out.log[-3000:]


def test_the_compile_stage_refuses_a_free_threaded_megabuild_python(tmp_path) -> None:
    build = _new_build(tmp_path / "build")
    python = free_threaded(build.megabuild, tmp_path / "free-threaded")
    out = build.run_output("libtorch-build", python, stage("compile"))
    assert out.returncode == 2, out.log[-3000:]
    tag = build.megabuild.tag
    assert f"is Python {tag}t but CF_TORCH_MEGABUILD_PYTHON='{tag}'" in out.log
    assert " -m pip wheel . " not in out.log


def test_the_compile_stage_refuses_a_kept_tree_a_314t_output_retargeted(tmp_path) -> None:
    build = _new_build(tmp_path / "build")
    cache = build.src_dir / "build" / "CMakeCache.txt"
    cache.parent.mkdir(parents=True)
    cache.write_text(configured_cache(lay_out(tmp_path / "py314t", "t")))
    out = build.run_output("libtorch-build", build.megabuild, stage("compile"))
    assert out.returncode == 2, out.log[-3000:]
    assert "the tree is configured for Python 3.14t (free-threaded" in out.log, out.log[-3000:]
    assert " -m pip wheel . " not in out.log
