"""``python -m tools review verify`` against an upload someone edited to pass: each edit the
issue measured getting through the old ``--verify`` (0 new lines) is caught here, in one
``FAIL`` line naming its cause, and the untouched upload still passes.

The upload is a delegate's (tests/helpers/fake_engine_feedstock.py): a git checkout built through
the fake container engine (tests/fixtures/fake_docker), whose conda-build writes real .conda
packages carrying the commit. Each test tampers a copy. What a forger must change to pass is
every copy of a fact at once (package, SHA256SUMS, summary.json and the log); these tests
change all but one, which is the one the review must find. The embedded engine's own case (a
record claiming the container) is in tests/e2e/test_e2e_real_engine.py, whose batch that engine
built.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import zipfile
from pathlib import Path

import pytest
from helpers.fake_engine_feedstock import (
    ARM,
    CPU,
    copy_upload,
    delegate_feedstock,
    git_in,
    post_upload,
    rezip,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="drives bash scripts (POSIX)")


@pytest.fixture(scope="module")
def upload(tmp_path_factory):
    fs = delegate_feedstock(tmp_path_factory.mktemp("upload"))
    run = fs.run("--all")
    assert run.returncode == 0, run.stderr
    return fs, git_in(fs, "rev-parse", "HEAD"), post_upload(fs, tmp_path_factory.mktemp("posted"))


def _verify(fs, posted: Path, head: str) -> list[str]:
    """The FAIL lines of a verify that must fail, after checking it fails as it should."""
    run = fs.review("verify", str(posted), "--commit", head)
    assert run.returncode == 1, run.stdout + run.stderr
    [problems] = run.stderr.splitlines()
    assert problems.startswith("problems: NOT verified: ")
    return [line for line in run.stdout.splitlines() if line.startswith("FAIL ")]


def _cpu_package(posted: Path) -> Path:
    [package] = (posted / "linux-64").glob("libfoo-*versionNone*.conda")
    return package


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _repacked(package: Path) -> None:
    """The same package's members written into a new .conda in another order: a well-formed
    package that conda and py-rattler read, with other bytes, as another build of it has."""
    with zipfile.ZipFile(package) as archive:
        members = [(info, archive.read(info)) for info in archive.infolist()]
    with zipfile.ZipFile(package, "w", compression=zipfile.ZIP_STORED) as archive:
        for info, data in reversed(members):
            archive.writestr(info, data)


def _rehash_lists(folder: Path, name: str, old: str, new: str) -> None:
    """SHA256SUMS and summary.json made to agree with a replaced package."""
    sums = folder / "SHA256SUMS"
    sums.write_text(sums.read_text().replace(f"{old}  {name}", f"{new}  {name}"))
    summary = folder / "summary.json"
    summary.write_text(summary.read_text().replace(old, new))


def test_the_untouched_upload_passes_and_says_what_it_cross_checked(upload) -> None:
    fs, head, posted = upload
    run = fs.review("verify", str(posted), "--commit", head)
    assert run.returncode == 0, run.stdout + run.stderr
    unsigned, verdict = run.stdout.splitlines()
    assert "3 packages match SHA256SUMS, summary.json and their logs and embed the commit" in (
        verdict
    )
    assert "logs agree with the records" in verdict and "; tests ran;" in verdict
    # Signing is new: a NOTE, and the verdict says so (--require-signature makes it a FAIL).
    assert unsigned.startswith("NOTE unsigned: 3 of 3 packages have no <package>.sigs beside")
    assert "; no package signed" in verdict


def test_a_package_from_another_build_rehashed_into_the_lists_is_caught_by_its_log(
    upload, tmp_path: Path
) -> None:
    fs, head, posted = upload
    posted = copy_upload(posted, tmp_path)
    package = _cpu_package(posted)
    old = _sha256(package)
    _repacked(package)
    new = _sha256(package)
    name = f"linux-64/{package.name}"
    rezip(posted, lambda folder: _rehash_lists(folder, name, old, new))
    assert _verify(fs, posted, head) == [
        f"FAIL {name}: tampered: its sha256 is {new[:12]}…; {CPU}'s log says {old[:12]}…"
    ]


def test_loose_lists_beside_an_untouched_zip_do_not_win(upload, tmp_path: Path) -> None:
    fs, head, posted = upload
    posted = copy_upload(posted, tmp_path)
    package = _cpu_package(posted)
    old = _sha256(package)
    _repacked(package)
    new = _sha256(package)
    with zipfile.ZipFile(posted / "log_files.zip") as archive:
        for member in ("SHA256SUMS", "summary.json"):
            (posted / member).write_bytes(archive.read(member))
    _rehash_lists(posted, f"linux-64/{package.name}", old, new)
    fails = _verify(fs, posted, head)
    for member in ("SHA256SUMS", "summary.json"):
        [line] = [f for f in fails if f.startswith(f"FAIL {member}: ")]
        assert f"the loose {posted / member} (sha256 " in line
        assert f"differs from the copy in {posted / 'log_files.zip'} (sha256 " in line


def _edit_log(posted: Path, config: str, edit) -> None:
    def change(folder: Path) -> None:
        log = folder / f"{config}-log.txt"
        log.write_text(edit(log.read_text()))

    rezip(posted, change)


def test_a_log_whose_engine_line_was_edited_disagrees_with_its_record(
    upload, tmp_path: Path
) -> None:
    fs, head, posted = upload
    posted = copy_upload(posted, tmp_path)
    _edit_log(
        posted,
        CPU,
        lambda t: t.replace("engine version: docker 0.0-fake", "engine version: docker 27.3.1"),
    )
    assert _verify(fs, posted, head) == [
        "FAIL linux-64 cpu: its log's engine version line says 'docker 27.3.1', its record "
        "'docker 0.0-fake'"
    ]


def test_a_log_whose_commit_and_package_lines_were_edited_is_caught(upload, tmp_path: Path) -> None:
    fs, head, posted = upload
    posted = copy_upload(posted, tmp_path)
    other = "f" * 40
    digest = _sha256(_cpu_package(posted))

    def edit(text: str) -> str:
        return text.replace(f"commit: {head}", f"commit: {other}").replace(digest, "0" * 64)

    _edit_log(posted, CPU, edit)
    fails = _verify(fs, posted, head)
    assert f"FAIL linux-64 cpu: its log's commit line says '{other}', its record '{head}'" in fails
    name = f"linux-64/{_cpu_package(posted).name}"
    assert (
        f"FAIL {name}: tampered: its sha256 is {digest[:12]}…; {CPU}'s log says 000000000000…"
        in fails
    )


def test_a_log_replaced_by_its_end_line_alone_is_caught(upload, tmp_path: Path) -> None:
    fs, head, posted = upload
    posted = copy_upload(posted, tmp_path)
    _edit_log(posted, ARM, lambda text: text.splitlines(keepends=True)[-1])
    fails = _verify(fs, posted, head)
    assert (
        f"FAIL linux-aarch64 cpu: its log has no head naming {ARM}: not the batch's log of it"
        in (fails)
    )
    [package] = (posted / "linux-aarch64").glob("*.conda")
    assert any(f.startswith(f"FAIL linux-aarch64/{package.name}: tampered: ") for f in fails)


def test_records_rewritten_to_a_moved_pr_head_disagree_with_their_logs(
    upload, tmp_path: Path
) -> None:
    fs, head, posted = upload
    posted = copy_upload(posted, tmp_path)
    moved = "e" * 40

    def rewrite(folder: Path) -> None:
        summary = folder / "summary.json"
        summary.write_text(summary.read_text().replace(head, moved))

    rezip(posted, rewrite)
    fails = _verify(fs, posted, moved)
    for label in ("linux-64 cpu", "linux-64 cuda12.9", "linux-aarch64 cpu"):
        assert f"FAIL {label}: its log's commit line says '{head}', its record '{moved}'" in fails


def test_a_record_of_another_toolkit_or_ci_support_file_is_not_this_checkouts(
    upload, tmp_path: Path
) -> None:
    fs, head, posted = upload
    posted = copy_upload(posted, tmp_path)

    def rewrite(folder: Path) -> None:
        summary = json.loads((folder / "summary.json").read_text())
        source = summary["configs"][CPU]["provenance"]
        source["toolkit"] = "tools 000000000000"
        source["ci_support_sha256"] = "1" * 64
        (folder / "summary.json").write_text(json.dumps(summary))

    rezip(posted, rewrite)
    fails = _verify(fs, posted, head)
    [toolkit] = [f for f in fails if "tools 000000000000, this checkout's is tools " in f]
    assert toolkit.startswith("FAIL linux-64 cpu: built with tools 000000000000")
    assert (
        "FAIL linux-64 cpu: built from a .ci_support/linux_64_cuda_compiler_versionNone.yaml "
        "with sha256 111111111111…, this checkout's is "
    ) in "\n".join(fails)


def test_the_records_say_whether_tests_ran_and_verify_says_when_they_did_not(
    upload, tmp_path: Path
) -> None:
    fs, head, posted = upload
    record = fs.summary()["configs"][CPU]["provenance"]
    assert record["tests"] == "run" and record["channels"] == ["conda-forge"]
    log = (fs.artifacts / f"{CPU}-log.txt").read_text()
    assert (
        "### build-locally: tests: run\n" in log
        and "### build-locally: channels: conda-forge\n" in log
    )
    posted = copy_upload(posted, tmp_path)

    def skipped(folder: Path) -> None:
        why = "skipped: --no-test in EXTRA_CB_OPTIONS"
        summary = json.loads((folder / "summary.json").read_text())
        summary["configs"][CPU]["provenance"]["tests"] = why
        (folder / "summary.json").write_text(json.dumps(summary))
        log = folder / f"{CPU}-log.txt"
        log.write_text(log.read_text().replace("tests: run", f"tests: {why}"))

    rezip(posted, skipped)
    run = fs.review("verify", str(posted), "--commit", head)
    assert run.returncode == 0, run.stdout + run.stderr
    note, _unsigned, verdict = run.stdout.splitlines()
    assert note == "NOTE tests did not run: linux-64 cpu (skipped: --no-test in EXTRA_CB_OPTIONS)"
    assert re.search(r"; tests did not run: linux-64 cpu \(skipped: [^)]*\)", verdict)
