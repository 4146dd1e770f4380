"""Single steps of recipe/build.sh on hand-made trees shaped like upstream's, without building.

The script, sourced, defines its functions and runs no stage; each test lays out what the
step meets (here: the pytorch output's site-packages after `pip install`, and libtorch's
files in $PREFIX) and calls the step as the stage would. Fast.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers.minitorch.support import RECIPE_DIR, clean_env

BUILD_SH = RECIPE_DIR / "build.sh"


def _run_step(tmp_path: Path, step: str) -> subprocess.CompletedProcess[str]:
    env = clean_env(
        CF_TORCH_BUILD_STAGE="pytorch",
        PKG_VERSION="0",
        SRC_DIR=str(tmp_path / "src"),
        PREFIX=str(tmp_path / "prefix"),
        RECIPE_DIR=str(RECIPE_DIR),
        PYTHON=sys.executable,
        SP_DIR=str(tmp_path / "sp"),
        target_platform="linux-64",
        SHLIB_EXT=".so",
    )
    return subprocess.run(
        ["bash", "-c", f'source "{BUILD_SH}" && {step}'],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def _site_packages_after_pip(tmp_path: Path, *extra: str) -> Path:
    """torch/lib as `pip install` leaves it (upstream's 2.13.0 wheel: libshm/ and
    libshm_windows/ header folders beside the libraries), and libtorch's libc10 in $PREFIX."""
    lib = tmp_path / "sp" / "torch" / "lib"
    for rel in (
        "libtorch_python.so",
        "libc10.so",
        "libshm/libshm.h",
        "libshm/alloc_info.h",
        "libshm_windows/libshm.h",
        *extra,
    ):
        (lib / rel).parent.mkdir(parents=True, exist_ok=True)
        (lib / rel).write_text(rel)
    (tmp_path / "prefix" / "lib").mkdir(parents=True)
    (tmp_path / "prefix" / "lib" / "libc10.so").write_text("libtorch's")
    (tmp_path / "src").mkdir()
    return lib


def test_header_folders_in_torch_lib_stay_in_the_pytorch_package(tmp_path: Path) -> None:
    lib = _site_packages_after_pip(tmp_path)
    result = _run_step(tmp_path, "place_torch_libraries")
    assert result.returncode == 0, result.stderr
    assert (lib / "libc10.so").is_symlink()
    assert (lib / "libshm" / "libshm.h").read_text() == "libshm/libshm.h"
    assert not (lib / "libshm" / "libshm.h").is_symlink()
    assert (lib / "libshm_windows" / "libshm.h").is_file()
    assert (tmp_path / "prefix" / "lib" / "libtorch_python.so").is_file()


def test_a_library_hidden_in_a_torch_lib_folder_still_stops_the_build(tmp_path: Path) -> None:
    _site_packages_after_pip(tmp_path, "libshm/libshm.so")
    result = _run_step(tmp_path, "place_torch_libraries")
    assert result.returncode == 2
    assert "torch/lib/libshm/libshm.so is neither libtorch_python nor a file libtorch" in (
        result.stderr
    )


def test_a_new_library_in_torch_lib_stops_the_build(tmp_path: Path) -> None:
    _site_packages_after_pip(tmp_path, "libnew.so")
    result = _run_step(tmp_path, "place_torch_libraries")
    assert result.returncode == 2
    assert "torch/lib/libnew.so is neither libtorch_python nor a file libtorch" in result.stderr


def test_the_compile_stage_in_a_compiled_work_directory_compiles_and_installs_nothing(
    tmp_path: Path,
) -> None:
    # The marker of an earlier compile is gone while this one compiles (a failed compile
    # must not leave the tree looking complete), comes back after it, and nothing is
    # installed. The steps that need a real build are replaced by ones that log.
    marker = tmp_path / "src" / "_stage" / "compiled"
    marker.parent.mkdir(parents=True)
    marker.write_text("3.12\n")
    (tmp_path / "prefix").mkdir()
    stubs = "; ".join(
        f"{name}() {{ :; }}"
        for name in (
            "python_is",
            "require_linkage_tool",
            "detect_build_backend",
            "use_compiler_cache",
            "backend_settings",
        )
    )
    compile_tree = f"[[ -f '{marker}' ]] && echo marker-present || echo compiling"
    step = (
        f"{stubs}; is_linux_cuda() {{ return 1; }}; compile_tree() {{ {compile_tree}; }}; "
        "CF_TORCH_MEGABUILD_PYTHON=3.12 compile_libtorch"
    )
    result = _run_step(tmp_path, step)
    assert result.returncode == 0, result.stderr
    assert "compiling" in result.stdout and "marker-present" not in result.stdout, result
    assert marker.read_text() == "3.12\n"
    assert list((tmp_path / "prefix").iterdir()) == []
