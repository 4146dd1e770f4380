"""The check rules, one behaviour each, on small records and tiny real archives.

These run without the PyTorch wheel: packages are records built in the test
(or tiny .conda files packed with conda-package-streaming), ELF facts are
ElfInfo records, except where a real ELF (this Python interpreter) is read.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conda_package_streaming.create import conda_builder

from tools.check import Expectations, OutputExpectation, load, run_checks
from tools.check.rules.abi import declared_abi
from tools.check.archive import Member, Package, build_prefix_strings, unsafe_reason
from tools.check.readers.elf import ElfInfo, read_elf
from tools.check.expectations import (
    build_string_cuda_major,
    build_string_flavor,
    build_string_python,
    from_rendered,
)
from tools.check.rules.elf import runpath_problem
from tools.check.rules.metadata import compare_specs
from tools.check.tree import Tree

REPO = Path(__file__).resolve().parent.parent


def elf(needed=(), runpath=("$ORIGIN",), versions=(), cxx11=0, old=0, std=0) -> ElfInfo:
    return ElfInfo(
        machine="EM_X86_64",
        soname=None,
        needed=tuple(needed),
        runpath=tuple(runpath),
        rpath=(),
        version_needs=tuple(versions),
        cxx11_symbols=cxx11,
        old_abi_symbols=old,
        std_definitions=std,
        std_definition_sample=("_ZNSt10filesystem4pathC1Ev",) if std else (),
    )


def package(
    name="libtorch",
    build="cpu_generic_h1234567_2",
    files=(),
    links=(),
    elves=None,
    depends=(),
    constrains=(),
    run_exports=None,
    prefix_strings=None,
    placeholders=None,
    texts=None,
) -> Package:
    members = tuple(Member(p, "file", 1) for p in files) + tuple(
        Member(p, "symlink", 0, t) for p, t in links
    )
    return Package(
        source=Path(f"/pkgs/{name}-2.13.0-{build}.conda"),
        kind="conda",
        name=name,
        version="2.13.0",
        build=build,
        subdir="linux-64",
        depends=tuple(depends),
        constrains=tuple(constrains),
        run_exports=run_exports,
        members=members,
        elves=elves or {},
        prefix_strings=prefix_strings or {},
        placeholders=placeholders or {},
        texts=texts or {},
    )


def fails(findings, check):
    return [f for f in findings if f.check == check and f.status == "fail"]


def statuses(findings, check):
    return sorted({f.status for f in findings if f.check == check})


# ------------------------------------------------------------------ archive members


@pytest.mark.parametrize(
    ("name", "kind", "target"),
    [
        ("/etc/passwd", "file", None),
        ("lib/../../evil", "file", None),
        ("../evil", "file", None),
        ("lib/link", "symlink", "/usr/lib/libc.so.6"),
        ("lib/link", "symlink", "../../outside"),
        ("lib/hard", "hardlink", "../outside"),
    ],
)
def test_members_leaving_the_package_are_unsafe(name, kind, target):
    assert unsafe_reason(name, kind, target) is not None


@pytest.mark.parametrize(
    ("name", "kind", "target"),
    [
        ("lib/libc10.so", "file", None),
        ("lib/python3.12/site-packages/torch/lib/libc10.so", "symlink", "../../../../libc10.so"),
        ("lib/libfoo.so", "symlink", "libfoo.so.1"),
    ],
)
def test_members_inside_the_package_are_safe(name, kind, target):
    assert unsafe_reason(name, kind, target) is None


def _tiny_conda(
    out: Path,
    members: dict[str, bytes],
    name="tiny",
    build="h1234567_0",
    paths_json: dict | None = None,
) -> Path:
    stem = f"{name}-1.0-{build}"
    with conda_builder(stem, out, compression_level=1) as tar:
        index = {
            "name": name,
            "version": "1.0",
            "build": build,
            "build_number": 0,
            "subdir": "linux-64",
            "depends": [],
        }
        extra = {"info/index.json": json.dumps(index).encode()}
        if paths_json is not None:
            extra["info/paths.json"] = json.dumps(paths_json).encode()
        for path, data in {**extra, **members}.items():
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out / f"{stem}.conda"


def test_leftover_build_env_path_in_a_text_file_fails(tmp_path):
    pkg = _tiny_conda(
        tmp_path,
        {"bin/tool": b"#!/home/conda/feedstock_root/build_artifacts/x/_build_env/bin/python\n"},
    )
    failing = fails(run_checks(load([pkg])), "layout.build-prefix")
    assert [f.path.split(":", 1)[1] for f in failing] == ["bin/tool"]
    assert "_build_env/bin/python" in failing[0].detail


def test_host_prefix_placeholder_declared_in_paths_json_is_allowed(tmp_path):
    placeholder = "/home/conda/feedstock_root/build_artifacts/x/_h_env_placehold_placehold"
    pkg = _tiny_conda(
        tmp_path,
        {"share/cmake/Foo/FooConfig.cmake": f'set(FOO_ROOT "{placeholder}/lib")\n'.encode()},
        paths_json={
            "paths": [
                {
                    "_path": "share/cmake/Foo/FooConfig.cmake",
                    "path_type": "hardlink",
                    "prefix_placeholder": placeholder,
                    "file_mode": "text",
                }
            ]
        },
    )
    assert statuses(run_checks(load([pkg])), "layout.build-prefix") == ["pass"]


def test_build_prefix_scan_finds_whole_paths_only_when_a_marker_is_present():
    assert build_prefix_strings(b"plain text /usr/lib/libz.so\n") == ()
    assert build_prefix_strings(b'x="/opt/conda/conda-bld/work/foo.h";') == (
        "/opt/conda/conda-bld/work/foo.h",
    )


def test_corrupt_archive_is_unusable_input_with_a_one_line_error(tmp_path):
    bad = tmp_path / "broken-1.0-h0_0.conda"
    bad.write_bytes(b"not a zip at all")
    result = subprocess.run(
        [sys.executable, "-m", "tools", "check", str(bad)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {bad}: not a readable conda package")
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_directory_without_packages_is_unusable_input(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "tools", "check", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "holds no .conda or .tar.bz2 packages" in result.stderr


# ------------------------------------------------------------------ ELF reading


def test_reading_a_real_elf_reports_needed_libraries_and_glibc_versions():
    interpreter = Path(sys.executable).resolve()
    with interpreter.open("rb") as stream:
        info = read_elf(stream)
    assert any(n.startswith(("libc.so", "libpython")) for n in info.needed)
    assert any(v.startswith("GLIBC_2.") for v in info.required_versions)


def test_truncated_elf_is_a_value_error(tmp_path):
    truncated = tmp_path / "libbroken.so"
    truncated.write_bytes(Path(sys.executable).resolve().read_bytes()[:200])
    with truncated.open("rb") as stream, pytest.raises(ValueError, match="unreadable ELF"):
        read_elf(stream)


# ------------------------------------------------------------------ linkage


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("/home/conda/feedstock_root/build_artifacts/x/_h_env/lib", "absolute"),
        ("/lib/intel64", "absolute"),
        ("lib", "working directory"),
        ("$ORIGIN/../../../..", "above the prefix"),
    ],
)
def test_runpath_entries_that_do_not_stay_origin_relative_are_problems(entry, problem):
    assert problem in runpath_problem("lib/libtorch.so", entry, relative_root=True)


def test_origin_relative_runpath_inside_the_prefix_is_fine():
    assert (
        runpath_problem(
            "lib/python3.12/site-packages/torch/_C.so", "$ORIGIN/lib", relative_root=True
        )
        is None
    )
    assert runpath_problem("lib/libtorch.so", "${ORIGIN}/../lib", relative_root=True) is None


def test_needed_found_through_a_runpath_symlink_resolves():
    lib = package(files=["lib/libc10.so"], elves={"lib/libshm.so": elf(["libc10.so", "libc.so.6"])})
    py = package(
        "pytorch",
        "cpu_generic_py312_h1_2",
        links=[("lib/python3.12/site-packages/torch/lib/libc10.so", "../../../../libc10.so")],
        elves={"lib/python3.12/site-packages/torch/_C.so": elf(["libc10.so"], ["$ORIGIN/lib"])},
    )
    assert statuses(run_checks([lib, py]), "elf.needed") == ["pass"]


def test_needed_provided_by_a_dependency_not_in_depends_fails():
    lib = package(elves={"lib/libtorch_cpu.so": elf(["libgomp.so.1"])}, depends=["libstdcxx >=14"])
    failing = fails(run_checks([lib]), "elf.needed")
    assert len(failing) == 1 and "libgomp" in failing[0].detail


def test_needed_from_a_run_dependency_passes():
    lib = package(
        elves={"lib/libtorch_cpu.so": elf(["libgomp.so.1", "libcuda.so.1"])},
        depends=["libgomp >=14"],
    )
    assert statuses(run_checks([lib]), "elf.needed") == ["pass"]


def test_needed_present_but_off_the_runpath_is_a_warning():
    lib = package(
        files=["lib/libc10.so"], elves={"bin/tool": elf(["libc10.so"], runpath=["$ORIGIN"])}
    )
    assert statuses(run_checks([lib]), "elf.needed") == ["warn"]


def test_glibcxx_above_what_the_compiler_ships_fails():
    lib = package(
        elves={
            "lib/libc10.so": elf(versions=[("libstdc++.so.6", ("GLIBCXX_3.4.34", "CXXABI_1.3.15"))])
        }
    )
    findings = run_checks([lib], Expectations(cxx_compiler_version="14"))
    assert "above GLIBCXX_3.4.33" in fails(findings, "elf.glibcxx")[0].detail
    assert statuses(findings, "elf.cxxabi") == ["pass"]


def test_glibc_private_requirement_fails():
    lib = package(
        elves={"lib/libc10.so": elf(versions=[("libc.so.6", ("GLIBC_PRIVATE", "GLIBC_2.17"))])}
    )
    assert fails(run_checks([lib], Expectations(c_stdlib_version="2.17")), "elf.glibc")


# ------------------------------------------------------------------ C++ ABI


def test_torchconfig_abi_flag_is_read():
    assert declared_abi('set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=0")') == 0
    assert declared_abi("no flag here") is None


def test_old_abi_symbols_contradicting_torchconfig_fail():
    lib = package(
        files=["share/cmake/Torch/TorchConfig.cmake"],
        texts={"share/cmake/Torch/TorchConfig.cmake": "-D_GLIBCXX_USE_CXX11_ABI=1"},
        elves={"lib/libtorch_cpu.so": elf(cxx11=500, old=3)},
    )
    assert fails(run_checks([lib]), "abi.cxx11")


def test_statically_linked_libstdcxx_in_a_conda_torch_library_fails():
    lib = package(elves={"lib/libtorch_cpu.so": elf(std=12)})
    assert "12 libstdc++ symbols" in fails(run_checks([lib]), "abi.static-libstdcxx")[0].detail


# ------------------------------------------------------------------ layout


def test_bytecode_for_another_python_fails():
    py = package(
        "pytorch",
        "cpu_generic_py312_h1_2",
        files=[
            "lib/python3.12/site-packages/functorch/__pycache__/__init__.cpython-312.pyc",
            "lib/python3.12/site-packages/functorch/__pycache__/__init__.cpython-314.pyc",
        ],
    )
    failing = fails(run_checks([py]), "layout.pyc")
    assert [f.path.endswith("cpython-314.pyc") for f in failing] == [True]


def test_torch_lib_copy_of_a_prefix_lib_file_fails():
    lib = package(files=["lib/libc10.so"])
    py = package(
        "pytorch",
        "cpu_generic_py312_h1_2",
        files=["lib/python3.12/site-packages/torch/lib/libc10.so"],
    )
    assert "should be a link" in fails(run_checks([lib, py]), "layout.torch-lib-links")[0].detail


def test_torch_lib_link_that_resolves_nowhere_fails():
    py = package(
        "pytorch",
        "cpu_generic_py312_h1_2",
        links=[("lib/python3.12/site-packages/torch/lib/libc10.so", "../../../../libc10.so")],
    )
    assert fails(run_checks([py]), "layout.torch-lib-links")


def test_same_named_alternatives_may_share_paths():
    py312 = package("pytorch", "cpu_generic_py312_h1_2", files=["lib/libtorch_python.so"])
    py313 = package("pytorch", "cpu_generic_py313_h2_2", files=["lib/libtorch_python.so"])
    lib = package(files=["lib/libc10.so"])
    assert statuses(run_checks([lib, py312, py313]), "layout.overlap") == ["pass"]


def test_cuda_libtorch_must_ship_the_cuda_libraries():
    lib = package(
        build="cuda129_generic_h1_202",
        files=[f"lib/lib{n}.so" for n in ("c10", "shm", "torch", "torch_cpu", "torch_global_deps")]
        + ["share/cmake/Torch/TorchConfig.cmake"],
    )
    missing = {f.detail for f in fails(run_checks([lib]), "layout.expected-files")}
    assert missing == {
        "missing lib/libc10_cuda.so",
        "missing lib/libcaffe2_nvrtc.so",
        "missing lib/libtorch_cuda.so",
    }


def test_tree_does_not_follow_links_out_of_the_packages():
    tree = Tree([package(links=[("lib/a.so", "../../../etc/passwd"), ("lib/b.so", "a.so")])])
    assert tree.resolve("lib/b.so") is None


# ------------------------------------------------------------------ CUDA


def test_cudart_of_another_major_fails():
    lib = package(
        build="cuda130_generic_h1_200", elves={"lib/libtorch_cuda.so": elf(["libcudart.so.12"])}
    )
    assert "libcudart.so.13" in fails(run_checks([lib]), "cuda.runtime")[0].detail


def test_cpu_build_linking_cuda_fails():
    lib = package(elves={"lib/libtorch_cpu.so": elf(["libcudart.so.12"])})
    assert fails(run_checks([lib], Expectations(cuda_compiler_version="None")), "cuda.runtime")


def test_nomagma_linalg_linking_magma_fails():
    linalg = package(
        "libtorch-cuda-linalg",
        "cuda129_nomagma_generic_h1_200",
        elves={"lib/libtorch_cuda_linalg.so": elf(["libmagma.so", "libcudart.so.12"])},
    )
    assert fails(run_checks([linalg]), "cuda.magma")


def test_magma_linalg_without_magma_fails():
    linalg = package(
        "libtorch-cuda-linalg",
        "cuda129_magma_generic_h1_250",
        elves={"lib/libtorch_cuda_linalg.so": elf(["libcudart.so.12"])},
    )
    assert fails(run_checks([linalg]), "cuda.magma")


def test_magma_outside_the_linalg_library_fails():
    lib = package(
        build="cuda129_generic_h1_200", elves={"lib/libtorch_cuda.so": elf(["libmagma.so"])}
    )
    assert fails(run_checks([lib]), "cuda.magma")


@pytest.mark.parametrize(
    ("build", "major", "flavor", "python"),
    [
        ("cuda129_magma_generic_h1_250", 12, "magma", None),
        ("cuda130_nomagma_mkl_h1_300", 13, "nomagma", None),
        ("cpu_generic_py312_h1234_2", 0, None, "3.12"),
        ("h1234567_0", None, None, None),
    ],
)
def test_build_strings_name_the_variant(build, major, flavor, python):
    assert (
        build_string_cuda_major(build),
        build_string_flavor(build),
        build_string_python(build),
    ) == (major, flavor, python)


# ------------------------------------------------------------------ metadata


def test_rendered_run_requirement_missing_from_index_json_fails():
    findings = compare_specs("metadata.depends", "p", ["python", "filelock"], ["python >=3.12"])
    assert [f.detail for f in findings if f.status == "fail"] == [
        "rendered 'filelock' is missing from info/index.json"
    ]


def test_requirements_added_at_build_time_are_fine():
    findings = compare_specs(
        "metadata.depends", "p", ["python"], ["python >=3.12", "libstdcxx >=14"]
    )
    assert [f.status for f in findings] == ["pass"] and "libstdcxx" in findings[0].detail


def test_declared_run_exports_missing_from_the_package_fails():
    lib = package(run_exports=None)
    expect = Expectations(outputs=(OutputExpectation("libtorch", declares_run_exports=True),))
    assert fails(run_checks([lib], expect), "metadata.run-exports")


@dataclass(frozen=True)
class FakeRendered:
    name: str
    build_string: str
    variant: dict
    requirements: dict = field(default_factory=dict)
    run_exports: dict = field(default_factory=dict)
    skip: bool = False


def test_expectations_come_from_the_render_with_flavour_per_output():
    variant = {
        "c_stdlib_version": "2.28",
        "cxx_compiler_version": "14",
        "cuda_compiler_version": "13.0",
        "python": "3.12.* *_cpython",
    }
    expect = from_rendered(
        [
            FakeRendered(
                "libtorch-cuda-linalg",
                "cuda130_magma_generic_ha_250",
                {**variant, "cuda_linalg_flavor": "magma"},
            ),
            FakeRendered(
                "libtorch-cuda-linalg",
                "cuda130_nomagma_generic_hb_200",
                {**variant, "cuda_linalg_flavor": "nomagma"},
            ),
            FakeRendered(
                "pytorch",
                "cuda130_generic_py312_hc_200",
                variant,
                {"run": ("python",)},
                {"weak": ("pytorch >=2.13",)},
            ),
            FakeRendered("pytorch", "skipped", variant, skip=True),
        ],
        config="cfg",
    )
    assert (expect.c_stdlib_version, expect.cuda_major, expect.cuda_linalg_flavor) == (
        "2.28",
        13,
        None,
    )
    assert (
        expect.output_for(
            "libtorch-cuda-linalg", None, "cuda130_nomagma_generic_hb_200"
        ).cuda_linalg_flavor
        == "nomagma"
    )
    pytorch = expect.output_for("pytorch", "3.12")
    assert (pytorch.run, pytorch.declares_run_exports, pytorch.python) == (
        ("python",),
        True,
        "3.12",
    )
    assert len(expect.outputs) == 3


def test_libtorch_shipping_another_outputs_library_fails():
    lib = package(files=["lib/libtorch_python.so"])
    assert any(
        "belongs to pytorch" in f.detail for f in fails(run_checks([lib]), "layout.expected-files")
    )


def test_tar_bz2_packages_are_read_like_conda_ones(tmp_path):
    from conda_package_handling import api as cph

    conda = _tiny_conda(tmp_path, {"lib/escape": b""})
    (tmp_path / "bz2").mkdir()
    cph.transmute(str(conda), ".tar.bz2", out_folder=str(tmp_path / "bz2"))
    (bz2,) = (tmp_path / "bz2").glob("*.tar.bz2")
    (read,) = load([bz2])
    assert (read.name, [m.path for m in read.members]) == ("tiny", ["lib/escape"])


def test_binary_for_another_architecture_fails():
    aarch64 = Package(
        source=Path("/pkgs/libtorch-2.13.0-cpu_generic_h1_2.conda"),
        kind="conda",
        name="libtorch",
        version="2.13.0",
        build="cpu_generic_h1_2",
        subdir="linux-aarch64",
        elves={"lib/libc10.so": elf()},
    )
    assert (
        "EM_X86_64 binary in a linux-aarch64 package"
        in fails(run_checks([aarch64]), "elf.machine")[0].detail
    )
