"""The miniature as the source the recipe names: PyTorch's release archive, made the way
.github/workflows/create_release.yml makes it, with the recipe's patches the miniature models.

The workflow's "Create source distribution" step (read at pytorch/pytorch@030992c8; the
cleanup is the same at 176cf2ca) copies the checkout, submodules included, into a folder named
after the tag, deletes `.circleci` and `.ci` at its top, then every entry anywhere whose name
starts with `.git` (`find "$PT_RELEASE_NAME" -name '.git*' -exec rm -rv {} \\;`), and packs the
folder with `tar -czf`. So the archive has no `.git` (nor a submodule's `.git` file), no
`.github`, `.gitmodules`, `.gitignore` or `.gitattributes`, and no file naming the commit:
upstream's tools/generate_torch_version.py answers "Unknown" for torch.version.git_version
there, unless the recipe's patch 0013 hands it the commit.

Every harness that gives the recipe its source goes through :func:`recipe_source` (the
end-to-end feedstocks, FakeCondaBuild, the Wine harness) or :func:`released` (the bump tests'
releases); tests/e2e/test_release_archive.py holds the rule against the workflow's commands.
"""

from __future__ import annotations

import fnmatch
import shutil
import subprocess
from pathlib import Path

from helpers.minitorch.support import RECIPE_DIR, SETUPTOOLS, copy_project

#: Where the rule was read.
CREATE_RELEASE = (
    "pytorch/pytorch@030992c8698557a967d701a5bb7835e1466bf975 .github/workflows/create_release.yml"
)
#: `rm -rf "$PT_RELEASE_NAME"/{.circleci,.ci}`: at the top of the tree only.
TOP_LEVEL_REMOVED = (".circleci", ".ci")
#: `find "$PT_RELEASE_NAME" -name '.git*'`: a file or folder of that name anywhere.
REMOVED_PATTERN = ".git*"

#: The recipe's patches whose upstream text the miniature carries, so they apply to it as to
#: PyTorch's source (0013: get_sha in tools/generate_torch_version.py). The others patch files
#: the miniature models otherwise or not at all; the harnesses leave them out.
MODELLED_PATCHES = (
    "patches/0013-tools-generate_torch_version-takes-the-release-commit-from-the-recipe.patch",
)


def removed_by_release(tree: Path) -> list[str]:
    """The entries of ``tree`` that create_release.yml's cleanup deletes, relative to it."""
    found = [name for name in TOP_LEVEL_REMOVED if (tree / name).exists()]
    for path in sorted(tree.rglob(REMOVED_PATTERN)):
        rel = path.relative_to(tree)
        # What lies inside a deleted folder goes with it.
        inside = rel.parts[:-1]
        if inside[:1] and inside[0] in TOP_LEVEL_REMOVED:
            continue
        if not any(fnmatch.fnmatch(part, REMOVED_PATTERN) for part in inside):
            found.append(rel.as_posix())
    return found


def released(tree: Path) -> Path:
    """``tree`` after create_release.yml's cleanup, in place."""
    for rel in removed_by_release(tree):
        path = tree / rel
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    return tree


def apply_modelled_patches(tree: Path, recipe_dir: Path = RECIPE_DIR) -> Path:
    """The recipe's patches the miniature models, applied as the engines' source step applies
    every listed patch (`patch -p1`, no fuzz: they apply to the miniature exactly)."""
    for name in MODELLED_PATCHES:
        subprocess.run(
            ["patch", "-p1", "--fuzz=0", "--quiet", "-i", str(recipe_dir / name)],
            cwd=tree,
            check=True,
            capture_output=True,
        )
    return tree


def recipe_source(dest: Path, layout: str = SETUPTOOLS, recipe_dir: Path = RECIPE_DIR) -> Path:
    """The work folder's source as conda-build leaves it before the build script runs: the
    miniature in ``layout`` as the release archive holds it, with the modelled patches."""
    return apply_modelled_patches(released(copy_project(dest, layout)), recipe_dir)
