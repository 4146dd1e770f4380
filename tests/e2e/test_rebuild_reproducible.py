"""Reproducible packages and the core member's rebuild (issue 51), on the real engine.

The delegate: a git clone of the e2e feedstock (tests/helpers/e2e_feedstock.py: the
miniature's CPU config, one Python, no test phase, the stand-in channel as `--channel`, the
miniature as the release archive in `--source-cache`) builds with the embedded engine; its
build_artifacts/ is the upload. The core member: another clone of the same commit, at a
path of another length, runs `python -m tools.review.rebuild UPLOAD CONFIG` with
the same build options but the channel as it is days later (a copy at another path, with a
newer build of a host dependency published since), which clones it once more at the
recorded commit, rebuilds there against exactly the packages the upload's builds resolved
and compares each package byte for byte; against a copy lacking one of them it refuses,
naming it, before building. Then a consistent forgery of the upload (a payload
file of the pytorch package edited, paths.json updated, the package repacked, and
SHA256SUMS, summary.json, the log and log_files.zip re-hashed to match) goes through the
same rebuild, which names the package and the file.

Two embedded builds of the miniature: the upload and its rebuild, whose packages (kept with
`--keep`) the forgery is compared with (`--rebuilt`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers.e2e_feedstock import CPU, PYTHONS, E2EFeedstock, e2e_channel

from tools.localbuild.records.artifacts import write_log_zip, write_sha256sums
from tools.rattler_build.repack import RENDERED, Rewrites, repack
from tools.review.pinned import recorded

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="builds linux-64 packages"),
]

GIT_ENV = {
    "GIT_AUTHOR_NAME": "delegate",
    "GIT_AUTHOR_EMAIL": "delegate@example.org",
    "GIT_COMMITTER_NAME": "delegate",
    "GIT_COMMITTER_EMAIL": "delegate@example.org",
    "GIT_AUTHOR_DATE": "2026-11-01T12:00:00Z",
    "GIT_COMMITTER_DATE": "2026-11-01T12:00:00Z",
}


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


@pytest.fixture(scope="module")
def upload(tmp_path_factory) -> E2EFeedstock:
    """The delegate's feedstock, committed, and built: its build_artifacts/ is the upload."""
    if CPU is None:
        pytest.skip("no linux-64 CPU config with generic BLAS in .ci_support")
    channel = e2e_channel(tmp_path_factory)
    fs = E2EFeedstock.make_embedded(
        tmp_path_factory.mktemp("a"), CPU.name, channel, pythons=PYTHONS[:1], options="--no-test"
    )
    _git(fs.root, "init", "--quiet")
    _git(fs.root, "add", "-A")
    _git(fs.root, "commit", "--quiet", "-m", "the PR's head")
    result = fs.build()
    assert result.returncode == 0, result.stderr[-3000:]
    return fs


@pytest.fixture(scope="module")
def reviewer(upload, tmp_path_factory) -> Path:
    """The core member's clone of the same repository, at a path of another length."""
    clone = tmp_path_factory.mktemp("core-member-with-a-longer-path") / "pytorch-feedstock"
    _git(clone.parent, "clone", "--quiet", str(upload.root), str(clone))
    assert len(str(clone)) != len(str(upload.root))
    return clone


def _rebuild(reviewer: Path, fs: E2EFeedstock, upload_dir: Path, *extra: str):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tools.review.rebuild",
            str(upload_dir),
            fs.config,
            *fs.args,
            *extra,
        ],
        cwd=reviewer,
        env=fs.env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )


def _channel_copy(upload: E2EFeedstock, folder: Path, *, drop: str = "", newer: str = "") -> Path:
    """The upload's channel hard-linked into ``folder`` (another path), without the package
    ``drop`` or with a newer build (build number + 1, repacked) of the package ``newer``
    beside it, as published since the upload; indexed."""
    import asyncio

    from rattler.index import index_fs

    source = Path(upload.args[upload.args.index("--channel") + 1])
    for package in source.glob("*/*"):
        target = folder / package.parent.name / package.name
        if package.name == "repodata.json":  # copied: the index below rewrites it
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(package, target)
        elif package.name.endswith((".conda", ".tar.bz2")) and package.name != drop:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(package, target)
    if newer:
        source = folder / "linux-64" / newer
        index = json.loads(_member(source, "info/index.json"))
        index["build_number"] += 1
        index["build"] = re.sub(r"\d+$", str(index["build_number"]), index["build"])
        target = source.with_name(f"{index['name']}-{index['version']}-{index['build']}.conda")
        restore = {"info/index.json": json.dumps(index).encode()}
        with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as out:
            # A .conda's inner archives are named after the file: info-<name>.tar.zst.
            for member in old.infolist():
                renamed = member.filename.replace(source.name[:-6], target.name[:-6])
                out.writestr(zipfile.ZipInfo(renamed, member.date_time), old.read(member))
        repack(target, Rewrites(index.get("timestamp", 0) // 1000 + 86400, restore))
    (folder / "noarch").mkdir(exist_ok=True)
    asyncio.run(index_fs(folder))  # its repodata.json updated: the packages added, dropped
    return folder


def _member(package: Path, name: str) -> bytes:
    from conda_package_streaming.package_streaming import CondaComponent, stream_conda_component

    with package.open("rb") as stream:
        for tar, member in stream_conda_component(package.name, stream, CondaComponent.info):
            if member.name == name:
                return tar.extractfile(member).read()
    raise AssertionError(f"{package.name} has no {name}")


def _resolved(upload: E2EFeedstock) -> list:
    """The packages the upload's build and host environments resolved from the channel."""
    _, resolved = recorded(sorted(upload.artifacts.glob("*/*.conda")))
    return resolved


def _with_channel(args: tuple[str, ...], channel: Path) -> tuple[str, ...]:
    words = list(args)
    words[words.index("--channel") + 1] = str(channel)
    return tuple(words)


@pytest.fixture(scope="module")
def rebuilt(upload, reviewer, tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """The rebuild of the untampered upload, its packages kept, days later: against a copy
    of the channel at another path where a newer build of a host dependency (libprotobuf)
    was published since."""
    kept = tmp_path_factory.mktemp("kept")
    source = Path(upload.args[upload.args.index("--channel") + 1])
    [old] = [p.name for p in source.glob("linux-64/libprotobuf-*.conda")]
    channel = _channel_copy(upload, tmp_path_factory.mktemp("channel-days-later"), newer=old)
    assert len(list(channel.glob("linux-64/libprotobuf-*.conda"))) == 2
    fs = E2EFeedstock(upload.root, upload.config, upload.env, _with_channel(upload.args, channel))
    return _rebuild(reviewer, fs, upload.artifacts, "--keep", str(kept)), kept


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_two_clones_at_paths_of_other_lengths_build_byte_identical_packages(
    upload, rebuilt
) -> None:
    result, kept = rebuilt
    [where] = re.findall(r"^rebuild: \S+ at [0-9a-f]{12} in (\S+)$", result.stdout, flags=re.M)
    assert len(where) != len(str(upload.root)), (where, upload.root)
    ours = {p.relative_to(upload.artifacts): _sha256(p) for p in upload.artifacts.glob("*/*.conda")}
    theirs = {p.relative_to(kept): _sha256(p) for p in kept.glob("*/*.conda")}
    assert len(ours) == 3, result.stdout + result.stderr[-3000:]
    assert theirs == ours, result.stdout + result.stderr[-3000:]


def test_the_rebuild_verifies_the_untampered_upload(rebuilt) -> None:
    result, _ = rebuilt
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    [verdict] = [line for line in result.stdout.splitlines() if line.startswith("verified")]
    print(verdict)  # the rebuild's time, for the report
    assert re.match(
        r"verified by rebuild: \S+ at commit [0-9a-f]{12}: 3 package\(s\) identical", verdict
    )


def test_the_packages_record_what_their_builds_resolved_with_no_path_of_the_builder(
    upload,
) -> None:
    resolved = _resolved(upload)
    assert {p.name for p in resolved} >= {"cmake", "ninja", "libprotobuf"}, resolved
    [libtorch] = upload.artifacts.glob("linux-64/libtorch-*.conda")
    assert "url: local-channel-0/linux-64/cmake-" in _member(libtorch, RENDERED).decode()
    for package in sorted(upload.artifacts.glob("*/*.conda")):
        assert "file://" not in _member(package, RENDERED).decode(), package.name


def test_a_rebuild_against_channels_lacking_a_resolved_package_fails_naming_it(
    upload, reviewer, tmp_path
) -> None:
    [ninja] = [p for p in _resolved(upload) if p.fn.startswith("ninja-")]
    channel = _channel_copy(upload, tmp_path / "channel", drop=ninja.fn)
    fs = E2EFeedstock(upload.root, upload.config, upload.env, _with_channel(upload.args, channel))
    result = _rebuild(reviewer, fs, upload.artifacts)
    assert result.returncode == 1, result.stdout + result.stderr[-3000:]
    fails = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    assert fails == [
        f"FAIL linux-64/{ninja.fn}: resolved by the upload's build (sha256 "
        f"{ninja.sha256[:12]}…), not in the "
        f"--channel folders ({channel}); give the channel that holds it"
    ], result.stdout
    assert "rebuild:" not in result.stdout  # refused before building


def _forged(upload: E2EFeedstock, folder: Path) -> tuple[Path, str]:
    """A copy of the upload whose pytorch package has torch/version.py edited, paths.json
    updated and the package repacked, with SHA256SUMS, summary.json, the log and
    log_files.zip re-hashed to match: every file agrees with every other."""
    shutil.copytree(upload.artifacts, folder, ignore=shutil.ignore_patterns("bld", "pkg_cache"))
    [package] = sorted(folder.glob("linux-64/pytorch-2*.conda"))
    from conda_package_streaming.package_streaming import CondaComponent, stream_conda_component

    with package.open("rb") as stream:
        for tar, member in stream_conda_component(package.name, stream, CondaComponent.info):
            if member.name == "info/paths.json":
                paths = json.loads(tar.extractfile(member).read())
            if member.name == "info/index.json":
                epoch = json.loads(tar.extractfile(member).read())["timestamp"] // 1000
    [entry] = [p for p in paths["paths"] if p["_path"].endswith("torch/version.py")]
    with package.open("rb") as stream:
        for tar, member in stream_conda_component(package.name, stream, CondaComponent.pkg):
            if member.name == entry["_path"]:
                text = tar.extractfile(member).read()
    edited = text + b"\n__forged__ = True\n"
    entry["sha256"], entry["size_in_bytes"] = hashlib.sha256(edited).hexdigest(), len(edited)
    restore = {entry["_path"]: edited, "info/paths.json": json.dumps(paths, indent=2).encode()}
    old = _sha256(package)
    repack(package, Rewrites(epoch, restore))
    new, size = _sha256(package), package.stat().st_size
    write_sha256sums(folder)
    summary = json.loads((folder / "summary.json").read_text())
    for record in summary["configs"].values():
        for item in record.get("packages", []):
            if item["sha256"] == old:
                item["sha256"], item["size"] = new, size
    (folder / "summary.json").write_text(json.dumps(summary, indent=2))
    for log in folder.glob("*-log.txt"):
        log.write_text(re.sub(rf"{old} \(\d+ bytes\)", f"{new} ({size} bytes)", log.read_text()))
    write_log_zip(folder)
    return package, entry["_path"]


def test_the_repacked_packages_read_with_py_rattler_and_conda_package_handling(
    upload, tmp_path
) -> None:
    from conda_package_handling.api import extract
    from rattler.package import IndexJson, PathsJson

    for package in sorted(upload.artifacts.glob("*/*.conda")):
        index = IndexJson.from_package_archive(package)
        assert list(index.depends) == sorted(index.depends), package.name
        target = tmp_path / package.name
        extract(str(package), dest_dir=str(target))
        paths = PathsJson.from_path(target / "info" / "paths.json")
        for entry in (e for e in paths.paths if e.path_type.hardlink):
            data = (target / entry.relative_path).read_bytes()
            assert hashlib.sha256(data).hexdigest() == entry.sha256.hex(), entry.relative_path
        recipe = (target / "info" / "recipe" / "recipe.yaml").read_text()
        assert recipe == (upload.root / "recipe" / "recipe-v1.yaml").read_text()
        assert (
            str(upload.root.parent)
            not in (target / "info").joinpath("recipe", "rendered_recipe.yaml").read_text()
        )


def test_a_consistent_forgery_passes_the_cross_checks_and_is_caught_by_the_rebuild(
    upload, reviewer, rebuilt, tmp_path
) -> None:
    package, edited = _forged(upload, tmp_path / "forged")
    sums = (tmp_path / "forged" / "SHA256SUMS").read_text()
    assert f"{_sha256(package)}  linux-64/{package.name}" in sums  # the forgery is consistent
    # `review verify --rebuild`, against the packages the untampered upload's rebuild kept
    # (the same commit's rebuild; --rebuilt spares building a third time).
    argv = ["review", "verify", str(tmp_path / "forged"), "--allow-other-engine"]
    argv += ["--rebuild", upload.config, *upload.args, "--rebuilt", str(rebuilt[1])]
    result = subprocess.run(
        [sys.executable, "-m", "tools", *argv],
        cwd=reviewer,
        env=upload.env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 1, result.stdout + result.stderr[-3000:]
    fails = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    # The cross-checks find nothing wrong with the forged package: their one FAIL is `tools
    # check` on the miniature's stand-ins (unversioned BLAS sonames, the machine's glibc, no
    # c10/at/torch std:: symbols: tests/e2e/test_e2e_real_engine.py, STAND_IN_FINDINGS), which
    # the untampered upload has too.
    [check] = [f for f in fails if "`tools check --config" in f]
    failed_checks = check.rsplit("checks failed: ", 1)[-1].split(", ")
    assert set(failed_checks) <= {"abi.cxx11", "elf.glibc", "elf.needed"}, fails
    # The rebuild names the package and the file.
    [caught] = [f for f in fails if f is not check]
    assert caught.startswith(f"FAIL linux-64/{package.name}: differs from the rebuild"), fails
    assert f"payload {edited}: content differs" in caught
