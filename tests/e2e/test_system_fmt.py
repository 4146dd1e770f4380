"""recipe/patches/0005 (USE_SYSTEM_FMT), applied and built for real.

The patch goes onto verbatim excerpts of PyTorch 2.13.0's CMake (tests/fixtures/system_fmt),
and a tiny project shaped like PyTorch's use of fmt (a shared c10, a kineto that would add its
own fmt when no `fmt::fmt-header-only` target exists) is configured, built, run and installed
against a real installed fmt (its CMake package) and against the vendored stand-in.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.debian import apt_install, can_install
from helpers.minitorch.support import run

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "system_fmt"
PATCHES = REPO / "recipe" / "patches"
PATCH = PATCHES / "0005-cmake-USE_SYSTEM_FMT-takes-fmt-from-the-environment.patch"
LAYOUT_DEFINE = "FMT_NO_UNIQUE_ADDRESS=[[no_unique_address]]"
FMT_FILES_IN_INSTALL = ("include/fmt", "lib/cmake/fmt", "lib/libfmt.a")

pytestmark = pytest.mark.slow


def installed_fmt() -> Path | None:
    """The prefix of an fmt installed with its CMake package (conda's fmt, Debian's libfmt-dev)."""
    candidates = [Path(p) for p in (os.environ.get("CONDA_PREFIX"), "/usr/local", "/usr") if p]
    for prefix in candidates:
        configs = [*prefix.glob("lib/cmake/fmt/fmt-config.cmake")]
        configs += prefix.glob("lib/*/cmake/fmt/fmt-config.cmake")
        if configs and (prefix / "include" / "fmt" / "format.h").is_file():
            return prefix
    return None


@pytest.fixture(scope="module")
def fmt_prefix() -> Path:
    """An installed fmt with its CMake package; CI installs Debian's, elsewhere a skip."""
    found = installed_fmt()
    if found is None and can_install():
        apt_install("libfmt-dev")
        found = installed_fmt()
    if found is None:
        pytest.skip(
            "needs an fmt with its CMake package (apt-get install libfmt-dev, or conda's fmt)"
        )
    return found


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory, fmt_prefix: Path) -> Path:
    """The fixture with the patch applied to upstream/ and real fmt headers in the stand-in."""
    root = tmp_path_factory.mktemp("system_fmt") / "src"
    shutil.copytree(FIXTURE, root)
    run(["git", "apply", "--verbose", PATCH], cwd=root / "upstream")
    shutil.copytree(
        fmt_prefix / "include" / "fmt", root / "project" / "third_party" / "fmt" / "include" / "fmt"
    )
    return root


@dataclass(frozen=True)
class Built:
    build: Path
    prefix: Path
    output: str


def configure(tree: Path, build: Path, *options: str) -> None:
    run(
        [
            "cmake",
            "-S",
            tree / "project",
            "-B",
            build,
            "-G",
            "Ninja",
            f"-DUPSTREAM_DIR={tree / 'upstream'}",
            f"-DCMAKE_PREFIX_PATH={installed_fmt()}",
            *options,
        ]
    )


def build_and_install(tree: Path, work: Path, *options: str) -> Built:
    build, prefix = work / "build", work / "prefix"
    configure(tree, build, *options)
    run(["cmake", "--build", build])
    run(["cmake", "--install", build, "--prefix", prefix])
    probe = run([prefix / "bin" / "probe"], env={"LD_LIBRARY_PATH": str(prefix / "lib")})
    return Built(build, prefix, probe.stdout)


def compile_command(build: Path, source: str) -> str:
    entries = json.loads((build / "compile_commands.json").read_text())
    return next(e["command"] for e in entries if e["file"].endswith(source))


def cache_value(build: Path, name: str) -> str:
    for line in (build / "CMakeCache.txt").read_text().splitlines():
        if line.startswith(f"{name}:"):
            return line.split("=", 1)[1]
    raise AssertionError(f"{name} not in {build / 'CMakeCache.txt'}")


@pytest.fixture(scope="module")
def system(tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Built:
    return build_and_install(tree, tmp_path_factory.mktemp("system"), "-DUSE_SYSTEM_FMT=ON")


@pytest.fixture(scope="module")
def vendored(tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Built:
    return build_and_install(tree, tmp_path_factory.mktemp("vendored"))


def libraries_that_printed(built: Built) -> list[str]:
    return [line.split(" fmt ")[0] for line in built.output.splitlines()]


def test_system_fmt_builds_every_consumer_against_the_installed_package(system, fmt_prefix):
    assert cache_value(system.build, "fmt_DIR").startswith(str(fmt_prefix))
    assert not (system.build / "third_party" / "fmt").exists(), "the vendored fmt was configured"
    assert libraries_that_printed(system) == ["c10 7", "kineto", "probe"]


def test_system_fmt_keeps_libraries_shared(system):
    assert cache_value(system.build, "BUILD_SHARED_LIBS") == "ON"
    assert (system.prefix / "lib" / "libc10.so").is_file()


def test_system_fmt_installs_no_fmt_files(system):
    installed = [name for name in FMT_FILES_IN_INSTALL if (system.prefix / name).exists()]
    assert installed == [], f"fmt files in the install tree: {installed}"


def test_system_fmt_keeps_the_layout_define_on_the_header_only_target(system):
    for source in ("c10.cpp", "kineto.cpp", "probe.cpp"):
        assert LAYOUT_DEFINE in compile_command(system.build, source), source


def test_use_system_libs_turns_system_fmt_on(tree, tmp_path, fmt_prefix):
    build = tmp_path / "build"
    configure(tree, build, "-DUSE_SYSTEM_LIBS=ON")

    assert cache_value(build, "fmt_DIR").startswith(str(fmt_prefix))
    assert not (build / "third_party" / "fmt").exists()


def test_default_still_builds_and_installs_the_vendored_fmt(vendored):
    assert (vendored.build / "third_party" / "fmt").is_dir()
    assert (vendored.prefix / "include" / "fmt" / "format.h").is_file()
    assert (vendored.prefix / "lib" / "cmake" / "fmt").is_dir()
    assert LAYOUT_DEFINE in compile_command(vendored.build, "c10.cpp")
    assert libraries_that_printed(vendored) == ["c10 7", "kineto", "probe"]
