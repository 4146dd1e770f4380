"""`tools check` reads the device code of CUDA libraries (.nv_fatbin) and compares it with
the config's TORCH_CUDA_ARCH_LIST (recipe/cuda_arch_lists.txt).

The reader runs on objects the real nvcc 13.0 made (from NVIDIA's wheels, cached; the
tests skip, naming the wheel, where it cannot be had) and on upstream's CUDA 13 wheel of
torch 2.14.1 (the tests cache's, `upstream_cuda13_wheel` in tests/conftest.py); the rule runs
on records.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from ruamel.yaml import YAML
from test_check_rules import elf, package

from tools.check import Expectations, run_checks
from tools.check.elf import read_elf
from tools.check.fatbin import DeviceCode
from tools.render.cuda_archs import parse_arch_list, read_rows, runnable

REPO = Path(__file__).resolve().parent.parent
FATBIN_ONLY = ("--only", "cuda.fatbin")
KERNEL = "__global__ void add_one(float* x, int n) { if (threadIdx.x < n) x[threadIdx.x] += 1; }\n"
CUDA13 = Expectations(
    config="linux_64_cuda13",
    subdir="linux-64",
    cuda_compiler_version="13.0",
    cuda_arch_list="8.0;9.0;12.0+PTX",
)


def _cuda(config: Path) -> str | None:
    """The config's cuda_compiler_version (.ci_support files list each key's one value)."""
    values = YAML(typ="safe").load(config.read_text()).get("cuda_compiler_version") or [None]
    return str(values[0])


def sass(*archs: int) -> tuple[DeviceCode, ...]:
    return tuple(DeviceCode("sass", a) for a in archs)


def ptx(*archs: int) -> tuple[DeviceCode, ...]:
    return tuple(DeviceCode("ptx", a) for a in archs)


def torch_cuda(code: tuple[DeviceCode, ...]):
    return package(
        build="cuda130_generic_h1_200",
        elves={"lib/libtorch_cuda.so": replace(elf(["libcudart.so.13"]), device_code=code)},
    )


def fatbin_findings(code, expect=CUDA13):
    return [f for f in run_checks([torch_cuda(code)], expect) if f.check == "cuda.fatbin"]


def test_device_code_the_arch_list_promises_passes():
    [finding] = fatbin_findings(sass(80, 90, 120) + ptx(120))
    assert finding.status == "pass", finding


def test_a_missing_architecture_fails_and_is_named():
    [finding] = fatbin_findings(sass(80, 120) + ptx(120))
    assert finding.status == "fail"
    assert "no SASS for sm_90" in finding.detail


def test_missing_ptx_for_a_plus_ptx_entry_fails():
    [finding] = fatbin_findings(sass(80, 90, 120))
    assert finding.status == "fail"
    assert "no PTX for compute_120" in finding.detail


def test_sass_no_gpu_of_the_platform_runs_is_reported():
    asks_for_orin = replace(CUDA13, cuda_arch_list="8.0;8.7;9.0;12.0+PTX")
    findings = fatbin_findings(sass(80, 87, 90, 120) + ptx(120), asks_for_orin)
    assert sorted(f.status for f in findings) == ["pass", "warn"]
    [warning] = [f for f in findings if f.status == "warn"]
    assert "sm_87" in warning.detail and "linux-64" in warning.detail


def test_the_pass_line_names_only_what_the_list_asks_for():
    one_arch = replace(CUDA13, cuda_arch_list="9.0")
    [verdict, _] = fatbin_findings(sass(80, 90) + ptx(90), one_arch)
    assert verdict.status == "pass"
    assert verdict.detail == "holds sm_90, as 9.0 asks"


def test_device_code_the_list_did_not_ask_for_warns_naming_it():
    one_arch = replace(CUDA13, cuda_arch_list="9.0")
    findings = fatbin_findings(sass(80, 90), one_arch)
    [warning] = [f for f in findings if f.status == "warn"]
    assert warning.detail == "sm_80: not in this config's list 9.0"


def test_ptx_the_list_did_not_ask_for_warns():
    findings = fatbin_findings(sass(80, 90, 120) + ptx(90, 120))
    [warning] = [f for f in findings if f.status == "warn"]
    assert warning.detail == "compute_90: not in this config's list 8.0;9.0;12.0+PTX"


def test_host_only_libraries_have_no_fatbin_finding():
    assert fatbin_findings(()) == []


def test_without_a_config_the_device_code_is_listed_as_a_fact():
    [finding] = fatbin_findings(sass(75) + ptx(75), Expectations())
    assert finding.status == "pass" and "sm_75 compute_75" in finding.detail


def test_the_recipe_arch_lists_parse_and_check_knows_their_cuda_versions():
    # +PTX is the feedstock's choice, not a rule: conda-forge's rows end in it so that GPUs
    # newer than the list still run (recipe/cuda_arch_lists.txt); a lab's row for its own
    # GPUs may leave it out. What check needs is a row it can read for a CUDA version it knows.
    rows = read_rows(REPO / "recipe" / "cuda_arch_lists.txt")
    assert rows
    for (cuda, subdir), text in rows.items():
        assert parse_arch_list(text).sass, (cuda, subdir)
        assert runnable(cuda, subdir) is not None, (cuda, subdir)


@pytest.fixture(scope="module")
def nvcc13() -> Path:
    from fixtures.standin_channel.cuda import CudaWheelError, toolkit

    try:
        return toolkit("13.0") / "bin" / "nvcc"
    except CudaWheelError as error:
        pytest.skip(f"no CUDA 13.0 nvcc: {error}")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("gencode", "expected"),
    [
        (["arch=compute_75,code=sm_75", "arch=compute_120,code=compute_120"], "sm_75 compute_120"),
        (["arch=compute_90a,code=sm_90a", "arch=compute_100f,code=sm_100f"], "sm_90a sm_100f"),
    ],
)
def test_the_reader_lists_what_nvcc_put_in_the_fatbin(nvcc13, tmp_path, gencode, expected):
    (tmp_path / "k.cu").write_text(KERNEL)
    flags = [f"-gencode={g}" for g in gencode]
    subprocess.run(
        [nvcc13, "-ccbin", "g++", "-Xfatbin", "-compress-all", *flags, "-c", "k.cu", "-o", "k.o"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    with (tmp_path / "k.o").open("rb") as stream:
        code = read_elf(stream).device_code
    assert sorted(str(c) for c in code) == sorted(expected.split())


@pytest.mark.slow
def test_upstream_cuda13_wheel_device_code_is_printed_as_a_fact(upstream_cuda13_wheel):
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "tools", "check", str(upstream_cuda13_wheel), *FATBIN_ONLY],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    print(result.stdout)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "libtorch_cuda.so" in result.stdout
    assert "sm_90 " in result.stdout and "(no config)" in result.stdout


@pytest.mark.slow
def test_upstream_cuda13_wheel_against_a_one_arch_row_warns_on_the_extras(
    tmp_path, upstream_cuda13_wheel
):
    """Upstream builds sm_75 ... sm_121 and PTX: held against a lab's 9.0 row, nothing is
    missing (it passes) and everything else it holds is named as not asked for."""
    import sys

    config = next(
        p for p in sorted((REPO / ".ci_support").glob("linux_64_*.yaml")) if _cuda(p) == "13.0"
    )
    recipe = shutil.copytree(REPO / "recipe", tmp_path / "recipe")
    (recipe / "cuda_arch_lists.txt").write_text("13.0 linux-64 9.0\n")
    # the lab names its set, as render requires of a row that is not conda-forge's full one
    text = config.read_text() + "cuda_arch_set:\n- sm90\n"
    config = tmp_path / config.name
    config.write_text(text)
    check = [sys.executable, "-m", "tools", "check", str(upstream_cuda13_wheel), *FATBIN_ONLY]
    result = subprocess.run(
        [*check, "--json", "--recipe-dir", str(recipe), "--config", str(config)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    findings = json.loads(result.stdout)
    lib = [f for f in findings if f["path"].endswith("torch/lib/libtorch_cuda.so")]
    # sm_90a: the arch-specific kernels PyTorch builds where the list has 9.0
    assert [f["detail"] for f in lib if f["status"] == "pass"] == [
        "holds sm_90 sm_90a, as 9.0 asks"
    ]
    [warning] = [f["detail"] for f in lib if f["status"] == "warn"]
    assert warning.startswith("sm_75, sm_80, ") and warning.endswith(
        ": not in this config's list 9.0"
    )
    assert "sm_90," not in warning
