"""recipe/bld.bat executed by Wine's cmd, stage by stage, as conda-build runs it (issue 42).

tests/helpers/wine/harness.py runs the unmodified script through a conda_build.bat in the
work directory, one fresh host prefix per output, with stand-ins for the Windows Python,
pip, cmake, robocopy and findstr (tests/helpers/wine/standins.py says what each models).
Two sequences cover the dimensions: the setuptools layout on a CPU config with the megabuild
Python's output first, and the scikit-build-core layout on a CUDA config with it last and a
space in PREFIX and SP_DIR. Each output's package is what the script added to its prefix.
tests/e2e/test_bld_bat_wine_failures.py drives bld.bat's failure paths.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.bld_bat import build_env
from helpers.feedstock_matrix import arch_row, need
from helpers.minitorch.support import SCIKIT_BUILD_CORE, SETUPTOOLS, two_interpreters
from helpers.recipe_release import recorded_commit
from helpers.wine.harness import Output, WineCondaBuild, host_python, run_sequence
from helpers.wine.products import CORE_DLLS, CUDA_DLLS, miniature_products

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Sequence:
    cuda: str | None
    layout: str
    megabuild_first: bool
    prefix_name: str
    build: WineCondaBuild
    outputs: dict[str, Output]
    arch_list: str | None


SHAPES = {
    "setuptools-cpu-megabuild-first": (False, SETUPTOOLS, True, "h_env"),
    "skbuild-cuda-megabuild-last-spaces": (True, SCIKIT_BUILD_CORE, False, "host env"),
}


@pytest.fixture(scope="module", params=list(SHAPES))
def sequence(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Sequence:
    cuda, layout, megabuild_first, prefix_name = SHAPES[request.param]
    config = need(platform="win-64", cuda=cuda)
    first, second = two_interpreters()
    mega, other = host_python(first, layout), host_python(second, layout)
    root = tmp_path_factory.mktemp(request.param)
    build = WineCondaBuild(
        root,
        layout=layout,
        products=miniature_products(root / "products", cuda=cuda),
        variant={"blas_impl": "mkl", "cuda_compiler_version": config.cuda or "None"},
        megabuild=mega,
        prefix_name=prefix_name,
    )
    pythons = [mega, other] if megabuild_first else [other, mega]
    outputs = run_sequence(build, pythons)
    arch_list = arch_row(config) if cuda else None
    return Sequence(config.cuda, layout, megabuild_first, prefix_name, build, outputs, arch_list)


def _ok(out: Output) -> None:
    assert out.returncode == 0, out.log[-4000:]


def _pythons(seq: Sequence) -> list[str]:
    return sorted(k for k in seq.outputs if k.startswith("pytorch-"))


def test_every_stage_of_the_sequence_succeeds(sequence: Sequence) -> None:
    assert list(sequence.outputs)[:2] == ["compile", "libtorch"]
    assert len(_pythons(sequence)) == 2
    for out in sequence.outputs.values():
        _ok(out)


def test_the_compile_stage_installs_nothing(sequence: Sequence) -> None:
    _ok(sequence.outputs["compile"])
    assert sequence.outputs["compile"].files == {}


def test_the_compile_stage_configures_with_the_shared_tables_values(sequence: Sequence) -> None:
    # recipe/build_env.txt, which build.sh reads too: every variable of it CMake takes into
    # the cache is in what the compile stage recorded (stage_environment.py), with its value.
    recorded = sequence.build.src_dir / "_stage" / "forwarded-environment.json"
    forwarded = json.loads(recorded.read_text())
    table = {k: v for k, v in build_env().items() if re.match("(BUILD|USE|CMAKE)_", k)}
    assert {"CMAKE_GENERATOR", "CMAKE_INSTALL_ALWAYS", "USE_SYSTEM_SLEEF"} <= set(table)
    assert {name: forwarded.get(name) for name in table} == table


def test_libtorch_holds_torchs_own_dlls_import_libraries_headers_and_cmake_files(
    sequence: Sequence,
) -> None:
    out = sequence.outputs["libtorch"]
    _ok(out)
    libraries = CORE_DLLS + (CUDA_DLLS if sequence.cuda else ())
    expected = {f"Library/bin/{name}.dll" for name in libraries}
    expected |= {f"Library/lib/{name}.lib" for name in libraries}
    expected |= {"Library/include/ATen/ATen.h", "Library/include/torch/torch.h"}
    expected |= {
        "Library/share/cmake/Torch/TorchConfig.cmake",
        "Library/share/cmake/Caffe2/Caffe2Targets.cmake",
        "Library/share/cmake/Caffe2/Caffe2Targets-release.cmake",
    }
    if sequence.cuda:
        expected |= {
            "etc/conda/activate.d/libtorch_activate.bat",
            "etc/conda/deactivate.d/libtorch_deactivate.bat",
        }
    assert set(out.files) == expected


def test_libtorchs_exports_name_the_dlls_where_libtorch_put_them(sequence: Sequence) -> None:
    text = sequence.outputs["libtorch"].text(
        "Library/share/cmake/Caffe2/Caffe2Targets-release.cmake"
    )
    assert '"${_IMPORT_PREFIX}/bin/c10.dll"' in text
    assert "/lib/c10.dll" not in text


def test_libtorch_activates_the_architectures_a_cuda_build_was_built_for(
    sequence: Sequence,
) -> None:
    scripts = [f for f in sequence.outputs["libtorch"].files if f.startswith("etc/conda/")]
    if not sequence.cuda:
        # a CPU build has no architecture list to hand on
        assert scripts == []
        return
    text = sequence.outputs["libtorch"].text("etc/conda/activate.d/libtorch_activate.bat")
    assert sequence.arch_list in text
    assert "@CF_TORCH_CUDA_ARCH_LIST@" not in text


def test_each_pytorch_output_holds_torch_for_its_own_python(sequence: Sequence) -> None:
    for key in _pythons(sequence):
        out = sequence.outputs[key]
        _ok(out)
        tag = "cp" + key.removeprefix("pytorch-").replace(".", "")
        files = set(out.files)
        site = "Lib/site-packages/torch"
        assert {
            f"{site}/__init__.py",
            f"{site}/packaged/ops_format.py",
            f"{site}/_C.{tag}-win_amd64.pyd",
            f"{site}/lib/torch_python.lib",
            f"{site}/include/pybind11/pybind11.h",
            "Library/bin/torch_python.dll",
            "Library/lib/torch_python.lib",
        } <= files, key
        assert out.text("Library/bin/torch_python.dll").endswith(f"compiled for {tag}\n"), key
        assert out.text(f"{site}/_C.{tag}-win_amd64.pyd").endswith(f"compiled for {tag}\n")
        # libtorch's DLLs are deleted from torch\lib, runtime DLLs of host packages dropped.
        assert not [f for f in files if f.startswith(f"{site}/lib/") and f.endswith(".dll")], key
        assert not [f for f in files if f.startswith("Library/") and "torch_python" not in f], key
        assert [f for f in files if re.search(r"_C\.cp\d+-win_amd64\.pyd$", f)] == [
            f"{site}/_C.{tag}-win_amd64.pyd"
        ]


def test_each_pytorch_output_carries_the_recorded_commit_as_git_version(
    sequence: Sequence,
) -> None:
    # The source is the release archive's tree (no .git): bld.bat hands the commit the recipe
    # records to the build, whose generate_torch_version.py (patch 0013) writes it.
    for key in _pythons(sequence):
        text = sequence.outputs[key].text("Lib/site-packages/torch/_version_info.py")
        assert f"git_version = {recorded_commit()!r}" in text.splitlines(), key


def test_each_pytorch_output_carries_bytecode_of_its_own_python_only(sequence: Sequence) -> None:
    for key in _pythons(sequence):
        minor = key.removeprefix("pytorch-").replace(".", "")
        bytecode = [f for f in sequence.outputs[key].files if f.endswith(".pyc")]
        assert all(f".cpython-{minor}." in f for f in bytecode), (key, bytecode)


def test_each_pytorch_output_has_its_record(sequence: Sequence) -> None:
    for key in _pythons(sequence):
        records = [f for f in sequence.outputs[key].files if f.endswith(".dist-info/RECORD")]
        assert len(records) == 1, key


def test_libtorch_compiles_once_and_each_pythons_bindings_once(sequence: Sequence) -> None:
    log = (sequence.build.src_dir / "build" / "standin-compiles.log").read_text().splitlines()
    core = [line for line in log if line.startswith("core ")]
    assert len(core) == len(set(core)), "a Python-independent product compiled twice"
    bound = [line for line in log if not line.startswith("core ")]
    assert len(bound) == len(set(bound)) == 2 * 3, bound  # torch_python .dll/.lib, _C; per Python


def test_the_prefix_path_of_this_sequence_is_the_one_asked_for(sequence: Sequence) -> None:
    # The second shape runs everything with a space in PREFIX and SP_DIR.
    assert sequence.build.prefix.name == sequence.prefix_name
    assert Path(sequence.build.prefix).is_dir()
