"""The source every harness hands the recipe is PyTorch's release archive as
.github/workflows/create_release.yml makes it (tests/helpers/minitorch/release.py): no .git*
anywhere, no .circleci or .ci. Before issue 60 the end-to-end builds took a git checkout of the
miniature, whose commit became torch.version.git_version; a build from the real archive gets
"Unknown" there, and the recipe's own check stopped every pytorch package."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

import pytest
from helpers.bump import releases
from helpers.e2e_feedstock import CPU, E2EFeedstock
from helpers.minitorch.fake_conda_build import FakeCondaBuild
from helpers.minitorch.release import (
    CREATE_RELEASE,
    MODELLED_PATCHES,
    apply_modelled_patches,
    released,
    removed_by_release,
)
from helpers.minitorch.support import LAYOUTS, copy_project

#: The cleanup of create_release.yml's "Create source distribution" step, as it reads at
#: CREATE_RELEASE (the folder is the checkout's copy, named after the tag).
WORKFLOW_CLEANUP = """
rm -rf "$PT_RELEASE_NAME"/{.circleci,.ci}
find "$PT_RELEASE_NAME" -name '.git*' -exec rm -rv {} \\; || true
"""


def files(tree: Path) -> set[str]:
    return {p.relative_to(tree).as_posix() for p in tree.rglob("*")}


def checkout(root: Path) -> Path:
    """A checkout's shapes: the repository's .git, a submodule's .git file, the .git* files,
    CI folders at the top and deeper, and names that only resemble them."""
    tree = root / "pytorch-v2.13.0"
    for rel in (
        ".git/HEAD",
        ".git/objects/ab/cdef",
        ".github/workflows/create_release.yml",
        ".circleci/config.yml",
        ".ci/pytorch/build.sh",
        ".gitmodules",
        ".gitignore",
        ".gitattributes",
        "third_party/fmt/.git",
        "third_party/fmt/.github/dependabot.yml",
        "third_party/fmt/.ci/build.sh",
        "third_party/fmt/.gitignore",
        "third_party/fmt/src/format.cc",
        "tools/generate_torch_version.py",
        ".clang-format",
        "docs/git_notes.txt",
    ):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(f"{rel}\n")
    return tree


def test_the_cleanup_deletes_what_create_release_yml_deletes(tmp_path: Path) -> None:
    ours, theirs = checkout(tmp_path / "ours"), checkout(tmp_path / "theirs")
    subprocess.run(
        ["bash", "-c", WORKFLOW_CLEANUP],
        cwd=theirs.parent,
        env={"PT_RELEASE_NAME": theirs.name, "PATH": "/usr/bin:/bin"},
        check=True,
        capture_output=True,
    )
    assert files(released(ours)) == files(theirs), CREATE_RELEASE
    # Deeper .ci folders stay (the workflow names the top ones); every .git* goes.
    assert "third_party/fmt/.ci/build.sh" in files(ours)
    assert not [f for f in files(ours) if "/.git" in f"/{f}"]


def test_what_the_cleanup_removes_is_listed_once_per_entry(tmp_path: Path) -> None:
    tree = checkout(tmp_path)
    assert sorted(removed_by_release(tree)) == sorted(
        [
            ".circleci",
            ".ci",
            ".git",
            ".github",
            ".gitmodules",
            ".gitignore",
            ".gitattributes",
            "third_party/fmt/.git",
            "third_party/fmt/.github",
            "third_party/fmt/.gitignore",
        ]
    )


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_recipes_modelled_patches_apply_to_the_miniature_without_fuzz(
    layout: str, tmp_path: Path
) -> None:
    # As they apply to PyTorch's files (tests/e2e/test_patches_2_13.py); the engines apply them.
    tree = copy_project(tmp_path / "src", layout)
    apply_modelled_patches(tree)
    assert "CF_TORCH_RELEASE_COMMIT" in (tree / "tools" / "generate_torch_version.py").read_text()
    assert MODELLED_PATCHES


# -- every harness: what the recipe gets -------------------------------------------------------


def _path_source(recipe: Path) -> Path:
    (line,) = [x for x in recipe.read_text().splitlines() if x.startswith("  path: ")]
    return Path(line.removeprefix("  path: "))


def test_the_end_to_end_feedstocks_path_source_is_a_release_tree(tmp_path: Path) -> None:
    if CPU is None:
        pytest.skip(".ci_support holds no linux-64 CPU generic config")
    fs = E2EFeedstock.make(tmp_path, CPU.name, tmp_path / "channel")
    recipe = fs.root / "recipe" / "recipe.yaml"
    source = _path_source(recipe)
    assert (source / "tools" / "generate_torch_version.py").is_file()
    assert removed_by_release(source) == []
    # The engine applies the patches the miniature models, and no other.
    assert [f"    - {p}" for p in MODELLED_PATCHES] == [
        x for x in recipe.read_text().splitlines() if x.startswith("    - patches/")
    ][: len(MODELLED_PATCHES)]


def archived_git_entries(archive: Path) -> list[str]:
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    return [n for n in names if any(part.startswith(".git") for part in n.split("/"))]


def test_the_embedded_feedstocks_archive_holds_no_git_entry(tmp_path: Path) -> None:
    if CPU is None:
        pytest.skip(".ci_support holds no linux-64 CPU generic config")
    E2EFeedstock.make_embedded(tmp_path, CPU.name, tmp_path / "channel")
    [archive] = (tmp_path / "sources").glob("*.tar.gz")
    assert archived_git_entries(archive) == []


def test_fake_conda_builds_work_folder_is_the_patched_release_tree(tmp_path: Path) -> None:
    variant = {"cuda_compiler_version": "None", "blas_impl": "generic"}
    conda = FakeCondaBuild(tmp_path, variant, megabuild_python="3.12")
    assert removed_by_release(conda.src_dir) == []
    generator = conda.src_dir / "tools" / "generate_torch_version.py"
    assert "CF_TORCH_RELEASE_COMMIT" in generator.read_text()


def test_the_bump_tests_releases_are_release_archives(tmp_path: Path) -> None:
    for make in (releases.older_release, releases.newer_release):
        archive = make(tmp_path / make.__name__, "2.99.0", tmp_path / f"work-{make.__name__}")
        assert archived_git_entries(archive) == []
