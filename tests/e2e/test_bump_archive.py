"""``python -m tools bump`` learns from the source archive alone (no --wheel): a feedstock copy
moved straight to the 2.15-like miniature release (tests/helpers/bump/releases.py: Python
3.10 dropped, consumers held to C++20, CUDA 12 refused, new environment knobs, a listed
licence file gone), and to the older release, which changes none of these."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import feedstock_matrix
from helpers.build_scripts import build_sh_text
from helpers.bump import command, releases
from packaging.version import Version

from tools.bump import knobs, licences, source


class FromArchive:
    """A feedstock bumped to the 2.15-like release with --source only, and one bumped to the
    older release, with what each run printed."""

    def __init__(self, root: Path) -> None:
        self.feedstock = releases.feedstock(root / "feedstock")
        self.recipe = self.feedstock / "recipe"
        releases.write_patches(self.recipe)
        start = command.recipe_releases(self.recipe)[0].version
        older, newer = command.releases_after(start)
        archive = releases.newer_release(root / "releases", newer, root)
        self.result = command.bump(self.feedstock, newer, "--source", archive)
        self.older_feedstock = releases.feedstock(root / "older-feedstock")
        releases.write_patches(self.older_feedstock / "recipe")
        older_archive = releases.older_release(root / "releases", older, root)
        self.older = command.bump(self.older_feedstock, older, "--source", older_archive)

    def item(self, start: str) -> str:
        """The one checklist line that starts with ``start``."""
        (line,) = [x for x in self.result.stdout.splitlines() if x.startswith(f"  - {start}")]
        return line


@pytest.fixture(scope="module")
def bumped(tmp_path_factory) -> FromArchive:
    return FromArchive(tmp_path_factory.mktemp("bump-archive"))


def test_the_python_skip_is_written_from_the_archives_pyproject_without_a_wheel(bumped) -> None:
    out = bumped.result.stdout
    assert f"Python:  requires {releases.REQUIRES_PYTHON_215} (the new source's pyproject" in out
    assert "Python:  skips 3.10 (below 3.11) in both recipes" in out
    assert "skip: true  # [py<311]" in (bumped.recipe / "meta.yaml").read_text()
    assert '- match(python, "<3.11")' in (bumped.recipe / "recipe-v1.yaml").read_text()


def test_the_cxx_standard_torchconfig_requires_is_on_the_checklist(bumped) -> None:
    standard = releases.CXX_STANDARD_215
    assert f"requires cxx_std_{standard} of every consumer" in bumped.item(f"C++{standard}:")


def test_cmake_test_is_left_to_follow_the_installed_release_by_itself(bumped) -> None:
    # recipe/cmake_test reads the standard off the installed TorchConfig.cmake; a bump that
    # wrote a number into it would pin the next release's consumers to this one's.
    assert "changed: recipe/cmake_test" not in bumped.result.stdout
    cmake_test = Path("recipe", "cmake_test", "CMakeLists.txt")
    assert (bumped.feedstock / cmake_test).read_bytes() == (releases.REPO / cmake_test).read_bytes()


def test_each_cuda_the_configs_build_below_the_sources_minimum_is_named(bumped) -> None:
    minimum = releases.CUDA_MINIMUM_215
    configs = feedstock_matrix.select(cuda=True, root=bumped.feedstock)
    built = {c.cuda for c in configs}
    below = [v for v in built if Version(v) < Version(minimum)]
    # a CUDA version at or above the minimum is never named
    assert not [v for v in built if v not in below and f"  - CUDA {v}:" in bumped.result.stdout]
    if not below:
        pytest.skip(f".ci_support holds no config with a CUDA below {minimum}")
    for version in below:
        line = bumped.item(f"CUDA {version}: ")
        assert f"requires CUDA {minimum} or newer (cmake/public/cuda.cmake)" in line
        assert all(c.name in line for c in configs if c.cuda == version)


def test_environment_knobs_the_cmake_reads_and_no_script_names_are_listed(bumped) -> None:
    line = bumped.item("environment knobs the new source's CMake reads")
    recipe = bumped.feedstock / "recipe"
    batch = "".join(path.read_text() for path in sorted(recipe.glob("bld*.bat")))
    scripts = build_sh_text(recipe) + batch + (recipe / "build_env.txt").read_text()
    for name in releases.NEW_KNOBS_215:
        # Listed unless a build script already sets it (TORCH_NATIVE_AOT=0 for CUDA).
        named = re.search(rf"\b{name}=", scripts) is not None
        assert (f" {name} (" in line) != named, name
    # The release forwards these too, and the build scripts set them.
    assert "TORCH_CUDA_ARCH_LIST" not in line and "MAGMA_HOME" not in line


def test_a_listed_licence_file_the_archive_lacks_is_on_the_checklist(bumped) -> None:
    line = bumped.item("licence files the recipes list that the new source lacks (1):")
    assert releases.DROPPED_LICENCE_215 in line


def test_licence_files_upstream_declares_and_the_recipes_do_not_list_are_named(bumped) -> None:
    line = bumped.item("licence files the new source's pyproject.toml declares")
    assert line.count("third_party/") == len(releases.NEW_LICENCES_215)
    assert all(path in line for path in releases.NEW_LICENCES_215)


def test_a_release_that_changes_none_of_these_adds_no_such_item(bumped) -> None:
    # The one problem: without --wheel the release's commit is unknown (test_bump.py).
    assert bumped.older.returncode == 1, bumped.older.stderr
    assert bumped.older.stderr.strip().splitlines()[-1].startswith("problems: the recipes still")
    out = bumped.older.stdout
    for start in ("environment knobs", "C++", "CUDA ", "licence files"):
        assert f"  - {start}" not in out, out
    assert "changed: recipe/cmake_test" not in out


# -- the readers, on upstream's shapes --------------------------------------------------------


def test_forwarding_reads_the_listed_names_the_alias_sides_and_the_prefixes() -> None:
    text = """
# a comment naming NOT_A_KNOB
set(_ENV_ALIASES
  "CUDNN_LIB_DIR=CUDNN_LIBRARY"
)
set(_ENV_PASSTHROUGH
  BLAS
  FLASH_ATTENTION_MAX_JOBS
)
foreach(_alias IN LISTS _ENV_ALIASES)
endforeach()
foreach(_var IN LISTS _ENV_PASSTHROUGH)
  set(${_var} "$ENV{${_var}}" CACHE STRING "From env" FORCE)
endforeach()
set(_envfwd_script [==[
select = re.compile(r"^(BUILD_|USE_|CMAKE_)|(EXITCODE|EXITCODE__TRYRUN_OUTPUT)$")
]==])
"""
    prefixes, names = knobs.forwarding(text)
    assert prefixes == ("BUILD_", "USE_", "CMAKE_")
    assert names == ("CUDNN_LIB_DIR", "BLAS", "FLASH_ATTENTION_MAX_JOBS")


def test_a_cuda_check_that_only_warns_or_is_commented_out_sets_no_minimum(tmp_path) -> None:
    (tmp_path / "cmake").mkdir()
    (tmp_path / "cmake" / "cuda.cmake").write_text(
        "# if(CUDA_VERSION VERSION_LESS 14.0)\n#   message(FATAL_ERROR old)\n"
        "if(CUDA_VERSION VERSION_LESS 13.0)\n  message(WARNING deprecated)\nendif()\n"
        'if(CUDA_VERSION VERSION_LESS "12.6")\n  message(FATAL_ERROR "needs 12.6")\nendif()\n'
    )
    found = source.cuda_minimum(tmp_path, ["cmake/cuda.cmake", "third_party/x/CMakeLists.txt"])
    assert (found.version, found.where) == ("12.6", "cmake/cuda.cmake")


def test_licence_globs_span_directories_only_with_two_stars() -> None:
    present = ["LICENSE", "third_party/a/LICENSE", "third_party/a/b/LICENSE.md", "x/LICENSE"]
    assert licences.declared_files(["LICENSE", "third_party/**/LICENSE*"], present) == [
        "LICENSE",
        "third_party/a/LICENSE",
        "third_party/a/b/LICENSE.md",
    ]
    assert licences.declared_files(["third_party/*/LICENSE"], present) == ["third_party/a/LICENSE"]


def test_the_wheels_requires_python_serves_a_source_that_states_none(tmp_path) -> None:
    feedstock = releases.feedstock(tmp_path / "feedstock")
    releases.write_patches(feedstock / "recipe")
    older = command.releases_after(command.recipe_releases(feedstock / "recipe")[0].version)[0]
    archive = releases.older_release(tmp_path / "releases", older, tmp_path)
    wheel = command.wheel(tmp_path, older)
    result = command.bump(feedstock, older, "--source", archive, "--wheel", wheel)
    assert result.returncode == 0, result.stderr
    assert f"Python:  requires >=3.11 ({wheel.name} METADATA)" in result.stdout
    assert "Python:  skips 3.10 (below 3.11) in both recipes" in result.stdout
