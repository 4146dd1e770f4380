"""recipe/build.sh's osx-arm64 and osx-64 branches, executed into Mach-O packages.

The macOS cross toolchain (tests/fixtures/macos) compiles the miniature torch for each target
through build.sh's stages, as recipe-v1.yaml runs them; conda-build's Mach-O relocation
follows each output, and the packages go through ``python -m tools check --config osx_…``.
The flows (tests/fixtures/macos/flows.py): both layouts on osx-arm64, generic and MKL on
osx-64 (cross-built from arm64, conda-forge.yml), the pytorch outputs in both Python orders,
and MKL on osx-arm64, which build.sh refuses. docs/testing.md says what these runs prove
and what only a Mac can.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from fixtures.macos.cross_build import MacCondaBuild
from fixtures.macos.flows import FLOWS, Built, pack_flow, run_flow, stage, tools_check, variant
from fixtures.macos.relocate import is_macho, read
from fixtures.minitorch.fake_conda_build import Package, site_packages_of
from fixtures.minitorch.support import (
    CORE_OBJECTS,
    PYTHON_BOUND,
    base_venv,
    build_sh_error,
    two_interpreters,
)

pytestmark = pytest.mark.slow

ARCHS = {"osx-arm64": "arm64", "osx-64": "x86_64"}
LIBTORCH_DYLIBS = ("libc10", "libshm", "libtorch", "libtorch_cpu", "libtorch_global_deps")
MACHO_RULES = (
    "macho.arch",
    "macho.minos",
    "macho.install-name",
    "macho.load-dylib",
    "macho.rpath",
    "macho.signature",
    "macho.openmp",
)


@pytest.fixture(scope="module", params=sorted(FLOWS))
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Built:
    return run_flow(FLOWS[request.param], tmp_path_factory.mktemp(request.param))


def _machos(package: Package) -> dict[str, Path]:
    return {rel: package.root / rel for rel in package.files if is_macho(package.root / rel)}


# ---------------------------------------------------------------- what each output holds


def test_the_compile_stage_installs_nothing(built: Built) -> None:
    assert built.staging.files == frozenset()


def test_libtorch_ships_dylibs_headers_cmake_config_and_the_shm_manager(built: Built) -> None:
    assert built.libtorch.files == {
        *(f"lib/{name}.dylib" for name in LIBTORCH_DYLIBS),
        "bin/torch_shm_manager",
        "include/ATen/ATen.h",
        "include/c10/c10.h",
        "include/torch/torch.h",
        "share/cmake/ATen/ATenConfig.cmake",
        "share/cmake/Torch/TorchConfig.cmake",
    }


def test_each_pytorch_output_ships_its_pythons_bundle_and_links_to_libtorch(
    built: Built,
) -> None:
    for which, package in built.pytorch.items():
        site = site_packages_of(package)
        soabi = f"cpython-{site.split('python')[-1].split('/')[0].replace('.', '')}-darwin"
        extension = f"{site}/torch/_C.{soabi}.so"
        assert extension in package.files, (which, sorted(package.files))
        assert read(package.root / extension).filetype == "bundle"
        assert "lib/libtorch_python.dylib" in package.files
        torch_lib = package.root / site / "torch" / "lib"
        linked = {p.name: os.readlink(p) for p in torch_lib.iterdir() if p.is_symlink()}
        assert linked == {
            f"{name}.dylib": f"../../../../{name}.dylib"
            for name in (*LIBTORCH_DYLIBS, "libtorch_python")
        }
        # The wheel bundles the OpenMP runtime; the package leaves it to llvm-openmp.
        assert not any(f.endswith("libomp.dylib") for f in package.files)
        # drop_direct_url's `sed -i.bak` edited RECORD and left no backup.
        info = {f for f in package.files if ".dist-info/" in f}
        assert not any(f.endswith(("direct_url.json", "RECORD.bak")) for f in info)
        record = next(package.root / f for f in info if f.endswith("/RECORD"))
        assert "direct_url.json" not in record.read_text()


def test_every_mach_o_file_is_for_the_target(built: Built) -> None:
    arch = ARCHS[built.flow.target_platform]
    for package in (built.libtorch, *built.pytorch.values()):
        machos = _machos(package)
        assert machos, package.name
        assert {rel: read(path).arch for rel, path in machos.items()} == dict.fromkeys(
            machos, arch
        )


def test_libtorch_cpu_links_openmp_and_the_blas_interfaces_by_rpath(built: Built) -> None:
    linked = set(read(built.libtorch.root / "lib" / "libtorch_cpu.dylib").dylibs)
    assert "@rpath/libomp.dylib" in linked
    blas = {"@rpath/libcblas.3.dylib", "@rpath/libblas.3.dylib", "@rpath/liblapack.3.dylib"}
    assert (blas <= linked) == (built.flow.blas_impl == "generic"), linked
    assert not any("openblas" in name for name in linked)


# ---------------------------------------------------------------- build.sh's macOS branches


def _cache_value(built: Built, name: str) -> str | None:
    for line in built.cache.splitlines():
        if line.startswith(f"{name}:"):
            return line.split("=", 1)[1]
    return None


def test_osx_64_alone_compiles_with_target_os_osx(built: Built) -> None:
    commands = built.compile_commands
    assert commands
    defined = ["-DTARGET_OS_OSX=1" in c.split() for c in commands]
    assert set(defined) == {built.flow.target_platform == "osx-64"}


def test_the_link_flags_keep_libtorch_global_deps_dependencies(built: Built) -> None:
    flags = _cache_value(built, "CMAKE_SHARED_LINKER_FLAGS") or ""
    assert "-headerpad_max_install_names" in flags
    assert "-dead_strip_dylibs" not in flags


def test_arm64_builds_without_mkldnn_and_blas_follows_the_variant(built: Built) -> None:
    expected = "0" if built.flow.target_platform == "osx-arm64" else None
    assert _cache_value(built, "USE_MKLDNN") == expected
    blas = {"generic": "OpenBLAS", "mkl": "MKL"}[built.flow.blas_impl]
    assert _cache_value(built, "BLAS") == blas


def test_the_core_compiles_once_and_the_bindings_once_per_python(built: Built) -> None:
    launched = built.launched
    assert {o: launched[o] for o in CORE_OBJECTS} == dict.fromkeys(CORE_OBJECTS, 1), launched
    assert launched[PYTHON_BOUND] == built.pythons, launched


# ---------------------------------------------------------------- the packages, checked


def test_tools_check_passes_every_macho_rule_on_libtorch_and_pytorch(
    built: Built, tmp_path: Path
) -> None:
    by_check = tools_check(pack_flow(built, tmp_path), built.flow.config)
    failing = {c: f for c, fs in by_check.items() for f in fs if f["status"] != "pass"}
    assert failing == {}
    packages = 1 + len(built.pytorch)
    for rule in MACHO_RULES:
        if rule == "macho.signature" and built.flow.target_platform == "osx-64":
            assert rule not in by_check  # x86_64 code needs no signature
            continue
        assert len(by_check.get(rule, [])) == packages, (rule, by_check.get(rule))


# ---------------------------------------------------------------- MKL on arm64


def test_mkl_on_osx_arm64_is_refused_before_anything_compiles(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    first, _ = two_interpreters()
    scratch = tmp_path_factory.mktemp("osx-arm64-mkl")
    flow = FLOWS["osx-arm64-setuptools"]
    build = MacCondaBuild(
        scratch, {**variant(flow), "blas_impl": "mkl"}, megabuild_python=first.tag
    )
    result = build.attempt_output("", base_venv(first), [], stage("compile"))
    assert result.returncode == 2, result.stderr[-2000:]
    line = build_sh_error(result.stderr)
    assert "blas_impl='mkl' on target_platform='osx-arm64'" in line
    assert not (build.src_dir / "build").exists()
