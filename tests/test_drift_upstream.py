"""Reading what upstream says: a source tree with PyTorch's layout, and real wheels."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from tools.drift.model import Kind, Scope
from tools.drift.upstream_tree import read_tree
from tools.drift.upstream_wheel import claims_from_metadata, flavour_condition, read_wheel
from tools.foundation.errors import UserError

FIXTURE = Path(__file__).parent / "fixtures" / "drift" / "pytorch-src"


@pytest.fixture(scope="module")
def tree():
    return read_tree(FIXTURE)


def _one(tree, package: str, source_part: str = ""):
    found = [c for c in tree.claims if c.package == package and source_part in c.source]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize(
    ("package", "version"),
    [
        ("sleef", "3.8.0"),  # CMake set() triplet
        ("pybind11", "3.0.1"),  # header macro triplet
        ("fmt", "11.2.0"),  # FMT_VERSION packed as major*10000 + minor*100 + patch
        ("eigen", "5.0.1"),  # Eigen/Version (Eigen 5) preferred over Macros.h
        ("protobuf", "3.13.0"),  # GOOGLE_PROTOBUF_VERSION packed in thousands
        ("onednn", "3.9.1"),  # ideep/mkl-dnn set(PROJECT_VERSION "...")
        ("kineto", "0.1"),
        ("cudnn-frontend", "1.14.1"),
        ("cutlass", "4.2.1"),
        ("nvtx", "3.2.1"),  # project(nvtx3 VERSION ...)
        ("libuv", "1.38.1"),  # tensorpipe's bundled libuv
        ("onnx", "1.18.0"),  # VERSION_NUMBER file
    ],
)
def test_vendored_library_versions(tree, package: str, version: str) -> None:
    claim = _one(tree, package, "third_party/")
    assert (claim.text, claim.spec, claim.kind, claim.scope) == (
        version,
        f"=={version}",
        Kind.TESTED,
        Scope.HOST,
    )


def test_nccl_tag_pins_become_conda_versions_per_cuda_major(tree) -> None:
    nccl = {c.condition.label: c.text for c in tree.claims if c.package == "nccl"}
    assert nccl == {"CUDA 12": "2.27.5.1", "CUDA 13": "2.28.3.1"}  # nccl-legacy.txt is not shipped


def test_triton_version_file_wins_over_a_commit_pin(tree) -> None:
    triton = _one(tree, "triton")
    assert triton.text == "3.5.1" and triton.source == ".ci/docker/triton_version.txt"


def test_install_cuda_functions_scope_cuda_and_cudnn_to_their_series(tree) -> None:
    cuda = {c.condition.label: (c.text, c.spec) for c in tree.claims if c.package == "cuda"}
    assert cuda["CUDA 12.9"] == ("12.9.1", "==12.9")  # cuda-version packages are major.minor
    assert cuda["CUDA 13.0"] == ("13.0.2", "==13.0")
    cudnn = {c.condition.label: c.text for c in tree.claims if c.package == "cudnn"}
    assert cudnn == {"CUDA 12.6": "9.10.2.21", "CUDA 12.9": "9.10.2.21", "CUDA 13.0": "9.13.0.50"}


def test_cuda_condition_matches_the_configurations_of_that_series(tree) -> None:
    series = {c.condition.label: c.condition for c in tree.claims if c.package == "cusparselt"}
    assert series["CUDA 13"].matches_variant({"cuda_compiler_version": "13.0"})
    assert series["CUDA 12.[5-9]"].matches_variant({"cuda_compiler_version": "12.9"})
    assert not series["CUDA 12.[5-9]"].matches_variant({"cuda_compiler_version": "13.0"})
    assert not series["CUDA 13"].matches_variant({"cuda_compiler_version": "None"})


def test_mkl_pin_applies_to_mkl_configurations(tree) -> None:
    mkl = _one(tree, "mkl")
    assert mkl.text == "2025.2.0"
    assert mkl.condition.matches_variant({"blas_impl": "mkl"})
    assert not mkl.condition.matches_variant({"blas_impl": "generic"})


def test_build_system_requires_are_compared_with_host(tree) -> None:
    setuptools = _one(tree, "setuptools", "[build-system]")
    assert setuptools.scope is Scope.HOST and setuptools.spec == ">=70.1.0,<82"


def test_developer_lists_are_flagged_and_include_groups_skipped(tree) -> None:
    dev = {c.package for c in tree.claims if c.development}
    assert {"expecttest", "hypothesis", "optree", "sphinx", "filelock", "psutil"} <= dev
    assert not [
        c for c in tree.claims if c.source == "requirements.txt" and c.package.startswith("-")
    ]


def test_requirement_markers_become_conditions(tree) -> None:
    lintrunner = _one(tree, "lintrunner")
    assert lintrunner.condition.marker == 'platform_machine != "s390x"'


def test_optional_dependencies_are_extras(tree) -> None:
    assert _one(tree, "opt-einsum").extra == "opt-einsum"


def test_a_directory_without_pytorch_layout_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "numpy"\n')
    with pytest.raises(UserError, match="not a PyTorch source tree"):
        read_tree(tmp_path)


def test_a_missing_source_directory_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such directory"):
        read_tree(tmp_path / "absent")


def test_a_bad_requirements_line_names_the_file(tmp_path: Path) -> None:
    copy = tmp_path / "src"
    shutil.copytree(FIXTURE, copy)
    (copy / "requirements.txt").write_text("sympy >>= 1\n")
    with pytest.raises(UserError, match=r"requirements\.txt: cannot parse requirement"):
        read_tree(copy)


def test_invalid_pyproject_is_a_user_error(tmp_path: Path) -> None:
    copy = tmp_path / "src"
    shutil.copytree(FIXTURE, copy)
    (copy / "pyproject.toml").write_text('name = "torch"\n[build-system\n')
    with pytest.raises(UserError, match=r"pyproject\.toml: invalid TOML"):
        read_tree(copy)


# -- wheels ------------------------------------------------------------------------------------


def test_local_version_selects_the_flavour() -> None:
    assert flavour_condition("2.13.0+cpu").matches_variant({"cuda_compiler_version": "None"})
    cuda = flavour_condition("2.13.0+cu129")
    assert cuda.label == "CUDA 12.9" and cuda.matches_variant({"cuda_compiler_version": "12.9"})
    assert not cuda.matches_variant({"cuda_compiler_version": "13.0"})
    assert flavour_condition("2.13.0").variant == {}


def test_metadata_requirements_keep_markers_and_extras() -> None:
    text = (
        "Metadata-Version: 2.4\nName: torch\nVersion: 2.13.0+cu129\nProvides-Extra: optree\n"
        'Requires-Dist: nvidia-cudnn-cu12==9.10.2.21; platform_system == "Linux"\n'
        'Requires-Dist: optree>=0.13.0; extra == "optree"\n'
    )
    cudnn, optree = claims_from_metadata(text, "x.whl")
    assert (cudnn.spec, cudnn.condition.marker, cudnn.extra) == (
        "==9.10.2.21",
        'platform_system == "Linux"',
        None,
    )
    assert cudnn.condition.variant == {"cuda_compiler_version": r"12\.9"}
    assert optree.extra == "optree" and optree.condition.marker is None


def test_only_cuda_specific_requirements_are_scoped_to_the_flavour() -> None:
    text = (
        "Metadata-Version: 2.4\nName: torch\nVersion: 2.13.0+cu130\n"
        "Requires-Dist: sympy>=1.13.3\nRequires-Dist: triton==3.7.1\n"
    )
    sympy, triton = claims_from_metadata(text, "x.whl")
    assert sympy.condition.variant == {} and sympy.condition.label == ""
    assert triton.condition.label == "CUDA 13.0"


def test_unlabelled_wheel_takes_its_cuda_series_from_the_runtime_it_requires() -> None:
    text = (
        "Metadata-Version: 2.4\nName: torch\nVersion: 2.13.0\n"
        'Requires-Dist: nvidia-cuda-runtime-cu12==12.8.90; platform_system == "Linux"\n'
        'Requires-Dist: nvidia-cudnn-cu12==9.10.2.21; platform_system == "Linux"\n'
    )
    _runtime, cudnn, cuda = claims_from_metadata(text, "x.whl")
    assert (cuda.package, cuda.spec) == ("cuda", "==12.8.90")  # the CUDA release row
    assert cudnn.condition.label == 'CUDA 12.8 platform_system == "Linux"'
    assert cudnn.condition.matches_variant({"cuda_compiler_version": "12.8"})
    assert not cudnn.condition.matches_variant({"cuda_compiler_version": "12.9"})


@pytest.mark.slow
def test_real_wheel_requires_dist(torch_wheel: Path) -> None:
    claims = {c.package: c for c in read_wheel(torch_wheel)}
    assert {
        "filelock",
        "typing-extensions",
        "setuptools",
        "sympy",
        "networkx",
        "jinja2",
        "fsspec",
    } <= set(claims)
    assert claims["sympy"].spec == ">=1.13.3"
    assert claims["typing-extensions"].spec == ">=4.10.0"
    assert claims["filelock"].spec is None
    assert all(c.scope is Scope.RUN and c.kind is Kind.REQUIREMENT for c in claims.values())


def test_corrupt_wheel_is_a_user_error(tmp_path: Path) -> None:
    wheel = tmp_path / "torch-2.13.0-cp312-cp312-linux_x86_64.whl"
    wheel.write_bytes(b"PK\x03\x04 this is not really a zip archive")
    with pytest.raises(UserError, match="not a wheel"):
        read_wheel(wheel)


def test_wheel_without_metadata_is_a_user_error(tmp_path: Path) -> None:
    wheel = tmp_path / "torch-2.13.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("torch/__init__.py", "")
    with pytest.raises(UserError, match=r"expected one \*\.dist-info/METADATA"):
        read_wheel(wheel)
