"""Every TORCH_CUDA_ARCH_LIST of recipe/cuda_arch_lists.txt, compiled for real.

For each CUDA config in .ci_support, Linux and Windows, the recipe's row (the exact list
build.sh or bld.bat exports) is compiled with the compiler of that CUDA version, from
NVIDIA's wheels (cached; see tests/fixtures/standin_channel/cuda.py): nvcc must accept
every entry, the fatbin must hold SASS for each and PTX for each +PTX entry. The CUDA 12.9
and 12.8 nvcc wheels ship ptxas but no nvcc driver, so there ptxas assembles a PTX kernel
for every entry (the step that decides which GPUs a CUDA version can target), and the nvcc
half says it skipped and why. Device code does not depend on the host, so linux-aarch64
and win-64 rows compile on this machine with the Linux compilers.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from fixtures import feedstock_matrix

from tools.check.elf import read_elf
from tools.render.cuda_archs import parse_arch_list, runnable

REPO = Path(__file__).resolve().parent.parent
KERNEL = "__global__ void add_one(float* x, int n) { if (threadIdx.x < n) x[threadIdx.x] += 1; }\n"
#: The PTX ISA of each CUDA version (its ptxas reads no newer; sm_110 needs 9.0).
PTX_ISA = {"12.8": "8.7", "12.9": "8.8", "13.0": "9.0"}
#: The same kernel as PTX text, for ptxas alone.
PTX_KERNEL = """\
.version {isa}
.target sm_{arch}
.address_size 64
.visible .entry add_one(.param .u64 x)
{{
    .reg .b64 %rd<3>;
    .reg .f32 %f<3>;
    ld.param.u64 %rd1, [x];
    cvta.to.global.u64 %rd2, %rd1;
    ld.global.f32 %f1, [%rd2];
    add.f32 %f2, %f1, 0f3F800000;
    st.global.f32 [%rd2], %f2;
    ret;
}}
"""


CONFIGS = feedstock_matrix.cuda_pairs(REPO)  # (CUDA version, platform) of each CUDA config
ROWS = feedstock_matrix.arch_rows(REPO)


def test_every_cuda_config_has_an_arch_list():
    if not CONFIGS:
        pytest.skip(".ci_support holds no CUDA config")
    assert [c for c in CONFIGS if c not in ROWS] == []


@pytest.mark.parametrize(("cuda", "platform"), CONFIGS)
def test_every_entry_is_a_gpu_the_configs_platform_has(cuda, platform):
    # e.g. 11.0 (Jetson Thor) belongs in the aarch64 row only: no linux-64 or win-64 machine
    # runs it, so SASS for it there is build time and package size for nobody.
    promise = parse_arch_list(ROWS[(cuda, platform)])
    assert sorted(promise.sass - runnable(cuda, platform)) == []


def _wheel_root(component: str, cuda: str) -> Path:
    from fixtures.standin_channel.cuda import CudaWheelError, toolkit, wheel_root

    try:
        if component == "toolkit":
            return toolkit(cuda)
        return wheel_root(component, cuda)
    except CudaWheelError as error:
        pytest.skip(f"CUDA {cuda}: {error}")


@pytest.mark.slow
@pytest.mark.parametrize(("cuda", "platform"), CONFIGS)
def test_nvcc_compiles_every_entry_and_ptx_for_plus_ptx(cuda, platform, tmp_path):
    promise = parse_arch_list(ROWS[(cuda, platform)])
    nvcc = _wheel_root("toolkit", cuda) / "bin" / "nvcc"
    gencode = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in sorted(promise.sass)]
    gencode += [f"-gencode=arch=compute_{a},code=compute_{a}" for a in sorted(promise.ptx)]
    (tmp_path / "k.cu").write_text(KERNEL)
    result = subprocess.run(
        [nvcc, "-ccbin", "g++", *gencode, "-c", "k.cu", "-o", "k.o"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"nvcc {cuda} refuses {promise.text}:\n{result.stderr}"
    with (tmp_path / "k.o").open("rb") as stream:
        code = read_elf(stream).device_code
    assert {c.arch for c in code if c.kind == "sass"} == promise.sass
    assert {c.arch for c in code if c.kind == "ptx"} == promise.ptx


@pytest.mark.slow
@pytest.mark.parametrize(("cuda", "platform"), CONFIGS)
def test_ptxas_of_the_cuda_version_assembles_every_entry(cuda, platform, tmp_path):
    promise = parse_arch_list(ROWS[(cuda, platform)])
    ptxas = _wheel_root("nvcc", cuda) / "bin" / "ptxas"
    refused = {}
    for arch in sorted(promise.sass):
        source = tmp_path / f"k{arch}.ptx"
        source.write_text(PTX_KERNEL.format(isa=PTX_ISA[cuda], arch=arch))
        result = subprocess.run(
            [ptxas, f"-arch=sm_{arch}", str(source), "-o", str(tmp_path / f"k{arch}.cubin")],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode:
            refused[arch] = result.stderr.strip()
    assert refused == {}, f"ptxas {cuda} refuses entries of {promise.text}: {refused}"
