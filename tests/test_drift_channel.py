"""conda-forge versions from channeldata.json / repodata.json files."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.drift.channel import query_channel, read_channel_files, versions_from_json
from tools.foundation.errors import UserError

FIXTURES = Path(__file__).parent / "fixtures" / "drift"


def test_channeldata_gives_the_latest_version_per_package() -> None:
    packages = read_channel_files([FIXTURES / "channeldata.json"])
    assert packages["sleef"].latest == "3.9.0"
    assert packages["libmagma-devel"].latest == "2.9.0"
    assert "pytorch" not in packages  # listed without a version


def test_repodata_gives_every_version_newest_first_by_conda_order() -> None:
    packages = read_channel_files([FIXTURES / "repodata-noarch.json"])
    assert packages["sympy"].versions == ("1.14.0", "1.13.3", "1.13.2", "1.13.1")
    assert packages["setuptools"].latest == "82.0.1"


def test_several_files_merge_their_versions() -> None:
    packages = read_channel_files(
        [FIXTURES / "channeldata.json", FIXTURES / "repodata-noarch.json"]
    )
    assert packages["typing_extensions"].versions == ("4.15.0", "4.9.0")
    assert packages["typing_extensions"].source == "channeldata.json, repodata-noarch.json"


def test_unreadable_json_names_the_file_and_position(tmp_path: Path) -> None:
    broken = tmp_path / "repodata.json"
    broken.write_text('{"packages": {')
    with pytest.raises(UserError, match=r"repodata.json:1: not valid JSON \(.+\)"):
        read_channel_files([broken])


def test_missing_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such file"):
        read_channel_files([tmp_path / "absent.json"])


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "expected a JSON object"),
        ({"subdirs": []}, "neither repodata.json"),
        ({"info": {}, "packages": {"x-1-0.tar.bz2": {"name": "x"}}}, "lacks name or version"),
        ({"packages": {"x": "1.0"}}, "package 'x' must be an object"),
    ],
)
def test_wrongly_shaped_documents_are_rejected(document: object, message: str) -> None:
    with pytest.raises(UserError, match=message):
        versions_from_json(document, "data.json")


def _local_channel(root: Path) -> Path:
    """A channel directory py-rattler reads like a remote one: <subdir>/repodata.json."""
    (root / "noarch").mkdir(parents=True)
    (root / "linux-64").mkdir()
    (root / "noarch" / "repodata.json").write_text((FIXTURES / "repodata-noarch.json").read_text())
    (root / "linux-64" / "repodata.json").write_text(
        '{"info": {"subdir": "linux-64"}, "packages": {}, "packages.conda": {}}'
    )
    return root


def test_channel_query_through_py_rattler_reads_only_the_names_asked(tmp_path: Path) -> None:
    channel = _local_channel(tmp_path / "channel")
    packages = query_channel(
        ["sympy", "absent"], ["linux-64"], str(channel), timeout=60, cache_dir=tmp_path / "cache"
    )
    assert set(packages) == {"sympy"}
    assert packages["sympy"].versions == ("1.14.0", "1.13.3", "1.13.2", "1.13.1")
