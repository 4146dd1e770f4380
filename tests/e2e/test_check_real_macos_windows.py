"""``python -m tools check`` on upstream's real 2.15.0 macOS arm64 and Windows wheels, against
the feedstock's own osx-arm64 and win-64 configs, with what a reviewer expects of each.

Every binary of each wheel is found here independently (by its first bytes) and the check
must say it read that many: a verdict never passes what it did not read. The wheels come
from the tests' cache (tests/conftest.py's upstream_2_15_wheel, which the layout replays
share).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from helpers import feedstock_matrix
from helpers.cli import run_tools

from tools.check.formats import binary_format

pytestmark = pytest.mark.slow


def _binaries(wheel: Path, kind: str) -> set[str]:
    found = set()
    with zipfile.ZipFile(wheel) as archive:
        for entry in archive.infolist():
            if not entry.is_dir():
                with archive.open(entry) as stream:
                    if binary_format(stream.read(4096)) == kind:
                        found.add(entry.filename)
    return found


def _check(wheel: Path, config: str) -> tuple[int, dict[str, list[dict]]]:
    result = run_tools("check", "--json", "--config", config, str(wheel), timeout=600)
    by_check: dict[str, list[dict]] = {}
    for finding in json.loads(result.stdout):
        by_check.setdefault(finding["check"], []).append(finding)
    return result.returncode, by_check


def _members(findings: list[dict], status: str) -> set[str]:
    return {f["path"].split(":", 1)[1] for f in findings if f["status"] == status}


@pytest.fixture(scope="module")
def macos(upstream_2_15_wheel):
    wheel = upstream_2_15_wheel("osx-arm64")
    config = feedstock_matrix.need(platform="osx-arm64", cuda=False)
    return wheel, config, _check(wheel, config.name)


@pytest.fixture(scope="module")
def windows(upstream_2_15_wheel):
    wheel = upstream_2_15_wheel("win-64")
    config = feedstock_matrix.need(platform="win-64", cuda=False)
    return wheel, config, _check(wheel, config.name)


def test_the_macos_wheel_has_every_mach_o_file_read(macos):
    wheel, _, (_, by_check) = macos
    expected = _binaries(wheel, "Mach-O")
    (counted,) = by_check["binary.formats"]
    assert counted["counts"] == {"ELF": 0, "Mach-O": len(expected), "PE": 0, "unread": 0}
    assert {"torch/lib/libtorch_cpu.dylib", "torch/_C.cpython-312-darwin.so"} <= expected


def test_the_macos_wheel_needs_a_newer_macos_than_the_configs_target(macos):
    """Upstream builds for macOS 14 (the wheel's tag); conda-forge's osx configs promise the
    c_stdlib_version / MACOSX_DEPLOYMENT_TARGET they set. Upstream's bundled libomp.dylib
    is built for 11.0 and is the one file that loads there."""
    wheel, config, (code, by_check) = macos
    target = config.first("MACOSX_DEPLOYMENT_TARGET")
    assert code == 1
    failing = _members(by_check["macho.minos"], "fail")
    assert failing == _binaries(wheel, "Mach-O") - {"torch/lib/libomp.dylib"}
    details = {f["detail"] for f in by_check["macho.minos"]}
    assert details == {
        f"needs macOS 14.0 (minos), above the config's deployment target {target} "
        "(MACOSX_DEPLOYMENT_TARGET / c_stdlib_version): it does not load on the macOS "
        f"{target} the package promises"
    }


def test_the_macos_wheel_bundles_its_own_openmp(macos):
    """Upstream copies LLVM's libomp.dylib into torch/lib (named for its build machine's
    /opt/llvm-openmp) and links libtorch_cpu against that copy; conda-forge's is
    llvm-openmp's, shared by every package of the environment."""
    _, _, (_, by_check) = macos
    openmp = {f["path"].split(":", 1)[1]: f["detail"] for f in by_check["macho.openmp"]}
    assert openmp["torch/lib/libomp.dylib"].startswith("bundles an OpenMP runtime")
    assert openmp["torch/lib/libtorch_cpu.dylib"] == (
        "links @loader_path/libomp.dylib, which resolves to the package's own copy "
        "torch/lib/libomp.dylib, not llvm-openmp's"
    )
    (install_name,) = by_check["macho.install-name"][:1]
    assert install_name["path"].endswith(":torch/lib/libomp.dylib")
    assert (
        "'/opt/llvm-openmp/lib/libomp.dylib' is not @rpath/libomp.dylib" in (install_name["detail"])
    )


def test_the_macos_wheels_links_rpaths_and_signatures_hold(macos):
    """What upstream gets right: every library resolves (torch/lib, the system's libc++ a
    wheel may use, /usr/lib and the frameworks), every LC_RPATH is @loader_path-relative,
    and every arm64 file carries a signature that matches its load commands."""
    _, _, (_, by_check) = macos
    for check in ("macho.arch", "macho.load-dylib", "macho.rpath", "macho.signature"):
        assert [f["status"] for f in by_check[check]] == ["pass"], check


def test_the_windows_wheel_has_every_pe_file_read(windows):
    wheel, _, (_, by_check) = windows
    expected = _binaries(wheel, "PE")
    (counted,) = by_check["binary.formats"]
    assert counted["counts"] == {"ELF": 0, "Mach-O": 0, "PE": len(expected), "unread": 0}
    assert {"torch/lib/torch_cpu.dll", "torch/_C.cp312-win_amd64.pyd"} <= expected


def test_the_windows_wheels_imports_resolve_to_torch_lib_windows_and_the_ucrt(windows):
    """All AMD64; torch/lib holds c10.dll, uv.dll and Intel's libiomp5md.dll that
    torch_cpu.dll imports; torch_python.dll imports the interpreter's python312.dll; the C
    runtime is the UCRT with the Visual C++ redistributable's VCRUNTIME140/MSVCP140."""
    _, _, (code, by_check) = windows
    assert code == 0
    assert [f["detail"] for f in by_check["pe.machine"]] == ["11 PE files, all AMD64"]
    assert [f["status"] for f in by_check["pe.imports"]] == ["pass"]
    assert [f["detail"] for f in by_check["pe.crt"]] == [
        "11 PE files use the UCRT and vc14_runtime; no debug or MinGW runtime"
    ]
