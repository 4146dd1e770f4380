"""The embedded engine packs at the format and zstd level conda-forge.yml names (issue 50).

.scripts/build_steps.sh reads ``conda_build.pkg_format`` and ``zstd_compression_level`` from
conda-forge.yml for both conda-build and rattler-build, whatever the environment says; the
embedded engine builds the same packages, so it reads the same keys
(tools/smithy/forge.py ``zstd_level_of``).
"""

from __future__ import annotations

import os
import sys

import pytest
from helpers.e2e_feedstock import without_engines
from helpers.fake_engine_feedstock import CPU, V1_RECIPE, Feedstock

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="drives bash scripts (POSIX)")


def _forge(fs: Feedstock, conda_build: str) -> None:
    (fs.root / "conda-forge.yml").write_text(
        f"conda_build:\n{conda_build}conda_build_tool: conda-build\n"
    )


def _embedded_run(fs: Feedstock, **env: str):
    for engine in ("docker", "podman"):
        (fs.bin / engine).unlink()
    (fs.root / "recipe" / "recipe-v1.yaml").write_text(V1_RECIPE)
    return fs.run(CPU, "--dry-run", PATH=without_engines(os.environ["PATH"]), **env)


def _package_format(stdout: str) -> str:
    [run] = [line for line in stdout.splitlines() if "--package-format" in line]
    words = run.split()
    return words[words.index("--package-format") + 1]


def test_the_level_is_conda_forge_ymls_not_the_environments(tmp_path) -> None:
    fs = Feedstock(tmp_path)
    _forge(fs, "  pkg_format: '2'\n  zstd_compression_level: 7\n")
    dry = _embedded_run(fs, ZSTD_LEVEL="3")
    assert dry.returncode == 0, dry.stderr
    assert _package_format(dry.stdout) == "conda:7"


def test_without_a_level_it_packs_at_conda_smithys_default(tmp_path) -> None:
    fs = Feedstock(tmp_path)
    _forge(fs, "  pkg_format: '2'\n")
    dry = _embedded_run(fs)
    assert dry.returncode == 0, dry.stderr
    assert _package_format(dry.stdout) == "conda:16"


def test_pkg_format_1_packs_tar_bz2(tmp_path) -> None:
    fs = Feedstock(tmp_path)
    _forge(fs, "  pkg_format: '1'\n  zstd_compression_level: 19\n")
    dry = _embedded_run(fs, PKG_FORMAT="2")
    assert dry.returncode == 0, dry.stderr
    assert _package_format(dry.stdout) == "tar-bz2"


def test_a_level_zstd_does_not_have_is_one_line_naming_the_key(tmp_path) -> None:
    fs = Feedstock(tmp_path)
    _forge(fs, "  zstd_compression_level: 30\n")
    dry = _embedded_run(fs)
    assert dry.returncode == 2, dry.stderr
    [line] = dry.stderr.strip().splitlines()
    assert "conda_build.zstd_compression_level: 30" in line and "1 to 22" in line, line
