"""Upstream's real wheels replayed through the recipe's packaging stages (issue 37).

`python -m tools layout`'s replay, run in-process on the 2.13.0 Linux wheel the suite already
uses and on 2.15.0's linux-64, osx-arm64 and win-64 wheels (downloaded once into the tests'
cache): recipe/package_files.py's rules, the ones build.sh and bld.bat run, must place every
file of each without stopping the build, and leave the runtime libraries upstream copies in
to the host packages that own them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import feedstock_matrix
from helpers.recipe_release import current

from tools.commands.layout import default_config, host_requirements
from tools.layout.replay import licence_list, load_rules, replay
from tools.layout.wheel import Wheel, read_wheel

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipe"


def _replay(path: Path, *, licences: bool = True):
    """The replay of ``path``; meta.yaml's licence list is held to the wheel when it is the
    recipe's release and ``licences`` asks for it."""
    wheel = read_wheel(path)
    # the replay renders the recipe for one of the matrix's configs of the wheel's platform
    feedstock_matrix.need(platform=wheel.platform)
    config = default_config(ROOT, wheel)
    host = host_requirements(config, ROOT, RECIPE)
    listed = None
    if licences and wheel.version.split("+")[0] == current().version:
        listed = licence_list((RECIPE / "meta.yaml").read_text(), "meta.yaml")
    return wheel, replay(wheel, load_rules(RECIPE), host, listed)


@pytest.fixture(scope="module", params=["linux-64", "osx-arm64", "win-64"])
def replay_2_15(request: pytest.FixtureRequest, upstream_2_15_wheel):
    # 2.15.0's layout, whatever release the recipe builds: its licence list is the recipe's
    # release's business (test_the_recipes_release_wheel_packages_without_a_problem,
    # tests/e2e/test_layout_cli.py), and a recipe bumped to 2.15.0 without it would fail here for
    # a reason these tests are not about
    return _replay(upstream_2_15_wheel(request.param), licences=False)


def test_the_recipes_release_wheel_packages_without_a_problem(torch_wheel: Path) -> None:
    _, result = _replay(torch_wheel)
    assert [p for p in result.problems if p.kind != "warning"] == []
    assert "lib/libtorch_cpu.so" in result.contents["libtorch"]
    assert "lib/libtorch_python.so" in result.contents["pytorch"]


def test_a_python_bound_file_the_rules_would_give_libtorch_is_a_problem() -> None:
    # libtorch serves every Python; its rules take any torch/lib/*.so but torch_python's.
    lib = {
        "lib/libtorch_cpu.so": 1,
        "lib/libtorch_python.so": 1,
        "lib/_C_flatbuffer.cpython-312-x86_64-linux-gnu.so": 1,
    }
    name = "torch-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    wheel = Wheel(Path(name), "2.15.0", "linux-64", lib, {**lib, "__init__.py": 1}, frozenset())
    result = replay(wheel, load_rules(RECIPE), {"libtorch": (), "pytorch": ()}, None)
    bound = [(p.path, p.detail.split(";")[0]) for p in result.problems if p.kind == "python-bound"]
    assert bound == [
        ("lib/_C_flatbuffer.cpython-312-x86_64-linux-gnu.so", "libtorch serves every Python")
    ]


def test_2_15_wheels_package_without_a_problem(replay_2_15) -> None:
    _, result = replay_2_15
    assert [p for p in result.problems if p.kind != "warning"] == []


def test_torch_lib_header_folders_stay_in_the_pytorch_package(replay_2_15) -> None:
    _, result = replay_2_15
    pytorch = result.contents["pytorch"]
    assert "site-packages/torch/lib/libshm/libshm.h" in pytorch
    assert not any("/libshm/" in path for path in result.contents["libtorch"])


def test_pytorchs_own_headers_outside_the_old_allow_list_ship(replay_2_15) -> None:
    wheel, result = replay_2_15
    libtorch = result.contents["libtorch"]
    include = "Library/include" if wheel.platform == "win-64" else "include"
    assert f"{include}/libshm.h" in libtorch
    assert f"{include}/ATen/ATen.h" in libtorch
    assert f"{include}/dnnl.h" not in libtorch and f"{include}/sleef.h" not in libtorch


def test_runtime_libraries_upstream_copies_in_are_left_to_their_packages(replay_2_15) -> None:
    wheel, result = replay_2_15
    left = {path.removeprefix("torch/"): owner for path, owner in result.left_to_host}
    expected = {
        "linux-64": {"lib/libgomp.so.1": "libgomp"},
        "osx-arm64": {"lib/libomp.dylib": "llvm-openmp", "include/omp.h": "llvm-openmp"},
        "win-64": {
            "lib/libiomp5md.dll": "intel-openmp",
            "lib/libiompstubs5md.dll": "intel-openmp",
            "lib/uv.dll": "libuv",
        },
    }[wheel.platform]
    assert expected.items() <= left.items()
    shipped = {p.rpartition("/")[2] for files in result.contents.values() for p in files}
    assert not {p.rpartition("/")[2] for p in expected} & shipped


def test_windows_libtorch_ships_torchs_own_dlls_only(upstream_2_15_wheel) -> None:
    _, result = _replay(upstream_2_15_wheel("win-64"))
    dlls = sorted(p for p in result.contents["libtorch"] if p.endswith(".dll"))
    assert dlls == [
        f"Library/bin/{name}.dll"
        for name in ("c10", "shm", "torch", "torch_cpu", "torch_global_deps")
    ]
    assert "Library/bin/torch_python.dll" in result.contents["pytorch"]


def test_the_layout_command_prints_each_output_and_passes(upstream_2_15_wheel) -> None:
    feedstock_matrix.need(platform="osx-arm64")  # the command picks the config it lays out for
    wheel = upstream_2_15_wheel("osx-arm64")
    done = subprocess.run(
        [sys.executable, "-m", "tools", "layout", str(wheel)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = done.stdout.splitlines()
    # a recipe at 2.15.0 holds the wheel to its licence list too: those lines aside, it passes
    kinds = ("stops the build", "in two outputs", "in no output", "python-bound")
    assert [line for line in lines if line.startswith(kinds)] == [], done.stdout + done.stderr
    if wheel.name.split("-")[1] != current().version:
        assert done.returncode == 0, done.stdout + done.stderr
    assert any(line.startswith("libtorch: ") and " files, " in line for line in lines)
    assert any(line.startswith("pytorch: ") for line in lines)
    assert "left to the host's llvm-openmp: torch/lib/libomp.dylib" in lines
