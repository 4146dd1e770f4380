"""``python -m tools bump`` end to end, offline: two miniature releases served from file://
(tests/helpers/bump/releases.py says what each stands for), a feedstock copy moved to the
first (setup.py layout, every patch applies) and then to the second (scikit-build-core, one
patch rejected, one to drop), with the release's wheel (2.15.0's real METADATA lines)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import feedstock_matrix
from helpers.bump import command, releases

REPO = releases.REPO


class Bumped:
    """A feedstock bumped twice, with what each run printed."""

    def __init__(self, root: Path) -> None:
        self.work = root
        self.releases = root / "releases"
        self.feedstock = releases.feedstock(root / "feedstock")
        self.recipe = self.feedstock / "recipe"
        releases.point_url_at(self.recipe, self.releases)
        releases.write_patches(self.recipe)
        self.start = command.recipe_releases(self.recipe)[0]
        self.start_commit = command.recipe_commits(self.recipe)[0]
        self.older, self.newer = command.releases_after(self.start.version)
        self.older_archive = releases.older_release(self.releases, self.older, root)
        self.newer_archive = releases.newer_release(self.releases, self.newer, root)
        self.first = command.bump(self.feedstock, self.older)
        self.after_first = command.recipe_releases(self.recipe)
        self.commits_after_first = command.recipe_commits(self.recipe)
        self.readme_before = (self.feedstock / "README.md").read_text()
        self.second = command.bump(
            self.feedstock,
            self.newer,
            "--source",
            self.newer_archive,
            "--wheel",
            command.wheel(root, self.newer),
        )
        self.after_second = command.recipe_releases(self.recipe)
        self.commits_after_second = command.recipe_commits(self.recipe)


@pytest.fixture(scope="module")
def bumped(tmp_path_factory) -> Bumped:
    return Bumped(tmp_path_factory.mktemp("bump"))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- the first bump: the recipe's own url, every patch applies --------------------------------


def test_version_sha256_from_the_archive_and_build_0_go_into_both_recipes(bumped) -> None:
    assert [(r.version, r.sha256, r.build) for r in bumped.after_first] == [
        (bumped.older, _sha256(bumped.older_archive), 0)
    ] * 2


def test_the_archive_is_fetched_from_the_recipes_url_with_the_new_version(bumped) -> None:
    assert f"source:  {bumped.older_archive.as_uri()}" in bumped.first.stdout


def test_without_a_wheel_the_recipes_keep_the_old_commit_and_the_bump_says_so(bumped) -> None:
    # Only the release's wheel states its commit (torch/version.py); the archive has no .git.
    result, old = bumped.first, bumped.start_commit
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"problems: the recipes still record {bumped.start.version}'s commit {old} as "
        f"git_version; only the release's wheel states {bumped.older}'s: run bump again with "
        "--wheel"
    )
    assert f"  - git_version: still {bumped.start.version}'s commit {old};" in result.stdout
    assert bumped.commits_after_first == [old, old]


def test_every_patch_applying_is_reported_and_the_setuptools_backend_named(bumped) -> None:
    out = bumped.first.stdout
    assert all(f"patch    {name}: applies" in out for name in releases.PATCHES), out
    assert "backend: setuptools" in out


# -- the second bump: scikit-build-core, a rejected patch, the wheel --------------------------


def test_a_patch_that_no_longer_applies_is_named_with_its_rejected_files(bumped) -> None:
    result = bumped.second
    assert result.returncode == 1, result.stderr
    assert "0001-cmake-note-after-the-minimum-version.patch: rejected hunks in CMakeLists.txt" in (
        result.stdout
    )
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith("problems: 2 patch(es) no longer apply: patches/0001-")
    )


def test_the_patch_of_setup_py_is_one_to_drop_on_a_scikit_build_core_source(bumped) -> None:
    out = bumped.second.stdout
    assert "backend: scikit-build-core (scikit_build_core.build;" in out
    assert "drop patches/0002-setup-pass-CMAKE_ARGS.patch: it patches only setup.py (" in out
    assert "patch    patches/0003-c10-a-note.patch: applies" in out


def test_the_wheels_commit_goes_into_both_recipes(bumped) -> None:
    commit = command.wheel_commit()
    assert f"  commit:  {commit} (torch/version.py's git_version)" in bumped.second.stdout
    assert bumped.commits_after_second == [commit, commit]
    assert "git_version" not in bumped.second.stderr  # the problems line names the patches only


def test_a_build_option_new_in_the_release_is_on_the_checklist(bumped) -> None:
    assert f"leave at upstream's default (1): {releases.NEW_OPTION}" in bumped.second.stdout


def test_the_recipes_are_written_although_a_patch_fails(bumped) -> None:
    assert [(r.version, r.sha256, r.build) for r in bumped.after_second] == [
        (bumped.newer, _sha256(bumped.newer_archive), 0)
    ] * 2


def test_pythons_below_requires_python_get_a_skip_in_both_recipes(bumped) -> None:
    assert "Python:  skips 3.10 (below 3.11) in both recipes" in bumped.second.stdout
    assert "skip: true  # [py<311]" in (bumped.recipe / "meta.yaml").read_text()
    assert '- match(python, "<3.11")' in (bumped.recipe / "recipe-v1.yaml").read_text()


def test_the_bumped_recipe_renders_without_the_dropped_python(bumped) -> None:
    # a CPU config where the matrix has one (the fastest to render)
    chosen = feedstock_matrix.prefer({"cuda": False}, {}, root=bumped.feedstock)
    assert chosen is not None, ".ci_support holds no configs"
    config = chosen.name
    tag = "cpu" if chosen.cuda is None else f"cuda{chosen.cuda.replace('.', '')}"
    result = subprocess.run(
        [sys.executable, str(REPO / "tools"), "render", "--built-only", config],
        cwd=bumped.feedstock,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert f"pytorch-{bumped.newer}-{tag}_" in result.stdout
    assert "_py310_" not in result.stdout and "_py311_" in result.stdout


def test_the_cuda_release_and_the_pins_that_moved_are_on_the_checklist(bumped) -> None:
    out = bumped.second.stdout
    assert "CUDA:    cuda-toolkit[" in out and "==13.2.2" in out
    # the feedstock's CUDA 13 configurations, as the checklist compares them with upstream's
    ours = [v for v in feedstock_matrix.cuda_versions(root=bumped.feedstock) if v[:3] == "13."]
    if ours:
        assert "CUDA: upstream builds with 13.2.2 (" in out and ", ".join(ours) in out
    else:
        assert "CUDA 13: upstream builds with" in out and "no configuration builds" in out
    assert "pin triton: upstream >=3.9.0,3.9.*" in out
    assert "pin libnvshmem3:" in out and "no libnvshmem-dev in host" in out


def test_the_ci_job_table_and_the_drift_table_are_regenerated(bumped) -> None:
    readme = (bumped.feedstock / "README.md").read_text()
    assert readme != bumped.readme_before
    assert "changed: README.md (CI-job table)" in bumped.second.stdout
    assert "3.11, 3.12, 3.13, 3.14 | libtorch" in readme and "pytorch (x4)" in readme
    assert "changed: docs/drift.md (drift table)" in bumped.second.stdout
    drift_page = (bumped.feedstock / "docs" / "drift.md").read_text()
    assert f"torch-{bumped.newer} wheel METADATA" in drift_page


# -- refusals: nothing is written -------------------------------------------------------------


@pytest.fixture
def feedstock(tmp_path: Path) -> Path:
    root = releases.feedstock(tmp_path / "feedstock")
    releases.write_patches(root / "recipe")
    return root


def _recipe_texts(root: Path) -> list[str]:
    return [(root / "recipe" / n).read_text() for n in ("meta.yaml", "recipe-v1.yaml")]


def test_no_archive_and_no_network_refuses_and_prints_the_fetch_command(feedstock) -> None:
    before = _recipe_texts(feedstock)
    version = command.releases_after(command.recipe_releases(feedstock / "recipe")[0].version)[0]
    url = f"http://127.0.0.1:9/pytorch-v{version}.tar.gz"  # nothing listens on port 9
    result = command.bump(feedstock, version, "--source", url)
    assert result.returncode == 2, result.stderr
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert f"curl -fL -o pytorch-v{version}.tar.gz {url}" in line
    assert f"bump {version} --source pytorch-v{version}.tar.gz" in line
    assert "Traceback" not in result.stderr
    assert _recipe_texts(feedstock) == before


def test_a_wheel_of_another_release_is_refused_before_anything_is_written(
    feedstock, tmp_path
) -> None:
    before = _recipe_texts(feedstock)
    older, newer = command.releases_after(command.recipe_releases(feedstock / "recipe")[0].version)
    archive = releases.older_release(tmp_path / "releases", older, tmp_path)
    result = command.bump(
        feedstock, older, "--source", archive, "--wheel", command.wheel(tmp_path, newer)
    )
    assert result.returncode == 2
    assert f"the wheel is torch {newer}, not {older}" in result.stderr
    assert _recipe_texts(feedstock) == before


def test_a_wheel_built_without_git_is_refused_before_anything_is_written(
    feedstock, tmp_path
) -> None:
    # A wheel built from the release archive itself records "Unknown", not the release's commit.
    before = _recipe_texts(feedstock)
    older = command.releases_after(command.recipe_releases(feedstock / "recipe")[0].version)[0]
    archive = releases.older_release(tmp_path / "releases", older, tmp_path)
    wheel = command.wheel(tmp_path, older, git_version="Unknown")
    result = command.bump(feedstock, older, "--source", archive, "--wheel", wheel)
    assert result.returncode == 2
    assert "torch/version.py has 'Unknown', not a commit" in result.stderr
    assert _recipe_texts(feedstock) == before


def test_recipes_that_disagree_are_refused(feedstock) -> None:
    meta = feedstock / "recipe" / "meta.yaml"
    start = command.recipe_releases(feedstock / "recipe")[0]
    meta.write_text(meta.read_text().replace(start.sha256, "0" * 64))
    result = command.bump(
        feedstock, command.releases_after(start.version)[0], "--source", "/nonexistent"
    )
    assert result.returncode == 2
    assert "recipes disagree on the sha256: meta.yaml:" in result.stderr


def test_going_back_to_an_older_version_is_refused(feedstock) -> None:
    result = command.bump(feedstock, "0.1.0", "--source", "/nonexistent")
    assert result.returncode == 2
    assert "bump does not go back to 0.1.0" in result.stderr


@pytest.mark.slow  # the matrix from the pinning, then every config rendered twice: ~30 s
def test_with_a_pinning_ci_support_is_rerendered_and_matrix_check_agrees(
    feedstock, tmp_path, pinning_dir
) -> None:
    older = command.releases_after(command.recipe_releases(feedstock / "recipe")[0].version)[0]
    archive = releases.older_release(tmp_path / "releases", older, tmp_path)
    stale = feedstock / ".ci_support" / "linux_64_retired.yaml"
    stale.write_text("target_platform:\n- linux-64\n")
    wheel = command.wheel(tmp_path, older)
    result = command.bump(
        feedstock, older, "--source", archive, "--wheel", wheel, "--pinning", pinning_dir
    )
    assert result.returncode == 0, result.stderr
    assert "rerender:" not in result.stdout
    # Each .ci_support change says what was done to the file, as `matrix --write` does.
    assert "changed: .ci_support/linux_64_retired.yaml (removed)" in result.stdout.splitlines()
    assert not stale.exists()
    assert "stale:" not in result.stdout
    check = subprocess.run(
        [sys.executable, str(REPO / "tools"), "matrix", "--check", "--pinning", str(pinning_dir)],
        cwd=feedstock,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_patch_of_setup_helpers_is_one_to_drop_even_where_it_still_applies() -> None:
    from tools.bump.backend import Backend
    from tools.bump.checklist import patch_items
    from tools.bump.patches import PatchResult

    applies = PatchResult("patches/0003-setup.patch", ("tools/setup_helpers/cmake.py",))
    skbuild = Backend("scikit-build-core", "scikit_build_core.build", "pyproject.toml")
    setuptools = Backend("setuptools", "setuptools.build_meta", "pyproject.toml")
    assert patch_items([applies], skbuild)[0].startswith("drop patches/0003-setup.patch")
    assert patch_items([applies], setuptools) == []


def test_without_a_python_list_in_ci_support_the_skip_is_left_alone() -> None:
    from tools.bump.wheel import python_range

    assert not python_range(">=3.11", []).known
    assert not python_range(None, ["3.10", "3.11"]).known
    kept = python_range(">=3.11", ["3.10", "3.11", "3.12"])
    assert (kept.known, kept.floor, kept.dropped) == (True, "3.11", ("3.10",))
    assert python_range(">=3.10", ["3.10", "3.11"]).floor is None  # nothing dropped: no skip
