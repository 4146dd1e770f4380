"""`tools check`'s macOS rules on real Mach-O files, one broken package per rule.

The dylibs are linked by clang and ld64.lld in the test (tests/helpers/foreign_binaries.py)
and packed into .conda packages for osx-arm64 / osx-64, then read as any package is.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers.foreign_binaries import conda_package, macho  # noqa: F401 (fixture)

from tools.check import Expectations, check
from tools.check.readers.macho import read_macho

OSX_ARM64 = Expectations(config="osx_arm64", subdir="osx-arm64", macos_deployment_target="12.0")
DEPENDS = ("libcxx >=21", "llvm-openmp >=21")
SYSTEM = "/usr/lib/libSystem.B.dylib"

pytestmark = pytest.mark.slow


def findings(packages, check_id, expect=OSX_ARM64):
    return [f for f in check(packages, expect) if f.check == check_id]


def fails(packages, check_id, expect=OSX_ARM64):
    return [f for f in findings(packages, check_id, expect) if f.status == "fail"]


@pytest.fixture(scope="module")
def good(macho):  # noqa: F811
    """libtorch as conda-forge builds it: @rpath install names, @loader_path LC_RPATH, libc++
    and OpenMP from their packages, minos 12.0, signed."""
    return {
        "lib/libc10.dylib": macho.dylib(
            "@rpath/libc10.dylib", links=(SYSTEM, "@rpath/libc++.1.dylib")
        ),
        "lib/libtorch_cpu.dylib": macho.dylib(
            "@rpath/libtorch_cpu.dylib",
            links=(SYSTEM, "@rpath/libc10.dylib", "@rpath/libc++.1.dylib", "@rpath/libomp.dylib"),
        ),
    }


def test_a_well_built_osx_arm64_package_passes_every_macos_rule(good, tmp_path):
    pkg = conda_package(tmp_path, good, subdir="osx-arm64", depends=DEPENDS)
    result = [f for f in check([pkg], OSX_ARM64) if f.check.startswith("macho.")]
    assert {f.check for f in result} == {
        "macho.arch",
        "macho.minos",
        "macho.install-name",
        "macho.load-dylib",
        "macho.rpath",
        "macho.signature",
        "macho.openmp",
    }
    assert [f for f in result if f.status != "pass"] == []


def test_the_count_of_mach_o_files_read_is_in_the_report_and_the_json(good, tmp_path):
    pkg = conda_package(tmp_path, good, subdir="osx-arm64", depends=DEPENDS)
    (counted,) = findings([pkg], "binary.formats")
    assert counted.detail == "read 2 binaries: 0 ELF, 2 Mach-O, 0 PE"
    assert counted.to_json()["counts"] == {"ELF": 0, "Mach-O": 2, "PE": 0, "unread": 0}


def test_a_file_without_the_subdirs_slice_fails(macho, tmp_path):  # noqa: F811
    x86 = macho.dylib("@rpath/libc10.dylib", arch="x86_64")
    pkg = conda_package(tmp_path, {"lib/libc10.dylib": x86}, subdir="osx-arm64")
    (failure,) = fails([pkg], "macho.arch")
    assert failure.path.endswith(":lib/libc10.dylib")
    assert "holds x86_64, not the arm64 slice osx-arm64 loads" in failure.detail


def test_a_minos_above_the_configs_deployment_target_fails(macho, tmp_path):  # noqa: F811
    raised = macho.dylib("@rpath/libc10.dylib", minos="14.0")
    pkg = conda_package(tmp_path, {"lib/libc10.dylib": raised}, subdir="osx-arm64")
    (failure,) = fails([pkg], "macho.minos")
    assert "needs macOS 14.0 (minos), above the config's deployment target 12.0" in failure.detail


def test_a_minos_at_the_deployment_target_passes(macho, tmp_path):  # noqa: F811
    same = macho.dylib("@rpath/libc10.dylib", minos="12.0")
    pkg = conda_package(tmp_path, {"lib/libc10.dylib": same}, subdir="osx-arm64")
    assert [f.status for f in findings([pkg], "macho.minos")] == ["pass"]


def test_a_dylib_not_named_at_rpath_fails(macho, tmp_path):  # noqa: F811
    absolute = macho.dylib("/opt/build/lib/libc10.dylib")
    pkg = conda_package(tmp_path, {"lib/libc10.dylib": absolute}, subdir="osx-arm64")
    (failure,) = fails([pkg], "macho.install-name")
    assert "'/opt/build/lib/libc10.dylib' is not @rpath/libc10.dylib" in failure.detail


@pytest.mark.parametrize(
    ("library", "why"),
    [
        ("/usr/lib/libc++.1.dylib", "the system's C++ runtime; conda-forge links libcxx's"),
        ("/opt/homebrew/lib/libfmt.11.dylib", "a package manager on the build machine"),
        ("/usr/local/lib/libuv.1.dylib", "a package manager on the build machine"),
        ("/Users/runner/work/lib/libsleef.3.dylib", "absolute path outside macOS"),
        ("@rpath/libnowhere.dylib", "resolves nowhere"),
        ("@rpath/libprotobuf.32.dylib", "comes from libprotobuf, which is not a run dependency"),
    ],
)
def test_a_library_that_does_not_resolve_fails(macho, tmp_path, library, why):  # noqa: F811
    lib = macho.dylib("@rpath/libc10.dylib", links=(SYSTEM, library))
    pkg = conda_package(tmp_path, {"lib/libc10.dylib": lib}, subdir="osx-arm64")
    (failure,) = fails([pkg], "macho.load-dylib")
    assert failure.path.endswith(":lib/libc10.dylib")
    assert library in failure.detail and why in failure.detail


def test_libraries_of_the_package_its_dependencies_and_macos_resolve(macho, tmp_path):  # noqa: F811
    links = (
        SYSTEM,
        "/System/Library/Frameworks/Accelerate.framework/Versions/A/Accelerate",
        "@rpath/libc10.dylib",
        "@loader_path/libc10.dylib",
        "@rpath/libc++.1.dylib",
    )
    files = {
        "lib/libc10.dylib": macho.dylib("@rpath/libc10.dylib"),
        "lib/libshm.dylib": macho.dylib("@rpath/libshm.dylib", links=links),
    }
    pkg = conda_package(tmp_path, files, subdir="osx-arm64", depends=("libcxx",))
    assert [f.status for f in findings([pkg], "macho.load-dylib")] == ["pass"]


def test_the_systems_libcxx_is_the_c_runtime_a_wheel_may_use(macho, tmp_path):  # noqa: F811
    lib = macho.dylib("@rpath/libc10.dylib", links=(SYSTEM, "/usr/lib/libc++.1.dylib"))
    wheel = tmp_path / "torch-1.0-cp312-cp312-macosx_12_0_arm64.whl"
    import zipfile

    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("torch/lib/libc10.dylib", lib)
    assert [f.status for f in findings([wheel], "macho.load-dylib")] == ["pass"]


def test_an_absolute_lc_rpath_fails(macho, tmp_path):  # noqa: F811
    lib = macho.dylib("@rpath/libc10.dylib", rpaths=("@loader_path", "/opt/build/lib"))
    pkg = conda_package(tmp_path, {"lib/libc10.dylib": lib}, subdir="osx-arm64")
    (failure,) = fails([pkg], "macho.rpath")
    assert "absolute LC_RPATH '/opt/build/lib'" in failure.detail


def test_an_lc_rpath_above_the_prefix_fails(macho, tmp_path):  # noqa: F811
    lib = macho.dylib("@rpath/libc10.dylib", rpaths=("@loader_path/../../..",))
    pkg = conda_package(tmp_path, {"lib/libc10.dylib": lib}, subdir="osx-arm64")
    (failure,) = fails([pkg], "macho.rpath")
    assert "reaches above the prefix" in failure.detail


def test_an_unsigned_arm64_dylib_fails(macho, tmp_path):  # noqa: F811
    lib = macho.dylib("@rpath/libc10.dylib", sign=False)
    pkg = conda_package(tmp_path, {"lib/libc10.dylib": lib}, subdir="osx-arm64")
    (failure,) = fails([pkg], "macho.signature")
    assert "no LC_CODE_SIGNATURE" in failure.detail


def test_an_arm64_dylib_changed_after_signing_fails(macho, tmp_path):  # noqa: F811
    lib = macho.dylib("@rpath/libc10.dylib", rpaths=("@loader_path/xx",))
    # What install_name_tool does to a signed file: a load command's string rewritten.
    edited = lib.replace(b"@loader_path/xx\0", b"@loader_path/yy\0")
    assert edited != lib
    pkg = conda_package(tmp_path, {"lib/libc10.dylib": edited}, subdir="osx-arm64")
    (failure,) = fails([pkg], "macho.signature")
    assert "changed after it was signed" in failure.detail


def test_an_unsigned_x86_64_dylib_is_not_a_signature_failure(macho, tmp_path):  # noqa: F811
    lib = macho.dylib("@rpath/libc10.dylib", arch="x86_64", sign=False)
    expect = Expectations(subdir="osx-64", macos_deployment_target="12.0")
    pkg = conda_package(tmp_path, {"lib/libc10.dylib": lib}, subdir="osx-64")
    assert fails([pkg], "macho.signature", expect) == []
    assert [f.status for f in findings([pkg], "macho.arch", expect)] == ["pass"]


def test_a_bundled_openmp_runtime_fails(macho, tmp_path):  # noqa: F811
    files = {
        "lib/libomp.dylib": macho.dylib("@rpath/libomp.dylib"),
        "lib/libtorch_cpu.dylib": macho.dylib(
            "@rpath/libtorch_cpu.dylib", links=(SYSTEM, "@rpath/libomp.dylib")
        ),
    }
    pkg = conda_package(tmp_path, files, subdir="osx-arm64", depends=DEPENDS)
    details = {f.path.split(":")[-1]: f.detail for f in fails([pkg], "macho.openmp")}
    assert "bundles an OpenMP runtime" in details["lib/libomp.dylib"]
    assert "the package's own copy lib/libomp.dylib" in details["lib/libtorch_cpu.dylib"]


def test_an_openmp_runtime_other_than_llvm_openmps_fails(macho, tmp_path):  # noqa: F811
    lib = macho.dylib("@rpath/libtorch_cpu.dylib", links=(SYSTEM, "@rpath/libiomp5.dylib"))
    pkg = conda_package(tmp_path, {"lib/libtorch_cpu.dylib": lib}, subdir="osx-arm64")
    details = [f.detail for f in fails([pkg], "macho.openmp")]
    assert any("conda-forge's OpenMP on macOS is llvm-openmp's libomp.dylib" in d for d in details)


def test_two_openmp_runtimes_in_one_package_fail(macho, tmp_path):  # noqa: F811
    files = {
        "lib/liba.dylib": macho.dylib("@rpath/liba.dylib", links=(SYSTEM, "@rpath/libomp.dylib")),
        "lib/libb.dylib": macho.dylib("@rpath/libb.dylib", links=(SYSTEM, "@rpath/libgomp.dylib")),
    }
    pkg = conda_package(tmp_path, files, subdir="osx-arm64", depends=DEPENDS)
    details = [f.detail for f in fails([pkg], "macho.openmp")]
    assert any(d.startswith("links several OpenMP runtimes: libgomp.dylib") for d in details)


def test_libomp_without_llvm_openmp_among_the_depends_fails(macho, tmp_path):  # noqa: F811
    lib = macho.dylib("@rpath/libtorch_cpu.dylib", links=(SYSTEM, "@rpath/libomp.dylib"))
    pkg = conda_package(tmp_path, {"lib/libtorch_cpu.dylib": lib}, subdir="osx-arm64")
    details = [f.detail for f in fails([pkg], "macho.openmp")]
    assert "links @rpath/libomp.dylib, but llvm-openmp is not a run dependency" in details


def test_libtorch_cpu_without_an_openmp_runtime_fails(macho, tmp_path):  # noqa: F811
    lib = macho.dylib("@rpath/libtorch_cpu.dylib", links=(SYSTEM, "@rpath/libc++.1.dylib"))
    pkg = conda_package(
        tmp_path, {"lib/libtorch_cpu.dylib": lib}, subdir="osx-arm64", depends=DEPENDS
    )
    (failure,) = fails([pkg], "macho.openmp")
    assert failure.detail.startswith("links no OpenMP runtime")


def test_a_truncated_mach_o_file_fails_as_unread(macho, tmp_path):  # noqa: F811
    lib = macho.dylib("@rpath/libc10.dylib")
    pkg = conda_package(tmp_path, {"lib/libc10.dylib": lib[:40]}, subdir="osx-arm64")
    (failure,) = fails([pkg], "binary.formats")
    assert failure.detail.startswith("Mach-O file that does not parse")
    (counted,) = [f for f in findings([pkg], "binary.formats") if f.status == "pass"]
    assert dict(counted.counts)["unread"] == 1


def test_a_universal_file_holds_both_slices(macho, tmp_path):  # noqa: F811
    thin = {arch: macho.dylib("@rpath/libc10.dylib", arch=arch) for arch in ("arm64", "x86_64")}
    fat = _universal(thin["arm64"], thin["x86_64"])
    (only_arm,) = read_macho_bytes(fat).slices[:1]
    assert read_macho_bytes(fat).archs == ("arm64", "x86_64") and only_arm.minos == "12.0"
    for subdir in ("osx-arm64", "osx-64"):
        pkg = conda_package(tmp_path / subdir, {"lib/libc10.dylib": fat}, subdir=subdir)
        expect = Expectations(subdir=subdir, macos_deployment_target="12.0")
        assert [f.status for f in findings([pkg], "macho.arch", expect)] == ["pass"]


def read_macho_bytes(data: bytes):
    import io

    return read_macho(io.BytesIO(data), len(data))


def _universal(*slices: bytes) -> bytes:
    """A fat file of thin slices, laid out as lipo does (16 KB aligned)."""
    import struct

    archs = [struct.unpack_from("<ii", s, 4) for s in slices]
    offset, header, body = 1 << 14, struct.pack(">II", 0xCAFEBABE, len(slices)), b""
    for (cputype, subtype), data in zip(archs, slices, strict=True):
        header += struct.pack(">iiIII", cputype, subtype, offset + len(body), len(data), 14)
        body += data + b"\0" * (-len(data) % (1 << 14))
    return header + b"\0" * (offset - len(header)) + body


def test_a_universal2_wheel_is_checked_against_an_osx_64_config(macho, tmp_path):  # noqa: F811
    import zipfile

    thin = [macho.dylib("@rpath/libc10.dylib", arch=a) for a in ("arm64", "x86_64")]
    wheel = tmp_path / "torch-1.0-cp312-cp312-macosx_11_0_universal2.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("torch/lib/libc10.dylib", _universal(*thin))
    expect = Expectations(config="osx_64", subdir="osx-64", macos_deployment_target="12.0")
    assert [f.status for f in findings([wheel], "macho.arch", expect)] == ["pass"]


def test_the_cli_prints_the_counts_and_json_carries_them(good, tmp_path):
    pkg = conda_package(tmp_path, good, subdir="osx-arm64", depends=DEPENDS)
    run = [sys.executable, "-m", "tools", "check", "--only", "binary", str(pkg)]
    text = subprocess.run(run, capture_output=True, text=True, check=True).stdout
    assert "read 2 binaries: 0 ELF, 2 Mach-O, 0 PE" in text
    document = subprocess.run([*run, "--json"], capture_output=True, text=True, check=True).stdout
    (counted,) = json.loads(document)
    assert counted["counts"]["Mach-O"] == 2


def test_mach_o_files_of_an_installed_prefix_are_read(macho, tmp_path):  # noqa: F811
    prefix = tmp_path / "env"
    (prefix / "lib").mkdir(parents=True)
    (prefix / "conda-meta").mkdir()
    (prefix / "lib/libc10.dylib").write_bytes(macho.dylib("/opt/build/lib/libc10.dylib"))
    record = {
        "name": "libtorch",
        "version": "1.0",
        "build": "cpu_generic_h1234567_0",
        "subdir": "osx-arm64",
        "files": ["lib/libc10.dylib"],
    }
    (prefix / "conda-meta/libtorch-1.0-cpu_generic_h1234567_0.json").write_text(json.dumps(record))
    (failure,) = fails([prefix], "macho.install-name")
    assert failure.path.endswith("[libtorch]:lib/libc10.dylib")
