"""`python -m tools layout` on small wheels made here: exit statuses and what it prints.

The replays of upstream's real wheels are tests/e2e/test_layout_replay.py; these wheels hold a
handful of files in upstream's layout, so each behaviour shows in well under a second.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers import feedstock_matrix
from helpers.recipe_release import current, other_release

ROOT = Path(__file__).resolve().parents[2]
# a release other than the recipe's: the recipe's own is held to meta.yaml's licence list
# (test_the_recipes_release_is_held_to_meta_yamls_licence_list), which these small wheels lack
LINUX = f"torch-{other_release()}-cp312-cp312-manylinux_2_28_x86_64.whl"


def _linux_64() -> str:
    """A linux-64 config of the matrix to lay the wheel out for: conda-forge's CPU MKL one,
    else (a fork's tailored matrix) any linux-64 one: the rules these wheels meet are the same."""
    config = feedstock_matrix.prefer(
        {"platform": "linux-64", "cuda": False, "blas": "mkl"}, {"platform": "linux-64"}
    )
    if config is None:
        pytest.skip(f".ci_support holds no {feedstock_matrix.describe('linux-64')}")
    return config.name


def _wheel(folder: Path, name: str, *files: str) -> Path:
    path = folder / name
    with zipfile.ZipFile(path, "w") as archive:
        for rel in files:
            archive.writestr(rel, rel)
    return path


def _layout(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools", "layout", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


UPSTREAM_SHAPE = (
    "torch/__init__.py",
    "torch/lib/libc10.so",
    "torch/lib/libtorch_python.so",
    "torch/lib/libshm/libshm.h",
    "torch/include/ATen/ATen.h",
    "torch/include/dnnl.h",
    "torch/share/cmake/Torch/TorchConfig.cmake",
)


def test_a_wheel_in_upstreams_shape_passes_and_each_output_is_listed(tmp_path: Path) -> None:
    done = _layout(str(_wheel(tmp_path, LINUX, *UPSTREAM_SHAPE)), "--config", _linux_64())
    assert done.returncode == 0, done.stderr
    assert "libtorch: 3 files" in done.stdout  # libc10.so, ATen.h, TorchConfig.cmake
    assert "pytorch: " in done.stdout


def test_a_library_no_rule_places_fails_the_replay(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, LINUX, *UPSTREAM_SHAPE, "torch/lib/libshm/libnew.so")
    done = _layout(str(wheel), "--config", _linux_64())
    assert done.returncode == 1
    assert "stops the build: torch/lib/libshm/libnew.so: " in done.stdout
    assert done.stderr.splitlines()[-1].startswith("problems: 1 file(s)")


def test_a_file_a_host_requirement_owns_fails_the_replay(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, LINUX, *UPSTREAM_SHAPE, "torch/lib/libuv.so.1")
    done = _layout(str(wheel), "--config", _linux_64())
    assert done.returncode == 1
    assert "stops the build: lib/libuv.so.1: $PREFIX/lib/libuv.so.1 already exists" in done.stdout


def test_a_file_that_is_not_a_torch_wheel_is_one_error_line(tmp_path: Path) -> None:
    path = _wheel(tmp_path, "numpy-2.0.0-cp312-cp312-win_amd64.whl", "numpy/__init__.py")
    done = _layout(str(path))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"error: {path}: not a torch wheel name (torch-VERSION-PY-ABI-PLATFORM.whl)"
    ]


def test_a_broken_archive_is_one_error_line(tmp_path: Path) -> None:
    path = tmp_path / LINUX
    path.write_text("not a zip")
    done = _layout(str(path))
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith(f"error: {path}: cannot read the wheel")


def test_a_missing_wheel_is_one_error_line(tmp_path: Path) -> None:
    done = _layout(str(tmp_path / LINUX))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"error: {tmp_path / LINUX}: no such file; pass an upstream torch wheel"
    ]


def test_the_recipes_release_is_held_to_meta_yamls_licence_list(tmp_path: Path) -> None:
    version = current().version
    licenses = f"torch-{version}.dist-info/licenses"
    wheel = _wheel(
        tmp_path,
        f"torch-{version}-cp312-cp312-manylinux_2_28_x86_64.whl",
        *UPSTREAM_SHAPE,
        f"{licenses}/LICENSE",
        f"{licenses}/third_party/FP16/LICENSE",
    )
    done = _layout(str(wheel), "--config", _linux_64())
    assert done.returncode == 1
    missing = [line for line in done.stdout.splitlines() if line.startswith("licence: ")]
    assert "licence: third_party/kineto/LICENSE: meta.yaml's license_file lists it" in "\n".join(
        missing
    )
    assert not any("third_party/FP16/LICENSE" in line for line in missing)
    assert not any(line.startswith(("licence: LICENSE", "licence: NOTICE")) for line in missing)
