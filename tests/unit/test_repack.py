"""The repack after the embedded engine (tools/rattler_build/repack.py) and the rebuild's
comparison (tools/review/compare.py), on small packages conda-package-handling
makes from a folder: what a build leaves different between two runs (member times, owners,
the order of ``depends``, the rendered recipe's time) is gone after the repack, and what the
payload holds is not. The real engine's packages go through both in
tests/e2e/test_rebuild_reproducible.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tools.rattler_build.repack import Rewrites, repack
from tools.review.compare import differences

EPOCH = 1793534400  # 2026-11-01 12:00 UTC
RENDERED = """\
recipe:
  package:
    name: demo
build_configuration:
  timestamp: {stamp}
finalized_dependencies:
  run:
    depends:
{depends}"""


def _package(folder: Path, *, depends: list[str], stamp: str, mtime: int, payload: str) -> Path:
    """A .conda of one payload file, as conda-package-handling packs a folder (members with
    the folder's times and owners)."""
    from conda_package_handling.api import create

    prefix = folder / "prefix"
    (prefix / "info" / "recipe").mkdir(parents=True)
    (prefix / "lib").mkdir()
    index = {"name": "demo", "version": "1", "build": "0", "build_number": 0,
             "subdir": "linux-64", "depends": depends, "timestamp": 0}  # fmt: skip
    (prefix / "info" / "index.json").write_text(json.dumps(index))
    listed = "".join(f"    - spec: {d}\n" for d in depends)
    text = RENDERED.format(stamp=stamp, depends=listed)
    (prefix / "info" / "recipe" / "rendered_recipe.yaml").write_text(text)
    (prefix / "lib" / "demo.txt").write_text(payload)
    files = ["info/index.json", "info/recipe/rendered_recipe.yaml", "lib/demo.txt"]
    for name in files:
        os.utime(prefix / name, (mtime, mtime))
    create(str(prefix), files, "demo-1-0.conda", out_folder=str(folder))
    return folder / "demo-1-0.conda"


def test_two_runs_that_differ_in_time_and_order_repack_to_the_same_bytes(tmp_path) -> None:
    one, other = ["libcblas", "libblas"], ["libblas", "libcblas"]
    first = _package(tmp_path / "a", depends=one, stamp="2026-11-29T06:38:29.3Z",
                     mtime=1795934309, payload="same")  # fmt: skip
    second = _package(tmp_path / "b", depends=other, stamp="2026-11-30T01:02:03.4Z",
                      mtime=1795999999, payload="same")  # fmt: skip
    assert first.read_bytes() != second.read_bytes()
    for package in (first, second):
        repack(package, Rewrites(EPOCH))
    assert first.read_bytes() == second.read_bytes()
    assert differences(first, second) == []


def test_the_repacked_package_carries_the_commits_time_and_sorted_depends(tmp_path) -> None:
    from conda_package_streaming.package_streaming import CondaComponent, stream_conda_component

    package = _package(tmp_path, depends=["zlib", "fmt"], stamp="2026-11-29T06:38:29.3Z",
                       mtime=1795934309, payload="x")  # fmt: skip
    repack(package, Rewrites(EPOCH))
    members = {}
    for component in (CondaComponent.info, CondaComponent.pkg):
        with package.open("rb") as stream:
            for tar, member in stream_conda_component(package.name, stream, component):
                members[member.name] = (member, tar.extractfile(member).read())
    assert {m.mtime for m, _ in members.values()} == {EPOCH}
    assert {(m.uid, m.gid, m.uname, m.gname) for m, _ in members.values()} == {(0, 0, "", "")}
    index = json.loads(members["info/index.json"][1])
    assert (index["timestamp"], index["depends"]) == (EPOCH * 1000, ["fmt", "zlib"])
    rendered = members["info/recipe/rendered_recipe.yaml"][1].decode()
    assert "  timestamp: 2026-11-01T12:00:00Z\n" in rendered
    assert rendered.index("spec: fmt") < rendered.index("spec: zlib")


def test_the_comparison_names_the_payload_file_that_differs(tmp_path) -> None:
    ours = _package(tmp_path / "a", depends=[], stamp="x", mtime=EPOCH, payload="built")
    theirs = _package(tmp_path / "b", depends=[], stamp="x", mtime=EPOCH, payload="forged")
    for package in (ours, theirs):
        repack(package, Rewrites(EPOCH))
    [found] = differences(ours, theirs)
    assert found.startswith("payload lib/demo.txt: content differs")


def test_the_comparison_names_a_metadata_field(tmp_path) -> None:
    ours = _package(tmp_path / "a", depends=["a"], stamp="x", mtime=EPOCH, payload="p")
    theirs = _package(tmp_path / "b", depends=["b"], stamp="x", mtime=EPOCH, payload="p")
    assert differences(ours, theirs)[0] == 'metadata info/index.json depends: ["a"] vs ["b"]'


def test_the_comparison_names_member_times_when_the_contents_agree(tmp_path) -> None:
    ours = _package(tmp_path / "a", depends=[], stamp="x", mtime=EPOCH, payload="p")
    later = _package(tmp_path / "b", depends=[], stamp="x", mtime=EPOCH + 60, payload="p")
    [found] = differences(ours, later)
    assert found.startswith("timestamps: 3 member(s) differ in time or owner"), found
