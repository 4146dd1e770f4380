"""build-locally.py as a new maintainer meets it on a machine with no container engine, no
conda-build and no internet (issue 43): what it says when it refuses, and what its menu and
its dry run tell them before anything starts.

Each test runs ``python build-locally.py`` in a copy of this feedstock, with a PATH that holds
this Python and nothing else a build could use (no ``docker``, no ``conda-build``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import feedstock_matrix
from helpers.cli import answer_on_a_terminal
from helpers.in_process import run_python

from tools.foundation.files import sha256_of
from tools.localbuild.engines.base import host_subdir
from tools.localbuild.engines.offline.airgap import recipe_source
from tools.recipe import release

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def feedstock(tmp_path: Path) -> Path:
    """This repository's recipe, variant files, conda-forge.yml and build-locally.py (the
    toolkit stays where it is, on PYTHONPATH)."""
    root = tmp_path / "feedstock"
    for name in ("recipe", ".ci_support"):
        shutil.copytree(ROOT / name, root / name)
    for name in ("conda-forge.yml", "build-locally.py", "LICENSE.txt"):
        shutil.copy2(ROOT / name, root / name)
    return root


@pytest.fixture
def bare_path(tmp_path: Path) -> str:
    """A PATH with this Python alone: no container engine, no conda-build."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "python").symlink_to(sys.executable)
    return str(folder)


def build_locally(
    root: Path, *args: str, path: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CONDA_PREFIX", "CI")}
    env.update(PATH=path, PYTHONPATH=str(ROOT))
    return run_python([sys.executable, "build-locally.py", *args], cwd=root, env=env, stdin=stdin)


def _error(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2, result.stdout + result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ")
    return line


# -- item 6: the refusal names the flag the person typed -------------------------------------


@pytest.mark.parametrize("flags", [("--native",), ("--engine", "conda-build")])
def test_a_forced_engine_that_is_absent_is_refused_naming_the_flag_typed(
    feedstock: Path, bare_path: str, flags: tuple[str, ...]
) -> None:
    """Before: `--all --native` said "--engine conda-build needs conda-build on PATH"."""
    line = _error(build_locally(feedstock, "--all", *flags, path=bare_path))
    assert line.startswith(f"error: {' '.join(flags)} needs conda-build on PATH: ")


@pytest.mark.parametrize("flags", [("--native",), ("--engine", "conda-build")])
def test_embedded_only_options_with_another_engine_name_the_flag_to_replace(
    feedstock: Path, bare_path: str, flags: tuple[str, ...]
) -> None:
    """Before: "add --engine rattler-build", which --native refuses beside it."""
    conda_build = Path(bare_path) / "conda-build"  # found on PATH is all the ladder asks
    conda_build.write_text("#!/bin/sh\nexit 0\n")
    conda_build.chmod(0o755)
    config = feedstock_matrix.need(platform=host_subdir(), cuda=False, root=feedstock)
    mirror = feedstock / "mirror"
    line = _error(
        build_locally(feedstock, config.name, *flags, "--channel", str(mirror), path=bare_path)
    )
    assert f"replace {' '.join(flags)} with --engine rattler-build, or drop it" in line


# -- item 5: the menu and the refusals say what this machine cannot build, and why ----------


def _menu(root: Path, path: str) -> list[str]:
    """The numbered menu build-locally.py shows on a terminal (answered with an empty line)."""
    env = {k: v for k, v in os.environ.items() if k not in ("CONDA_PREFIX", "CI")}
    env.update(PATH=path, PYTHONPATH=str(ROOT))
    command = [sys.executable, "build-locally.py", "--dry-run"]
    stdout = answer_on_a_terminal(command, b"\n", cwd=root, env=env, timeout=120).stdout
    return [line.split(". ", 1)[1] for line in stdout.splitlines() if ". " in line[:6]]


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_the_menu_without_a_container_marks_every_config_of_another_platform(
    feedstock: Path, bare_path: str
) -> None:
    """Before: without a container engine, the menu marked only what a container could not
    build (osx without the SDK, Windows); linux-aarch64 looked buildable, and picking it
    was refused."""
    here = host_subdir()
    configs = feedstock_matrix.configs(feedstock)
    if len(configs) < 2:
        pytest.skip(".ci_support holds one config: build-locally takes it without a menu")
    menu = _menu(feedstock, bare_path)
    assert len(menu) == len(configs)
    for config in configs:
        [line] = [m for m in menu if f" {config.name}" in m]
        if config.platform != here:
            assert line.endswith(
                f"[cannot build on this machine: {'an' if config.platform[0] in 'aeiou' else 'a'}"
                f" {config.platform} config, and the embedded engine builds only for this "
                f"machine ({here})]"
            ), line


@pytest.mark.parametrize(
    ("platform", "where"),
    [
        ("win-64", "build it on a win-64 machine (Windows configs build only on Windows)"),
        (
            "osx-64",
            "build it on an osx-64 machine or in a container (--engine docker, with OSX_SDK_DIR)",
        ),
    ],
)
def test_a_config_of_another_platform_says_where_it_builds(
    feedstock: Path, bare_path: str, platform: str, where: str
) -> None:
    """Before: "a osx-64 config", and Windows configs sent to a container, which cannot build
    them."""
    if host_subdir() == platform:
        pytest.skip(f"this machine is {platform}")
    config = feedstock_matrix.need(platform=platform, cuda=False, root=feedstock)
    line = _error(build_locally(feedstock, config.name, "--dry-run", path=bare_path))
    assert line.endswith(where), line
    assert " a osx" not in line


# -- item 4: the dry run lists every URL the run fetches --------------------------------------


def _downloads(stdout: str) -> tuple[list[str], list[str]]:
    """The dry run's closing block: the downloads, and what comes from this machine."""
    block = stdout.split("\ndownloads: ", 1)[1].splitlines()
    fetched = [line.strip() for line in block[1:] if line.startswith("  ")]
    here = []
    if "from this machine:" in block:
        at = block.index("from this machine:")
        fetched = [line.strip() for line in block[1:at]]
        here = [line.strip() for line in block[at + 1 :] if line.startswith("  ")]
    return fetched, here


def test_the_dry_run_lists_the_source_archive_and_the_channels_the_run_downloads(
    feedstock: Path, bare_path: str
) -> None:
    """Before: nothing said that the run downloads the release archive and solves against
    conda-forge (issue 43, item 4)."""

    config = feedstock_matrix.need(platform=host_subdir(), cuda=False, root=feedstock)
    result = build_locally(feedstock, config.name, "--dry-run", path=bare_path)
    assert result.returncode == 0, result.stderr
    fetched, here = _downloads(result.stdout)
    url = recipe_source(feedstock).url
    channels = [c for entry in config.values["channel_sources"] for c in entry.split(",")]
    assert [line.split()[0] for line in fetched] == [
        url,
        *(f"https://conda.anaconda.org/{c}" for c in channels),
    ]
    assert "--source-cache DIR" in fetched[0] and "--channel MIRROR" in fetched[1]
    assert here == []


def _tiny_package(folder: Path) -> Path:
    """A valid noarch .conda holding only its metadata (what an index reads)."""
    from conda_package_handling import api

    prefix = folder / "prefix"
    (prefix / "info").mkdir(parents=True)
    (prefix / "info" / "index.json").write_text(
        '{"name": "tiny", "version": "1.0", "build": "0", "build_number": 0, '
        '"subdir": "noarch", "noarch": "generic", "depends": []}'
    )
    (prefix / "info" / "paths.json").write_text('{"files": [], "paths_version": 1}')
    out = folder / "channel" / "noarch"
    out.mkdir(parents=True)
    api.create(str(prefix), ["info/index.json", "info/paths.json"], "tiny-1.0-0.conda", str(out))
    return folder / "channel"


def test_the_dry_run_with_a_mirror_and_a_source_cache_downloads_nothing(
    feedstock: Path, bare_path: str, tmp_path: Path
) -> None:

    config = feedstock_matrix.need(platform=host_subdir(), cuda=False, root=feedstock)
    source = recipe_source(feedstock)
    cache = tmp_path / "sources"
    cache.mkdir()
    (cache / source.name).write_bytes(b"a stand-in for the release archive\n")
    recipe = release.parse(source.recipe, source.recipe.read_text())
    source.recipe.write_text(recipe.with_field("sha256", sha256_of(cache / source.name)).text)
    channel = _tiny_package(tmp_path)
    args = ("--channel", str(channel), "--source-cache", str(cache), "--dry-run")
    result = build_locally(feedstock, config.name, *args, path=bare_path)
    assert result.returncode == 0, result.stderr
    assert "\ndownloads: none\n" in result.stdout
    _fetched, here = _downloads(result.stdout)
    assert here == [
        f"the source archive: {cache / source.name} (--source-cache)",
        f"the channel {channel.as_uri()} (--channel; the run indexes noarch first, in a copy "
        "under build_artifacts/.channel-index/)",
    ]
    assert not (channel / "noarch" / "repodata.json").exists()  # the dry run writes nothing
