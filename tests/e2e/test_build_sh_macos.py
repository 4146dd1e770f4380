"""recipe/build.sh's osx-arm64 and osx-64 branches, executed into Mach-O packages.

The macOS cross toolchain (tests/helpers/macos) compiles the miniature torch for each target
through build.sh's stages, as recipe-v1.yaml runs them; conda-build's Mach-O relocation
follows each output, and the packages go through ``python -m tools check --config osx_…``.
The flows (tests/helpers/macos/flows.py): both layouts on osx-arm64, generic and MKL on
osx-64 (cross-built from arm64, conda-forge.yml), the pytorch outputs in both Python orders,
and MKL on osx-arm64, which build.sh refuses. docs/testing.md says what these runs prove
and what only a Mac can.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.macos.cross_build import MacCondaBuild
from helpers.macos.flows import (
    FLOWS,
    LIBTORCH_DEPENDS,
    Built,
    built_flow,
    pack_flow,
    stage,
    tools_check,
    variant,
)
from helpers.macos.relocate import is_macho, read
from helpers.minitorch.fake_conda_build import Package, site_packages_of
from helpers.minitorch.support import (
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


_RUNS: dict[str, Built] = {}


def _run(name: str, tmp_path_factory: pytest.TempPathFactory) -> Built:
    """Each flow once per module, whichever fixture asks first."""
    if name not in _RUNS:
        _RUNS[name] = built_flow(name, tmp_path_factory.mktemp(name))
    return _RUNS[name]


@pytest.fixture(scope="module", params=sorted(FLOWS))
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Built:
    return _run(request.param, tmp_path_factory)


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
        "include/ATen/core/Tensor.h",
        "include/c10/c10.h",
        "include/torch/torch.h",
        "include/torch/extension.h",
        "include/torch/version.h",
        "include/torch/csrc/autograd/variable.h",
        "include/torch/csrc/autograd/python_variable.h",
        "include/torch/csrc/utils/pybind.h",
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
        assert "torch/lib/libomp.dylib" in built.wheel
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
        assert {rel: read(path).arch for rel, path in machos.items()} == dict.fromkeys(machos, arch)


def test_libtorch_cpu_links_openmp_and_the_blas_interfaces_by_rpath(built: Built) -> None:
    linked = set(read(built.libtorch.root / "lib" / "libtorch_cpu.dylib").dylibs)
    assert "@rpath/libomp.dylib" in linked
    blas = {"@rpath/libcblas.3.dylib", "@rpath/libblas.3.dylib", "@rpath/liblapack.3.dylib"}
    assert (blas <= linked) == (built.flow.blas_impl == "generic"), linked
    assert not any("openblas" in name for name in linked)


# ---------------------------------------------------------------- build.sh's macOS branches


def _cache_value(built: Built, name: str) -> str | None:
    for line in built.cmake_cache.splitlines():
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


def test_libtorchs_python_link_check_lists_every_dylib_with_otool(built: Built) -> None:
    listed = {Path(call.split()[-1]).name for call in built.otool_for_libtorch}
    assert {f"{name}.dylib" for name in LIBTORCH_DYLIBS} <= listed, built.otool_for_libtorch
    assert all(call.split()[0] == "-L" for call in built.otool_for_libtorch)


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


# ---------------------------------------------------------------- each macho rule, broken once


def _tool(built: Built, name: str) -> Path:
    return built.toolchain.tool(built.flow.target_platform, name)


Change = Callable[[Path], object]


def _broken(built: Built, tmp_path: Path, change: Change) -> Package:
    """A copy of the flow's libtorch package with ``change(root)`` applied."""
    root = tmp_path / "libtorch"
    shutil.copytree(built.libtorch.root, root, symlinks=True)
    change(root)
    return Package("libtorch", root, built.libtorch.files)


def _absolute_rpath(built: Built) -> Change:
    prefix_lib = f"{built.prefix}/lib"
    return lambda root: subprocess.run(
        [
            _tool(built, "install_name_tool"),
            "-add_rpath",
            prefix_lib,
            root / "lib" / "libtorch_cpu.dylib",
        ],
        check=True,
    )


def _absolute_install_name(built: Built) -> Change:
    name = f"{built.prefix}/lib/libc10.dylib"
    return lambda root: subprocess.run(
        [_tool(built, "install_name_tool"), "-id", name, root / "lib" / "libc10.dylib"],
        check=True,
    )


def _build_machine_library(built: Built) -> Change:
    return lambda root: subprocess.run(
        [
            _tool(built, "install_name_tool"),
            "-change",
            "@rpath/libc10.dylib",
            "/opt/homebrew/lib/libc10.dylib",
            root / "lib" / "libtorch.dylib",
        ],
        check=True,
    )


def _header_page_edited(root: Path) -> None:
    """One byte of the first page changed after signing, past the load commands (the
    headerpad): the loader's page hash no longer matches."""
    path = root / "lib" / "libtorch_cpu.dylib"
    data = bytearray(path.read_bytes())
    sizeofcmds = int.from_bytes(data[20:24], "little")
    at = 32 + sizeofcmds + 16  # a 64-bit header is 32 bytes
    assert data[at] == 0
    data[at] = 1
    path.write_bytes(bytes(data))


def _minos_raised(root: Path, version: int = 0x000F0000) -> None:
    """LC_BUILD_VERSION's minos set to macOS 15.0 in libtorch_cpu, as a too new
    MACOSX_DEPLOYMENT_TARGET (or an SDK default) would record it."""
    path = root / "lib" / "libtorch_cpu.dylib"
    data = bytearray(path.read_bytes())
    ncmds = int.from_bytes(data[16:20], "little")
    at = 32
    for _ in range(ncmds):
        cmd, size = (int.from_bytes(data[at + i : at + i + 4], "little") for i in (0, 4))
        if cmd == 0x32:  # LC_BUILD_VERSION: cmd, cmdsize, platform, minos, sdk, ntools
            data[at + 12 : at + 16] = version.to_bytes(4, "little")
            break
        at += size
    else:
        raise AssertionError("no LC_BUILD_VERSION")
    path.write_bytes(bytes(data))


BREAKS = {
    # rule: (flow, the change, the failing file)
    "macho.rpath": ("osx-arm64-setuptools", _absolute_rpath, "lib/libtorch_cpu.dylib"),
    "macho.install-name": ("osx-arm64-setuptools", _absolute_install_name, "lib/libc10.dylib"),
    "macho.load-dylib": ("osx-arm64-setuptools", _build_machine_library, "lib/libtorch.dylib"),
    "macho.signature": (
        "osx-arm64-setuptools",
        lambda built: _header_page_edited,
        "lib/libtorch_cpu.dylib",
    ),
    "macho.minos": ("osx-64-generic", lambda built: _minos_raised, "lib/libtorch_cpu.dylib"),
}


@pytest.mark.parametrize("rule", sorted(BREAKS))
def test_tools_check_fails_the_rule_a_broken_libtorch_breaks(
    rule: str, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    flow, change, member = BREAKS[rule]
    built = _run(flow, tmp_path_factory)
    broken = _broken(built, tmp_path, change(built))
    by_check = tools_check(
        pack_flow(built, tmp_path / "packages", {"libtorch": broken}), built.flow.config
    )
    failing = {
        (f["check"], f["path"].split(":", 1)[-1])
        for fs in by_check.values()
        for f in fs
        if f["status"] == "fail"
    }
    assert (rule, member) in failing, by_check.get(rule)
    # The break is the only thing wrong (an edit of an arm64 file also voids its signature).
    assert {c for c, _ in failing} <= {rule, "macho.signature"}, failing


def test_tools_check_fails_openmp_without_llvm_openmp_among_the_run_dependencies(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    built = _run("osx-arm64-setuptools", tmp_path_factory)
    depends = [d for d in LIBTORCH_DEPENDS if not d.startswith("llvm-openmp")]
    by_check = tools_check(pack_flow(built, tmp_path, libtorch_depends=depends), built.flow.config)
    failing = [f for f in by_check["macho.openmp"] if f["status"] == "fail"]
    assert [f["path"].split(":", 1)[-1] for f in failing] == ["lib/libtorch_cpu.dylib"]
    assert "llvm-openmp is not a run dependency" in failing[0]["detail"]


def test_tools_check_fails_arch_for_x86_64_files_in_an_arm64_package(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    built = _run("osx-64-generic", tmp_path_factory)
    arm64 = FLOWS["osx-arm64-setuptools"].config
    by_check = tools_check(pack_flow(built, tmp_path, subdir="osx-arm64"), arm64)
    failing = {f["path"].split(":", 1)[-1] for f in by_check["macho.arch"] if f["status"] == "fail"}
    assert {f"lib/{name}.dylib" for name in LIBTORCH_DYLIBS} <= failing
