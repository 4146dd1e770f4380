"""layout.dependency-owned: a file of ours that a conda-forge package owns is reported."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from helpers import bld_bat
from helpers.build_scripts import build_sh_text
from helpers.recipe_helpers import recipe_module

from tools.check import run_checks
from tools.check.archive import Member, Package
from tools.check.rules.owned import CHECK, OWNERS, owner_by_pattern

# What libtorch ships of upstream's include/ (recipe/package_files.py): PyTorch's own trees.
OWN_HEADER_TREES = recipe_module("package_files").OWN_HEADER_TREES


def conda(name: str, files: list[str], depends: tuple[str, ...] = ()) -> Package:
    return Package(
        source=Path(f"{name}-2.13.0-cpu_generic_h1234567_3.conda"),
        kind="conda",
        name=name,
        version="2.13.0",
        build="cpu_generic_h1234567_3",
        subdir="linux-64",
        depends=depends,
        members=tuple(Member(path=f, kind="file") for f in files),
    )


def findings(*packages: Package):
    return [f for f in run_checks(list(packages), only={CHECK}) if f.check == CHECK]


def test_a_header_a_run_dependency_owns_fails():
    libtorch = conda("libtorch", ["include/ATen/ATen.h", "include/dnnl.h"], ("onednn >=3.9",))
    (bad,) = [f for f in findings(libtorch) if f.status == "fail"]
    assert bad.path.endswith(":include/dnnl.h") and "onednn" in bad.detail


def test_a_vendored_static_library_a_package_elsewhere_owns_is_a_warning():
    libtorch = conda("libtorch", ["lib/libtorch.so", "lib/libcpuinfo.a"])
    assert [(f.status, f.path.split(":")[1]) for f in findings(libtorch)] == [
        ("warn", "lib/libcpuinfo.a")
    ]


def test_a_checked_dependency_package_names_its_own_files():
    # A path no pattern knows, owned by a dependency package handed to the check.
    dep = conda("xnnpack", ["include/xnnpack.h", "lib/libXNNPACK.so"])
    libtorch = conda("libtorch", ["include/xnnpack.h"], ("xnnpack",))
    assert [f.status for f in findings(libtorch, dep)] == ["fail"]


def test_pytorchs_own_headers_pass():
    libtorch = conda("libtorch", [f"include/{tree}/x.h" for tree in OWN_HEADER_TREES])
    assert [f.status for f in findings(libtorch)] == ["pass"]


@pytest.mark.slow
def test_the_real_2_13_wheel_include_tree_holds_the_vendored_headers_the_rule_knows(torch_wheel):
    # upstream's whole torch/include installed to $PREFIX/include, as build.sh once shipped it
    with zipfile.ZipFile(torch_wheel) as wheel:
        headers = [
            "include/" + n.removeprefix("torch/include/")
            for n in wheel.namelist()
            if n.startswith("torch/include/") and not n.endswith("/")
        ]
    owners = {owner_by_pattern(h) for h in headers} - {None}
    assert {"onednn", "cpuinfo", "pthreadpool", "fp16", "psimd", "fxdiv", "libprotobuf"} <= owners
    own = [h for h in headers if h.split("/")[1] in OWN_HEADER_TREES]
    assert own and not any(owner_by_pattern(h) for h in own)
    assert set(owners) <= set(OWNERS)


def test_build_sh_and_bld_bat_take_the_header_rules_from_package_files():
    # Before issue 30 both copied upstream's whole include/ into libtorch; before issue 37
    # each script spelt its own list.
    sh = build_sh_text()
    assert '"${RECIPE_DIR}/package_files.py" "${stage}" --platform "${target_platform}"' in sh
    assert "include/ATen" not in sh
    bat = bld_bat.text("bld_libtorch.bat")
    assert '"%RECIPE_DIR%\\package_files.py" libtorch --platform win-64' in bat
    assert "robocopy" not in bat
