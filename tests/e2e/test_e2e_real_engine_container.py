"""The CUDA config end to end through the container path (issues 22 and 35): the feedstock
switched to rattler-build, tests/fixtures/fake_docker as the container engine,
.scripts/build_steps.sh inside, py-rattler-build as the engine there (tools/rattler_build/).

The config (the newest CUDA version, generic BLAS) is compiled by the real nvcc of its version
with the recipe's architecture list and links the real libcudart, libcublas and libcusolver:
the stand-in channel makes conda-forge's CUDA packages from NVIDIA's wheels. Then the packages
are checked with `python -m tools check`, solved and installed with py-rattler, and smoke
tested. The embedded engine's builds are tests/e2e/test_e2e_real_engine.py's; each build is made
in one test module alone.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.conda_packages import install, solve
from helpers.e2e_feedstock import PYTHONS, REPO, E2EFeedstock, e2e_channel
from helpers.e2e_real import (
    CUDA,
    CUDA_VERSION,
    built,
    check_left,
    check_pins,
    cuda_elves,
    packages_of,
    records_of,
    run_python,
    stray_bytecode,
    tools,
)

from tools.render.cuda_archs import parse_arch_list, read_rows, set_name

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="builds linux-64 packages"),
]


@pytest.fixture(scope="module")
def channel(tmp_path_factory) -> Path:
    return e2e_channel(tmp_path_factory)


@pytest.fixture(scope="module")
def cuda(tmp_path_factory, channel: Path) -> E2EFeedstock:
    return built(tmp_path_factory, channel, CUDA, embedded=False)


# ------------------------------------------------------------------ the builds


def test_cuda_build_leaves_both_linalg_flavours(cuda) -> None:
    packages = packages_of(cuda)
    assert sorted(packages) == ["libtorch", "libtorch-cuda-linalg", "pytorch", "pytorch-gpu"]
    flavours = sorted(p.split("_")[1] for p in packages["libtorch-cuda-linalg"])
    assert flavours == ["magma", "nomagma"]
    assert len(packages["pytorch"]) == len(PYTHONS)
    assert (cuda.artifacts / "SHA256SUMS").is_file() and (cuda.artifacts / "summary.json").is_file()


@pytest.mark.parametrize("which", ["cuda"])
def test_every_output_pins_the_libtorch_of_its_own_build(which, request) -> None:
    check_pins(request.getfixturevalue(which))


def test_a_build_for_every_gpu_is_not_down_prioritized(cuda) -> None:
    # track_features (recipe/meta.yaml; down_prioritize_variant in recipe-v1.yaml) marks a
    # fork's narrower GPU set only: on conda-forge's full set it would push every user's
    # solver off the packages this feedstock ships.
    records = records_of(cuda)
    assert {r["name"] for r in records.values()} >= {"libtorch", "pytorch", "pytorch-gpu"}
    assert {
        name: r["track_features"] for name, r in records.items() if r.get("track_features")
    } == {}


@pytest.mark.parametrize("which", ["cuda"])
def test_no_package_carries_bytecode_outside_site_packages(which, request) -> None:
    # Bytecode of the recipe"s helpers (info/recipe/__pycache__, byte-compiled while the
    # build ran them) or of the source"s tools/ (the tests" source_files, imported by the
    # build backend) embeds the engine"s random work paths, and nobody asked for it.
    assert stray_bytecode(request.getfixturevalue(which)) == {}


# ------------------------------------------------------- the toolkit's check


@pytest.mark.parametrize("which", ["cuda"])
def test_tools_check_passes_on_the_built_packages(which, request) -> None:
    left = check_left(request.getfixturevalue(which))
    assert not left, "\n".join(f"{f['check']} {f['path']}: {f['detail']}" for f in left[:20])


# ---------------------------------------------------- solve, install, import


@pytest.mark.parametrize(
    ("spec", "flavour", "has_magma"),
    [
        ("libtorch-cuda-linalg", "magma", True),
        ("libtorch-cuda-linalg * *nomagma*", "nomagma", False),
    ],
)
def test_cuda_linalg_flavour_magma_by_default_nomagma_by_build_string(
    cuda, channel, spec, flavour, has_magma, tmp_path
) -> None:
    records = solve([cuda.artifacts, channel], ["pytorch", spec, "python 3.12.*"], CUDA_VERSION)
    [linalg] = [r for r in records if r.name.normalized == "libtorch-cuda-linalg"]
    assert str(linalg.build).split("_")[1] == flavour
    prefix = install(records, tmp_path / "env", tmp_path / "cache")
    # The miniature's torch.has_magma() stands for torch.cuda.has_magma (its README).
    result = run_python(prefix, "import torch; print(bool(torch.has_magma()))")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(has_magma)
    magma = sorted(p.name for p in (prefix / "lib").glob("libmagma*"))
    assert bool(magma) == has_magma, magma


# ------------------------------------------------------------ CUDA for real


def test_the_cuda_libraries_hold_device_code_and_link_the_real_cuda_libraries(cuda) -> None:
    elves = cuda_elves(cuda)
    names = sorted(k.rsplit("/", 1)[-1] for k in elves)
    assert names == ["libtorch_cuda.so"] * 1 + ["libtorch_cuda_linalg.so"] * 2, sorted(elves)
    for where, info in elves.items():
        assert "libcudart.so.13" in info.needed, (where, info.needed)
        search = info.runpath or info.rpath  # rattler-build writes DT_RPATH
        assert search and all(r.startswith("$ORIGIN") for r in search), (where, search)
        if where.endswith("libtorch_cuda.so"):
            assert "libcublas.so.13" in info.needed, info.needed
        else:
            assert "libcusolver.so.12" in info.needed, (where, info.needed)


def test_tools_check_compares_every_fatbin_with_the_recipes_arch_list(cuda) -> None:
    result = tools(cuda, "check", "build_artifacts", "--config", cuda.config, "--json")
    findings = [f for f in json.loads(result.stdout) if f["check"] == "cuda.fatbin"]
    passed = sorted(f["path"].rsplit("/", 1)[-1] for f in findings if f["status"] == "pass")
    assert passed == ["libtorch_cuda.so", "libtorch_cuda_linalg.so", "libtorch_cuda_linalg.so"]
    # The list is the recipe's own row for the e2e CUDA config (linux-64, the newest CUDA), and
    # the build holds nothing else (no warning names code the list did not ask for).
    asked = read_rows(REPO / "recipe" / "cuda_arch_lists.txt")[(CUDA_VERSION, "linux-64")]
    assert all(
        f["detail"].endswith(f", as {asked} asks") for f in findings if f["status"] == "pass"
    ), findings
    assert not [f for f in findings if "not in this config's list" in f["detail"]], findings


@pytest.fixture
def one_arch(cuda: E2EFeedstock, tmp_path: Path) -> tuple[Path, Path]:
    """A lab's tailoring of the e2e feedstock: the config's row cut to its newest entry and
    ``cuda_arch_set`` naming it (sm120ptx); (recipe folder, config file)."""
    recipe = shutil.copytree(cuda.root / "recipe", tmp_path / "recipe")
    rows = recipe / "cuda_arch_lists.txt"
    newest = read_rows(rows)[(CUDA_VERSION, "linux-64")].split(";")[-1]
    rows.write_text(f"{CUDA_VERSION} linux-64 {newest}\n")
    source = cuda.root / ".ci_support" / f"{cuda.config}.yaml"
    label = set_name(parse_arch_list(newest))  # the name render requires of that row
    assert "cuda_arch_set" not in source.read_text(), source
    text = source.read_text() + f"cuda_arch_set:\n- {label}\n"
    config = tmp_path / source.name
    config.write_text(text)
    return recipe, config


def test_a_one_arch_build_is_told_apart_from_the_default_build(cuda, one_arch) -> None:
    recipe, config = one_arch
    result = tools(cuda, "render", str(config), "--recipe-dir", str(recipe), "--json")
    assert result.returncode == 0, result.stderr
    tailored = {
        f"{o['name']}-{o['version']}-{o['build_string']}" for o in json.loads(result.stdout)
    }
    built = {p.name.removesuffix(".conda") for p in cuda.artifacts.glob("*/*.conda")}
    names = {d.rsplit("-", 2)[0] for d in built}
    assert names <= {d.rsplit("-", 2)[0] for d in tailored}
    assert not tailored & built
    cuda_tag = "cuda" + CUDA_VERSION.replace(".", "")
    assert all(re.search(rf"-{cuda_tag}_sm\d+(ptx)?_", d) for d in tailored), tailored


def test_tools_check_warns_on_the_default_builds_extra_architectures(cuda, one_arch) -> None:
    recipe, config = one_arch
    check = ["check", "build_artifacts", "--config", str(config), "--recipe-dir", str(recipe)]
    result = tools(cuda, *check, "--only", "cuda.fatbin", "--json")
    assert result.returncode == 0, result.stdout + result.stderr  # nothing asked for is missing
    newest = read_rows(recipe / "cuda_arch_lists.txt")[(CUDA_VERSION, "linux-64")]
    warned = [
        f
        for f in json.loads(result.stdout)
        if f["status"] == "warn" and f["detail"].endswith(f": not in this config's list {newest}")
    ]
    assert sorted(f["path"].rsplit("/", 1)[-1] for f in warned) == [
        "libtorch_cuda.so",
        "libtorch_cuda_linalg.so",
        "libtorch_cuda_linalg.so",
    ], warned
    default = read_rows(REPO / "recipe" / "cuda_arch_lists.txt")[(CUDA_VERSION, "linux-64")]
    oldest = "sm_" + default.split(";")[0].split("+")[0].replace(".", "")
    assert all(f["detail"].startswith(f"{oldest}, ") for f in warned), warned


def test_the_gpu_smoke_test_installs_the_build_and_runs_the_miniatures_kernel(
    cuda, channel, tmp_path
) -> None:
    kernel_test = REPO / "tests" / "fixtures" / "minitorch" / "gpu_kernels.py"
    smoke = [sys.executable, "-m", "tools", "smoke", str(cuda.artifacts)]
    smoke += ["--channel", str(channel), "--python", "3.12", "--kernel-test", str(kernel_test)]
    result = subprocess.run(
        [*smoke, "--prefix", str(tmp_path / "env")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    [verdict] = [line for line in result.stdout.splitlines() if "gpu kernels" in line]
    # Without a GPU, one clear skip line; with one, the kernel's result.
    print(verdict)
    assert verdict.startswith(
        ("skip gpu kernels: no GPU visible (libcudart 13", "ok   gpu kernels")
    )
