"""`tools check`'s Windows rules on real PE files, one broken package per rule.

The DLLs are linked by MinGW-w64 in the test, importing exactly the DLLs each test names
(tests/helpers/foreign_binaries.py), and packed into win-64 .conda packages.
"""

from __future__ import annotations

import pytest
from helpers.foreign_binaries import conda_package, pe  # noqa: F401 (fixture)

from tools.check import Expectations, check

pytestmark = pytest.mark.slow

WIN_64 = Expectations(config="win_64", subdir="win-64")
CRT = ("KERNEL32.dll", "api-ms-win-crt-runtime-l1-1-0.dll", "VCRUNTIME140.dll", "MSVCP140.dll")
DEPENDS = ("vc14_runtime >=14.44", "ucrt >=10.0.20348.0", "intel-openmp", "libuv >=1.51")


def findings(packages, check_id, expect=WIN_64):
    return [f for f in check(packages, expect) if f.check == check_id]


def fails(packages, check_id, expect=WIN_64):
    return [f for f in findings(packages, check_id, expect) if f.status == "fail"]


@pytest.fixture(scope="module")
def good(pe):  # noqa: F811
    """libtorch for win-64 as conda-forge lays it out: DLLs in Library/bin importing each
    other, Windows, the UCRT, vc14_runtime's DLLs and run dependencies' DLLs."""
    return {
        "Library/bin/c10.dll": pe.dll(CRT),
        "Library/bin/torch_cpu.dll": pe.dll((*CRT, "c10.dll", "libiomp5md.dll", "uv.dll")),
    }


def test_a_well_built_win_64_package_passes_every_windows_rule(good, tmp_path):
    pkg = conda_package(tmp_path, good, subdir="win-64", depends=DEPENDS)
    result = [f for f in check([pkg], WIN_64) if f.check.startswith("pe.")]
    assert {f.check for f in result} == {"pe.machine", "pe.imports", "pe.crt"}
    assert [f for f in result if f.status != "pass"] == []
    (counted,) = findings([pkg], "binary.formats")
    assert dict(counted.counts) == {"ELF": 0, "Mach-O": 0, "PE": 2, "unread": 0}


def test_a_dll_for_another_machine_fails(good, tmp_path):
    i386 = bytearray(good["Library/bin/c10.dll"])
    at = int.from_bytes(i386[0x3C:0x40], "little") + 4  # IMAGE_FILE_HEADER.Machine
    i386[at : at + 2] = (0x14C).to_bytes(2, "little")
    pkg = conda_package(tmp_path, {"Library/bin/c10.dll": bytes(i386)}, subdir="win-64")
    (failure,) = fails([pkg], "pe.machine")
    assert "I386 binary in a win-64 package (expected AMD64)" in failure.detail


def test_a_dll_nothing_provides_fails_naming_the_importer(pe, tmp_path):  # noqa: F811
    files = {"Library/bin/torch_cpu.dll": pe.dll((*CRT, "nowhere.dll"))}
    pkg = conda_package(tmp_path, files, subdir="win-64", depends=DEPENDS)
    (failure,) = fails([pkg], "pe.imports")
    assert failure.path.endswith(":Library/bin/torch_cpu.dll")
    assert "imports nowhere.dll, which nothing provides" in failure.detail


def test_a_dll_of_a_package_that_is_not_a_run_dependency_fails(pe, tmp_path):  # noqa: F811
    files = {"Library/bin/torch_cpu.dll": pe.dll((*CRT, "uv.dll"))}
    pkg = conda_package(tmp_path, files, subdir="win-64", depends=("vc14_runtime",))
    (failure,) = fails([pkg], "pe.imports")
    assert "imports uv.dll, which comes from libuv, not a run dependency" in failure.detail


def test_a_dll_in_a_folder_windows_does_not_search_fails(pe, tmp_path):  # noqa: F811
    files = {
        "Library/lib/c10.dll": pe.dll(CRT),
        "Library/bin/torch_cpu.dll": pe.dll((*CRT, "C10.dll")),
    }
    pkg = conda_package(tmp_path, files, subdir="win-64", depends=DEPENDS)
    (failure,) = fails([pkg], "pe.imports")
    assert "imports C10.dll, which is at Library/lib/c10.dll, outside the folders" in (
        failure.detail
    )


def test_a_debug_c_runtime_import_fails(pe, tmp_path):  # noqa: F811
    files = {"Library/bin/c10.dll": pe.dll(("KERNEL32.dll", "VCRUNTIME140D.dll", "ucrtbased.dll"))}
    pkg = conda_package(tmp_path, files, subdir="win-64", depends=DEPENDS)
    details = sorted(f.detail for f in fails([pkg], "pe.crt"))
    assert [d.split(",")[0] for d in details] == [
        "imports VCRUNTIME140D.dll",
        "imports ucrtbased.dll",
    ]
    assert all("a debug C runtime" in d for d in details)


def test_mingws_msvcrt_import_fails(pe, tmp_path):  # noqa: F811
    files = {"Library/bin/c10.dll": pe.dll(("KERNEL32.dll",), mingw_crt=True)}
    pkg = conda_package(tmp_path, files, subdir="win-64", depends=DEPENDS)
    (failure,) = fails([pkg], "pe.crt")
    assert failure.detail.startswith("imports msvcrt.dll, a C runtime other than the UCRT")


def test_the_visual_cpp_runtime_without_vc14_runtime_among_the_depends_fails(
    pe,  # noqa: F811
    tmp_path,
):
    files = {"Library/bin/c10.dll": pe.dll(CRT)}
    pkg = conda_package(tmp_path, files, subdir="win-64", depends=("ucrt",))
    details = sorted(f.detail for f in fails([pkg], "pe.crt"))
    assert details == [
        "imports MSVCP140.dll, from vc14_runtime, which is not a run dependency",
        "imports VCRUNTIME140.dll, from vc14_runtime, which is not a run dependency",
    ]


def test_torch_lib_dlls_resolve_for_the_extension_module(pe, tmp_path):  # noqa: F811
    """torch/__init__.py adds torch/lib to the DLL search path before it imports torch._C."""
    site = "Lib/site-packages/torch"
    files = {
        f"{site}/lib/c10.dll": pe.dll(CRT),
        f"{site}/lib/torch_cpu.dll": pe.dll((*CRT, "c10.dll")),
        f"{site}/_C.cp312-win_amd64.pyd": pe.dll((*CRT, "torch_cpu.dll", "python312.dll")),
    }
    pkg = conda_package(tmp_path, files, subdir="win-64", depends=(*DEPENDS, "python >=3.12"))
    assert [f.status for f in findings([pkg], "pe.imports")] == ["pass"]


def test_device_code_in_a_cuda_dlls_nv_fatb_section_is_read(pe, tmp_path):  # noqa: F811
    from tools.check.readers.fatbin import FATBIN_MAGIC

    cuda13 = Expectations(
        config="win_64_cuda13",
        subdir="win-64",
        cuda_compiler_version="13.0",
        cuda_arch_list="8.0;9.0",
    )

    # A fatbin container holding one sm_90 SASS entry, laid out as nvcc writes one
    # (tools/check/readers/fatbin.py reads its headers).
    entry = bytearray(64)
    entry[0:2] = (2).to_bytes(2, "little")  # kind: ELF (SASS)
    entry[4:8] = (64).to_bytes(4, "little")  # header size
    entry[28:32] = (90).to_bytes(4, "little")  # sm_90
    container = (
        FATBIN_MAGIC.to_bytes(4, "little")
        + (1).to_bytes(2, "little")
        + (16).to_bytes(2, "little")
        + len(entry).to_bytes(8, "little")
        + bytes(entry)
    )
    files = {"Library/bin/torch_cuda.dll": pe.dll(CRT, sections={".nv_fatb": container})}
    pkg = conda_package(
        tmp_path, files, subdir="win-64", depends=DEPENDS, build="cuda130_generic_h1234567_0"
    )
    (failure,) = fails([pkg], "cuda.fatbin", cuda13)
    assert failure.path.endswith(":Library/bin/torch_cuda.dll")
    assert failure.detail.startswith("no SASS for sm_80") and "(holds sm_90)" in failure.detail
