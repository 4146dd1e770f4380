"""The check the end-to-end tests run over every built package: bytecode outside
site-packages (tests/helpers/e2e_feedstock.py), on a package made here."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from conda_package_streaming.create import conda_builder
from helpers.conda_packages import bytecode_outside_site_packages

MEMBERS = (
    "info/index.json",
    "info/recipe/cmake_cache/__main__.py",
    "info/recipe/cmake_cache/__pycache__/cache_file.cpython-312.pyc",
    "etc/conda/test-files/pytorch/1/tools/metadata/__pycache__/version.cpython-313.pyc",
    "lib/python3.13/site-packages/torch/__pycache__/__init__.cpython-313.pyc",
)


def _package(folder: Path) -> Path:
    with conda_builder("pytorch-1.0-py313_0", folder, compression_level=1) as tar:
        for name in MEMBERS:
            info = tarfile.TarInfo(name)
            info.size = len(name)
            tar.addfile(info, io.BytesIO(name.encode()))
    return folder / "pytorch-1.0-py313_0.conda"


def test_bytecode_outside_site_packages_is_found_in_info_and_the_payload(tmp_path) -> None:
    assert sorted(bytecode_outside_site_packages(_package(tmp_path))) == [
        "etc/conda/test-files/pytorch/1/tools/metadata/__pycache__/version.cpython-313.pyc",
        "info/recipe/cmake_cache/__pycache__/cache_file.cpython-312.pyc",
    ]
