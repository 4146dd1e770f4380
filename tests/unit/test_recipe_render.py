"""What every CI config of the recipe renders to: outputs, pins, exclusions, build numbers.

Each test renders every `.ci_support` config with the toolkit (`tools.render.config`) and checks
one property of the recipe against what the config's own variant values say it must be.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from pathlib import Path

import pytest
import rattler
from helpers import feedstock_matrix
from helpers.recipe_release import current, recorded_commit
from ruamel.yaml import YAML

from tools.render.config import RenderedOutput, list_configs, render_config

VERSION = current().version
BUILD = current().build  # the recipe's own build number, under every offset
MEGABUILD_PYTHON = "3.12"
CONFIGS = list_configs()


def built(config: str) -> list[RenderedOutput]:
    return [o for o in render_config(config) if not o.skip]


@functools.cache  # read at collection for the parameters, once per file (issue 59)
def config_values(config: str) -> dict:
    root = Path(__file__).resolve().parents[2]
    return YAML(typ="safe").load((root / ".ci_support" / f"{config}.yaml").read_text())


def is_cuda(config: str) -> bool:
    return config_values(config)["cuda_compiler_version"][0] != "None"


def variant_tag(config: str) -> str:
    """cpu, cuda130, or cuda130_sm90 where the config names a GPU set narrower than full."""
    values = config_values(config)
    cuda = values["cuda_compiler_version"][0]
    if cuda == "None":
        return "cpu"
    arch_set = values.get("cuda_arch_set", ["full"])[0]
    return "cuda" + cuda.replace(".", "") + ("" if arch_set == "full" else f"_{arch_set}")


def blas(config: str) -> str:
    return config_values(config)["blas_impl"][0]


def base_number(config: str) -> int:
    return BUILD + 200 * is_cuda(config) + 100 * (blas(config) == "mkl")


def has_linalg(config: str) -> bool:
    return config.startswith("linux") and is_cuda(config)


def only(outputs: list[RenderedOutput], name: str) -> RenderedOutput:
    (output,) = [o for o in outputs if o.name == name]
    return output


def record(output: RenderedOutput) -> rattler.PackageRecord:
    return rattler.PackageRecord(
        name=output.name,
        version=output.version,
        build=rattler.BuildString(output.build_string),
        build_number=output.build_number,
        subdir=output.subdir,
    )


def matches(spec: str, output: RenderedOutput) -> bool:
    return rattler.MatchSpec(spec).matches(record(output))


def specs_named(specs, name: str) -> list[str]:
    return [s for s in specs if s.split()[0] == name]


def test_there_are_ci_configs_to_check():
    # an empty .ci_support would leave every parametrized test here uncollected, and green
    assert CONFIGS, ".ci_support holds no configs: run `python -m tools matrix --write`"


@pytest.mark.parametrize("config", CONFIGS)
def test_outputs_are_exactly_libtorch_linalg_flavours_pytorch_per_python_and_a_metapackage(config):
    pythons = config_values(config)["python"]
    expected = Counter(
        {
            "libtorch": 1,
            "pytorch": len(pythons),
            "pytorch-gpu" if is_cuda(config) else "pytorch-cpu": 1,
        }
    )
    if has_linalg(config):
        expected["libtorch-cuda-linalg"] = 2
    assert Counter(o.name for o in built(config)) == expected


@pytest.mark.parametrize("config", CONFIGS)
def test_one_pytorch_per_python_of_the_config(config):
    pythons = config_values(config)["python"]
    pytorch = [o for o in built(config) if o.name == "pytorch"]
    assert sorted(o.variant["python"] for o in pytorch) == sorted(pythons)
    assert sorted(re.search(r"_py(\d+)_", o.build_string).group(1) for o in pytorch) == sorted(
        p.split()[0].replace(".*", "").replace(".", "") for p in pythons
    )


@pytest.mark.parametrize("config", CONFIGS)
def test_libtorch_is_compiled_once_against_the_megabuild_python(config):
    libtorch = only(built(config), "libtorch")
    assert f"python {MEGABUILD_PYTHON}.*" in libtorch.requirements["host"]
    assert "python" not in libtorch.used_vars
    assert "python_abi" not in " ".join(libtorch.requirements.get("run", ()))


@pytest.mark.parametrize("config", CONFIGS)
def test_every_output_with_files_installs_them_through_its_own_script(config):
    # conda-build builds the outputs in dependency order, not in the order meta.yaml lists them
    # (the linalg flavours before the libtorch that requires them), and recreates the host
    # prefix for every output with a script: an output without one could only package what the
    # top-level build left in the prefix, gone by then. Only the metapackage has no script.
    scriptless = [o.name for o in built(config) if not o.script]
    assert scriptless == ["pytorch-gpu" if is_cuda(config) else "pytorch-cpu"]


@pytest.mark.parametrize("config", [c for c in CONFIGS if has_linalg(c)])
def test_linalg_comes_in_a_magma_and_a_nomagma_flavour(config):
    linalg = [o for o in built(config) if o.name == "libtorch-cuda-linalg"]
    assert sorted(o.variant["cuda_linalg_flavor"] for o in linalg) == ["magma", "nomagma"]


@pytest.mark.parametrize("config", [c for c in CONFIGS if not has_linalg(c)])
def test_no_linalg_package_outside_linux_cuda(config):
    assert not [o for o in built(config) if o.name == "libtorch-cuda-linalg"]


@pytest.mark.parametrize("config", CONFIGS)
def test_pytorch_pins_exactly_the_libtorch_of_its_config(config):
    outputs = built(config)
    libtorch = only(outputs, "libtorch")
    exact = f"libtorch {libtorch.version} {libtorch.build_string}"
    for pytorch in (o for o in outputs if o.name == "pytorch"):
        assert exact in pytorch.requirements["host"]
        assert exact in pytorch.requirements["run"]


@pytest.mark.parametrize("config", [c for c in CONFIGS if has_linalg(c)])
def test_libtorch_requires_a_linalg_of_its_own_config_in_either_flavour(config):
    outputs = built(config)
    (spec,) = specs_named(only(outputs, "libtorch").requirements["run"], "libtorch-cuda-linalg")
    linalg = [o for o in outputs if o.name == "libtorch-cuda-linalg"]
    assert len(linalg) == 2 and all(matches(spec, o) for o in linalg)


@pytest.mark.parametrize("config", [c for c in CONFIGS if has_linalg(c)])
def test_each_linalg_flavour_pins_back_the_libtorch_of_its_build(config):
    # Everything of libtorch's build string but the hash: conda-build renders the linalg
    # outputs before libtorch (which run-depends on them), when libtorch's hash is not known.
    outputs = built(config)
    libtorch = only(outputs, "libtorch")
    hashless = re.sub(r"_h[0-9a-f]{7}_", "_h*_", libtorch.build_string)
    for linalg in (o for o in outputs if o.name == "libtorch-cuda-linalg"):
        (spec,) = specs_named(linalg.requirements["run_constrained"], "libtorch")
        assert spec == f"libtorch {libtorch.version} {hashless}"
        assert matches(spec, libtorch)
        assert not specs_named(linalg.requirements.get("run", ()), "libtorch")


@pytest.mark.parametrize("config", [c for c in CONFIGS if has_linalg(c)])
def test_nomagma_keeps_libmagma_out_and_magma_does_not(config):
    for linalg in (o for o in built(config) if o.name == "libtorch-cuda-linalg"):
        constrained = linalg.requirements.get("run_constrained", ())
        blocked = "libmagma <0.0a0" in constrained
        assert blocked == (linalg.variant["cuda_linalg_flavor"] == "nomagma")
        devel = bool(specs_named(linalg.requirements["host"], "libmagma-devel"))
        assert devel == (linalg.variant["cuda_linalg_flavor"] == "magma")


@pytest.mark.parametrize("config", CONFIGS)
def test_cpu_and_gpu_packages_exclude_each_other(config):
    outputs = built(config)
    other = "pytorch-cpu" if is_cuda(config) else "pytorch-gpu"
    for output in outputs:
        if output.name in ("pytorch", "pytorch-cpu", "pytorch-gpu"):
            assert f"{other} <0.0a0" in output.requirements["run_constrained"], output.dist


@pytest.mark.parametrize("config", CONFIGS)
def test_metapackage_requires_exactly_this_configs_pytorch_builds(config):
    outputs = built(config)
    meta = only(outputs, "pytorch-gpu" if is_cuda(config) else "pytorch-cpu")
    (spec,) = specs_named(meta.requirements["run"], "pytorch")
    pytorch = [o for o in outputs if o.name == "pytorch"]
    assert pytorch and all(matches(spec, o) for o in pytorch)


@pytest.mark.parametrize("config", CONFIGS)
def test_cuda_packages_need_a_gpu_driver(config):
    outputs = built(config)
    for output in outputs:
        if output.name in ("pytorch", "pytorch-gpu"):
            assert ("__cuda" in output.requirements["run"]) == is_cuda(config)


@pytest.mark.parametrize("config", CONFIGS)
def test_build_numbers_prefer_cuda_then_mkl_then_magma(config):
    base = base_number(config)
    for output in built(config):
        magma = (
            output.name == "libtorch-cuda-linalg"
            and output.variant["cuda_linalg_flavor"] == "magma"
        )
        assert output.build_number == base + 50 * magma, output.dist


# The highest build conda-forge publishes of a version, before its variant offsets (the same
# +200 CUDA, +100 MKL): 2.13.0 is `{% set build = 2 %}` in pytorch-cpu-feedstock@74dd3d46's
# meta.yaml, whose packages end in _2, _102, _202, _302. A package of ours numbered at or below
# its conda-forge twin would never be chosen by a solver that sees both channels' builds.
CONDA_FORGE_PUBLISHED_BUILD = {"2.13.0": 2}


@pytest.mark.parametrize("config", CONFIGS)
def test_every_package_sorts_above_conda_forges_published_build_of_its_variant(config):
    if VERSION not in CONDA_FORGE_PUBLISHED_BUILD:
        pytest.skip(f"no record of conda-forge's builds of {VERSION} (add it here when bumping)")
    published = CONDA_FORGE_PUBLISHED_BUILD[VERSION] + base_number(config) - BUILD
    for output in built(config):
        assert output.build_number > published, output.dist


@pytest.mark.parametrize("config", CONFIGS)
def test_build_strings_carry_variant_blas_python_hash_and_number(config):
    tag, blas_impl = variant_tag(config), blas(config)
    for output in built(config):
        number = output.build_number
        if output.name == "pytorch":
            pattern = rf"{tag}_{blas_impl}_py3\d+_h[0-9a-f]{{7}}_{number}"
        elif output.name == "libtorch-cuda-linalg":
            pattern = (
                rf"{tag}_{output.variant['cuda_linalg_flavor']}_{blas_impl}_h[0-9a-f]{{7}}_{number}"
            )
        else:
            pattern = rf"{tag}_{blas_impl}_h[0-9a-f]{{7}}_{number}"
        assert re.fullmatch(pattern, output.build_string), output.dist


@pytest.mark.parametrize("config", CONFIGS)
def test_every_output_has_the_recipe_version(config):
    assert {o.version for o in built(config)} == {VERSION}


@pytest.mark.parametrize("config", CONFIGS)
def test_final_release_configs_go_to_the_final_release_label(config):
    # the channel and labels are the feedstock's (conda-forge's main, or a fork's own): the
    # one recipe/conda_build_config.yaml pairs with is_rc False
    values = config_values(config)
    (target,) = values["channel_targets"]
    cbc = feedstock_matrix.recipe_cbc(values["target_platform"][0])
    final = dict(zip(cbc["is_rc"], cbc["channel_targets"]))["False"]
    assert values["is_rc"] == ["False"] and target == final
    if target.split()[0] == "conda-forge":
        assert target == "conda-forge main"


def test_an_rc_config_builds_nothing_for_a_final_release(tmp_path):
    source = Path(__file__).resolve().parents[2] / ".ci_support" / f"{CONFIGS[0]}.yaml"
    rc_config = tmp_path / "rc.yaml"
    text = source.read_text()
    (target,) = config_values(CONFIGS[0])["channel_targets"]
    channel = target.split()[0]
    text = text.replace(f"- {target}", f"- {channel} pytorch_rc").replace("- 'False'", "- 'True'")
    rc_config.write_text(text)
    assert "pytorch_rc" in text
    outputs = render_config(rc_config)
    assert outputs and all(o.skip for o in outputs)


def pytest_runs(output: RenderedOutput) -> bool:
    return any(
        re.search(r"\bpython upstream_tests\.py\b", c) for c in output.tests.get("commands", ())
    )


@pytest.mark.parametrize("config", CONFIGS)
def test_upstream_pytest_slice_runs_everywhere_but_only_for_the_megabuild_python_under_qemu(config):
    for pytorch in (o for o in built(config) if o.name == "pytorch"):
        emulated = pytorch.build_platform != pytorch.subdir
        megabuild = pytorch.variant["python"].startswith(f"{MEGABUILD_PYTHON}.")
        assert pytest_runs(pytorch) == (megabuild or not emulated), pytorch.dist


@pytest.mark.parametrize("config", CONFIGS)
def test_pytorch_checks_its_variant_with_check_torch(config):
    for pytorch in (o for o in built(config) if o.name == "pytorch"):
        (command,) = [c for c in pytorch.tests["commands"] if c.startswith("python check_torch.py")]
        assert f"--git-version {recorded_commit()} " in command
        assert f"--blas {blas(config)}" in command
        assert f"--cuda {config_values(config)['cuda_compiler_version'][0]}" in command
        assert f"--megabuild-python {MEGABUILD_PYTHON}" in command


@pytest.mark.parametrize("config", [c for c in CONFIGS if has_linalg(c)])
def test_linalg_tests_import_this_configs_megabuild_pytorch(config):
    outputs = built(config)
    tag = MEGABUILD_PYTHON.replace(".", "")
    wanted = [o for o in outputs if o.name == "pytorch" and f"_py{tag}_" in o.build_string]
    for linalg in (o for o in outputs if o.name == "libtorch-cuda-linalg"):
        (spec,) = specs_named(linalg.tests["requires"], "pytorch")
        assert [o for o in outputs if o.name == "pytorch" and matches(spec, o)] == wanted


@pytest.mark.parametrize("config", [c for c in CONFIGS if has_linalg(c)])
def test_each_linalg_flavour_checks_its_own_magma_linkage_and_has_magma(config):
    for linalg in (o for o in built(config) if o.name == "libtorch-cuda-linalg"):
        commands = " ".join(linalg.tests["commands"])
        magma = linalg.variant["cuda_linalg_flavor"] == "magma"
        assert ("nomagma flavour" in commands) != magma
        assert ("magma flavour, but" in commands.replace("nomagma flavour, but", "")) == magma


def test_windows_cuda_configs_avoid_cuda_12_9():
    # nvcc 12.9 crashes compiling SegmentReduce.cu on Windows (pytorch#156181): win-64 builds
    # CUDA 12.8 instead (recipe/conda_build_config.yaml).
    windows = {
        config_values(c)["cuda_compiler_version"][0]
        for c in CONFIGS
        if config_values(c)["target_platform"][0] == "win-64"
    }
    if windows <= {"None"}:
        pytest.skip(".ci_support holds no win-64 CUDA config")
    assert "12.9" not in windows


@pytest.mark.parametrize("config", CONFIGS)
def test_only_windows_pytorch_fails_on_two_openmp_runtimes(config):
    # issue 30 item 14: MSVC's vcomp140, Intel's libiomp5md (MKL) and LLVM's libomp can all
    # load into one Windows process; recipe/check_openmp.py lists them after torch and numpy
    for pytorch in (o for o in built(config) if o.name == "pytorch"):
        commands = pytorch.tests["commands"]
        windows = pytorch.subdir == "win-64"
        assert ("python check_openmp.py" in commands) == windows, pytorch.dist
        if windows:
            assert "check_openmp.py" in pytorch.tests["files"]
            assert commands.index("python check_openmp.py") < next(
                i for i, c in enumerate(commands) if c.startswith("python check_torch.py")
            )


@pytest.mark.parametrize("config", CONFIGS)
def test_windows_and_macos_take_llvm_openmp_and_linux_gcc_s(config):
    # Windows as conda-forge's 2.13.0 (patch 0012 compiles MSVC's OpenMP for it); Linux: libgomp
    for output in (o for o in built(config) if o.name in ("libtorch", "pytorch")):
        expected = not output.subdir.startswith("linux")
        assert bool(specs_named(output.requirements["host"], "llvm-openmp")) == expected
        if output.name == "pytorch":
            assert bool(specs_named(output.requirements["run"], "llvm-openmp")) == expected
