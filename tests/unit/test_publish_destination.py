"""What ``--publish DEST`` and ``--channel`` read as a folder: one reading for both
(engines/offline/airgap.py ``local_folder``), as ``conda install -c`` reads a channel,
and a ``--channel`` folder the engine indexes without writing into it (issue 44)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path, PurePosixPath

import pytest

from tools.foundation.errors import UserError
from tools.localbuild.engines.offline import airgap
from tools.review.publish import destination


@pytest.mark.parametrize(
    ("text", "folder"),
    [
        ("C:/channels/lab", "C:/channels/lab"),  # before: "not a channel"
        ("D:\\channels\\lab", "D:\\channels\\lab"),
        ("file:///srv/lab%20channel", "/srv/lab channel"),
        ("file:///C:/channels/lab", "C:/channels/lab"),
        ("/srv/lab", "/srv/lab"),
        ("./lab", "lab"),
    ],
)
def test_publish_reads_a_folder_as_channel_does(text: str, folder: str) -> None:
    assert airgap.local_folder(text) == Path(folder)
    assert destination(text, cwd=Path("/work")).directory == (Path("/work") / folder).resolve()


@pytest.mark.parametrize("text", ["jlab", "jlab/label/h100", "https://mirror.lab/conda-forge"])
def test_a_channel_name_or_url_is_no_folder(text: str) -> None:
    assert airgap.local_folder(text) is None


def test_channel_finds_a_percent_encoded_file_url_folder(tmp_path: Path) -> None:
    mirror = tmp_path / "lab mirror"
    (mirror / "noarch").mkdir(parents=True)
    # Before: "--channel file://.../lab%20mirror: no such folder" (the URL was not decoded).
    with pytest.raises(UserError, match="no packages in it"):
        airgap.check_channel(mirror.as_uri(), index=False)


def _mirror_without_index(tmp_path: Path) -> Path:
    """A mirror folder holding one real package and no repodata.json."""
    import warnings

    import rattler_build  # builds the package as the engine would

    recipe = tmp_path / "recipe" / "recipe.yaml"
    recipe.parent.mkdir()
    recipe.write_text(
        "package:\n  name: mirrored\n  version: '1.0'\nbuild:\n  noarch: generic\n"
        "  script:\n    - mkdir -p $PREFIX/share && echo m > $PREFIX/share/m.txt\n"
    )
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        rattler_build.build_recipes([str(recipe)], output_dir=str(out), channel=[out.as_uri()])
    mirror = tmp_path / "mirror"
    (mirror / "noarch").mkdir(parents=True)
    for package in (out / "noarch").glob("*.conda"):
        shutil.copy2(package, mirror / "noarch" / package.name)
    return mirror


def test_a_channel_folder_without_an_index_is_indexed_in_build_artifacts_not_in_place(
    tmp_path: Path,
) -> None:
    mirror = _mirror_without_index(tmp_path)
    before = sorted(p.relative_to(mirror).as_posix() for p in mirror.rglob("*"))
    mirror.chmod(0o555)  # read-only for a user (root writes anyway: the listing below checks)
    try:
        artifacts = tmp_path / "build_artifacts"
        airgap.check_channel(str(mirror), index=True, artifacts=artifacts)
    finally:
        mirror.chmod(0o755)
    # Before: repodata.json written into the user's mirror (or a failure where it is read-only).
    assert sorted(p.relative_to(mirror).as_posix() for p in mirror.rglob("*")) == before
    url = airgap.channel_url(str(mirror), artifacts)
    copy = Path(PurePosixPath(url.removeprefix("file://")))
    assert copy.is_relative_to(artifacts.resolve())
    assert (copy / "noarch" / "repodata.json").is_file()
    assert os.path.samefile(next((copy / "noarch").glob("*.conda")),
                            next((mirror / "noarch").glob("*.conda")))  # fmt: skip
