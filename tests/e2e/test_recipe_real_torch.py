"""The recipe's test helpers against a real PyTorch 2.13.0 (upstream's CPU wheel).

check_torch.py, check_cpp_extension.py and cmake_test/ run inside conda-build's test
environments, where a bug in them would only show after hours of compiling. Here they meet
the real thing: upstream's CPU wheel, whose variant (MKL, no CUDA, OpenMP, mkldnn,
distributed) is known.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.patched_upstream import installed_aten_config, patched, torch_tree_with
from helpers.recipe_release import current, recorded_commit

RECIPE = Path(__file__).resolve().parents[2] / "recipe"

pytestmark = pytest.mark.slow


def run_with_torch(
    torch_site: Path, *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(torch_site), os.environ.get("PYTHONPATH")])),
    )
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=600,
        check=False,
    )


def check_torch(torch_site: Path, *args: str) -> subprocess.CompletedProcess:
    return run_with_torch(torch_site, str(RECIPE / "check_torch.py"), *args)


def recorded_commit_of_this_wheel(torch_site: Path) -> str:
    """The commit the recipe records, where the recipe builds the wheel's release."""
    text = (torch_site / "torch" / "version.py").read_text()
    if f"__version__ = '{current().version}+cpu'" not in text:
        pytest.skip(f"the recipe builds {current().version}, not the wheel's release")
    return recorded_commit()


def test_check_torch_accepts_the_variant_the_wheel_was_built_as(torch_site):
    # The recipe's git_version is upstream's own: the wheel's torch.version.git_version.
    result = check_torch(
        torch_site,
        "--version",
        "2.13.0+cpu",
        "--git-version",
        recorded_commit_of_this_wheel(torch_site),
        "--blas",
        "mkl",
        "--cuda",
        "None",
        "--megabuild-python",
        "3.12",
        "--expect",
        "openmp",
        "--expect",
        "mkldnn",
        "--expect",
        "distributed",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert [line.split()[0] for line in result.stdout.splitlines()] == ["ok"] * 6 + ["skip"]
    assert result.stdout.splitlines()[-1] == "skip gpu kernels: CPU variant"


def test_check_torch_fails_a_git_version_other_than_the_recorded_commit(torch_site):
    other = "0" * 40
    result = check_torch(
        torch_site,
        *("--version", "2.13.0+cpu", "--git-version", other, "--blas", "mkl"),
        *("--cuda", "None", "--megabuild-python", "3.12"),
    )
    assert result.returncode == 1
    (line,) = [x for x in result.stdout.splitlines() if x.startswith("FAIL")]
    assert line.startswith("FAIL version: torch.version.git_version is '")
    assert line.endswith(f", the recipe records '{other}'")
    assert "check_torch: 1 check(s) failed: version" in result.stderr


def test_check_torch_skips_the_gpu_kernels_in_one_line_without_a_gpu(torch_site):
    # The CPU wheel sees no GPU, as a CUDA package on a machine without one does.
    result = check_torch(
        torch_site,
        *("--version", "2.13.0+cpu", "--blas", "mkl", "--megabuild-python", "3.12"),
        *("--cuda", "13.0", "--gpu-only"),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        result.stdout == "skip gpu kernels: no GPU visible (torch.cuda.is_available() is False)\n"
    )


def test_check_torch_names_every_check_a_wrong_variant_fails(torch_site):
    result = check_torch(
        torch_site,
        "--version",
        "2.13.0",
        "--git-version",
        "0" * 40,
        "--blas",
        "generic",
        "--cuda",
        "12.9",
        "--megabuild-python",
        "3.12",
    )
    assert result.returncode == 1
    failed = [
        line.split()[1].rstrip(":")
        for line in result.stdout.splitlines()
        if line.startswith("FAIL")
    ]
    assert failed == ["version", "blas", "cuda"]
    assert "3 check(s) failed: version, blas, cuda" in result.stderr


def test_cmake_test_builds_and_runs_against_the_real_libtorch_and_libtorch_python(
    torch_site, tmp_path
):
    if shutil.which("c++") is None or shutil.which("ninja") is None:
        pytest.skip("needs a C++ compiler and ninja")
    build = tmp_path / "build"
    # cmake_test also calls find_package(ATen): with the ATenConfig.cmake the recipe's patch
    # 0008 writes (upstream's names its CI's prefix; test_patches_2_13.py shows it failing).
    aten_config = installed_aten_config(tmp_path, patched(tmp_path, "0008"))
    torch = torch_tree_with(torch_site, aten_config, tmp_path / "site")
    torch_dir = torch / "share" / "cmake" / "Torch"
    subprocess.run(
        [
            "cmake",
            "-S",
            str(RECIPE / "cmake_test"),
            "-B",
            str(build),
            "-G",
            "Ninja",
            f"-DTorch_DIR={torch_dir}",
            "-DWITH_TORCH_PYTHON=ON",
            f"-DPython3_EXECUTABLE={sys.executable}",
        ],
        check=True,
        capture_output=True,
    )
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)
    consumer = subprocess.run(
        [str(build / "torch_consumer")], capture_output=True, text=True, check=False
    )
    assert consumer.returncode == 0 and "ok" in consumer.stdout
    module = run_with_torch(
        torch_site,
        "-c",
        "import torch, torch_python_consumer as m; print(m.make_tensor().tolist())",
        cwd=build,
    )
    assert module.stdout.strip() == "[0, 1, 2, 3]", module.stderr


def check_cpp_extension(site: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    if shutil.which("c++") is None or shutil.which("ninja") is None:
        pytest.skip("needs a C++ compiler and ninja")
    env = dict(
        os.environ,
        PYTHONPATH=str(site),
        TORCH_EXTENSIONS_DIR=str(tmp_path / "torch_extensions"),
    )
    return subprocess.run(
        [sys.executable, str(RECIPE / "check_cpp_extension.py")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=900,
        check=False,
    )


def recipe_shaped_site(torch_site: Path, dest: Path) -> Path:
    """The wheel laid out as the `pytorch` package is: torch/include holds no pybind11.

    Symlinks to the unpacked wheel except for torch/include/pybind11, which
    USE_SYSTEM_PYBIND11 builds never copy there.
    """
    dest.mkdir()
    for entry in torch_site.iterdir():
        if entry.name != "torch":
            (dest / entry.name).symlink_to(entry)
    (dest / "torch").mkdir()
    for entry in (torch_site / "torch").iterdir():
        if entry.name != "include":
            (dest / "torch" / entry.name).symlink_to(entry)
    (dest / "torch" / "include").mkdir()
    for entry in (torch_site / "torch" / "include").iterdir():
        if entry.name != "pybind11":
            (dest / "torch" / "include" / entry.name).symlink_to(entry)
    return dest


def test_check_cpp_extension_builds_and_imports_an_extension_against_the_real_wheel(
    torch_site, tmp_path
):
    result = check_cpp_extension(torch_site, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("ok   cpp_extension")


def test_check_cpp_extension_fails_when_torch_include_lacks_pybind11(torch_site, tmp_path):
    # The regression: USE_SYSTEM_PYBIND11 and no pybind11 package in the environment.
    site = recipe_shaped_site(torch_site, tmp_path / "site")
    result = check_cpp_extension(site, tmp_path)
    assert result.returncode == 1
    assert "FAIL build:" in result.stdout
    assert "pybind11/pybind11.h" in result.stdout


def test_check_openmp_finds_the_one_runtime_the_real_torch_and_numpy_load(torch_site):
    result = run_with_torch(torch_site, str(RECIPE / "check_openmp.py"))
    assert result.returncode == 0, result.stdout + result.stderr
    (line,) = result.stdout.splitlines()
    # the wheel's own GNU OpenMP (torch/lib/libgomp.so.1); numpy's OpenBLAS uses threads
    assert line.startswith("OpenMP runtime loaded after import torch, numpy: ")
    assert line.endswith("/torch/lib/libgomp.so.1")


def test_check_openmp_fails_when_a_second_runtime_joins_the_real_torch(
    torch_site, tmp_path, monkeypatch
):
    # another packager's libgomp beside the wheel's: two runtimes in one process
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    # by path: dlopen("libgomp.so.1") would return the wheel's copy, already loaded by soname
    system_gomp = subprocess.run(
        [sys.executable, "-c", "import ctypes; ctypes.CDLL('libgomp.so.1'); "
         "print(next(l.split()[-1] for l in open('/proc/self/maps') if 'libgomp' in l))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    (tmp_path / "second_runtime.py").write_text(f"import ctypes\nctypes.CDLL({system_gomp!r})\n")
    result = run_with_torch(
        torch_site, str(RECIPE / "check_openmp.py"), "--import", "torch",
        "--import", "second_runtime",
    )  # fmt: skip
    assert result.returncode == 1, result.stdout
    assert result.stderr.startswith("problems: 2 OpenMP runtimes loaded after import torch")
