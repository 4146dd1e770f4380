"""The macOS cross toolchain the build.sh tests use (tests/helpers/macos/toolchain.py):
.ci/run installs its Debian packages on CI; elsewhere their absence is one skip naming them,
and with CI set a failure. Built, it links a C++ library into an arm64 and an x86_64 Mach-O
dylib with the install name, rpath, minimum macOS and (arm64) signature asked for."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.macos import toolchain

from tools.check.readers import macho

ROOT = Path(__file__).resolve().parents[2]


def _without(monkeypatch: pytest.MonkeyPatch, program: str) -> None:
    real = shutil.which
    monkeypatch.setattr(
        toolchain.shutil, "which", lambda name: None if name == program else real(name)
    )


@pytest.mark.parametrize("program", ["clang++-14", "ld64.lld-14"])
def test_without_the_llvm_programs_the_tests_skip_naming_the_apt_packages(
    monkeypatch: pytest.MonkeyPatch, program: str
) -> None:
    monkeypatch.delenv("CI", raising=False)
    _without(monkeypatch, program)
    with pytest.raises(pytest.skip.Exception) as skipped:
        toolchain.require_toolchain()
    assert f"apt-get install -y {' '.join(toolchain.APT_PACKAGES)}" in str(skipped.value)
    assert program in str(skipped.value)


def test_on_ci_a_missing_toolchain_fails_instead_of_skipping(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CI", "true")
    _without(monkeypatch, "clang-14")
    with pytest.raises(pytest.fail.Exception):
        toolchain.require_toolchain()


def test_ci_run_installs_the_packages_the_toolchain_names() -> None:
    text = (ROOT / ".ci" / "run").read_text()
    (listed,) = re.findall(r"^macos_packages=\(([^)]*)\)$", text, flags=re.MULTILINE)
    assert tuple(listed.split()) == toolchain.APT_PACKAGES
    assert 'apt-get install -y -q "${macos_packages[@]}"' in text


SOURCE = """#include <cmath>
#include <string>
std::string root_of(int n) { return std::to_string(std::sqrt(static_cast<double>(n))); }
"""


@pytest.mark.slow  # the first use builds the toolchain (the 101 MB ziglang wheel)
@pytest.mark.parametrize(("platform", "arch"), [("osx-arm64", "arm64"), ("osx-64", "x86_64")])
def test_the_toolchain_links_a_mach_o_dylib_for_each_target(
    tmp_path: Path, platform: str, arch: str
) -> None:
    tools = toolchain.macos_toolchain()
    (tmp_path / "v.cpp").write_text(SOURCE)
    dylib = tmp_path / "libv.dylib"
    subprocess.run(
        [
            tools.tool(platform, "clang++"),
            "-mmacosx-version-min=12.0",
            "-dynamiclib",
            "-install_name",
            "@rpath/libv.dylib",
            "-Wl,-rpath,@loader_path",
            tmp_path / "v.cpp",
            "-o",
            dylib,
        ],
        check=True,
    )
    with dylib.open("rb") as stream:
        [image] = macho.read_macho(stream, dylib.stat().st_size).slices
    assert (image.arch, image.filetype) == (arch, "dylib")
    assert image.install_name == "@rpath/libv.dylib"
    assert image.rpaths == ("@loader_path",)
    assert "@rpath/libc++.1.dylib" in image.dylibs
    assert image.minos == "12.0"
    # ld64.lld signs arm64 ad hoc, as Apple's ld64 does; x86_64 needs no signature.
    assert (image.signature_problem is None) == (arch == "arm64")
