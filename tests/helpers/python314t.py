"""Conda-forge's python314t migration and upstream's free-threaded 3.14t wheel, for the tests
of free-threaded Python (tests/e2e/test_python314t_migration.py and _abi.py)."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

from helpers.cache import cached_dir
from helpers.cli import REPO, run_tools


def tools(*args: str, cwd: Path):
    return run_tools(*args, cwd=cwd, env=dict(os.environ, PYTHONPATH=str(REPO)))


C_314T = "torch/_C.cpython-314t-x86_64-linux-gnu.so"
C_314 = "torch/_C.cpython-314-x86_64-linux-gnu.so"
TORCH_PYTHON = "torch/lib/libtorch_python.so"
WHEEL_META = ("torch-2.15.0.dist-info/WHEEL", "torch-2.15.0.dist-info/METADATA")


def python_abi_part(upstream_cp314t_wheel: Path) -> Path:
    """The part of upstream's cp314t wheel that tells its Python ABI, under the wheel's own
    name: torch/_C, libtorch_python.so and the dist-info, byte for byte (kept in the tests'
    cache). ``tools check`` reads every binary of what it checks, and the whole wheel holds
    2.4 GB of them; python.abi reads these."""
    entry = upstream_cp314t_wheel.parent / (upstream_cp314t_wheel.stem + ".python-abi")
    wanted = (C_314T, TORCH_PYTHON, *WHEEL_META)

    def build(folder: Path) -> None:
        with zipfile.ZipFile(upstream_cp314t_wheel) as source:
            write_wheel(folder / upstream_cp314t_wheel.name, {n: source.read(n) for n in wanted})

    def complete(found: Path) -> bool:
        path = found / upstream_cp314t_wheel.name
        return path.is_file() and zipfile.is_zipfile(path)

    return cached_dir(entry, build, complete) / upstream_cp314t_wheel.name


def write_wheel(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def wheel_members(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def check_python_abi(wheel: Path, root: Path) -> list[dict]:
    """python.abi's findings on ``wheel`` against a linux-64 config of ``root``, as
    ``python -m tools check --only python.abi --json --config CONFIG WHEEL`` prints them."""
    from tools.commands.layout import default_config
    from tools.layout.wheel import read_wheel

    config = default_config(root, read_wheel(wheel))
    result = tools(
        "check", "--only", "python.abi", "--json", "--config", config, str(wheel), cwd=root
    )
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)
