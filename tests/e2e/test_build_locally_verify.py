"""A CFEP-03 upload from a reviewer's side: provenance, dirty trees and ``--verify``.

The feedstocks are git checkouts (the provenance is their commit) built through the fake
container engine (tests/fixtures/fake_docker): its conda-build writes real .conda packages
whose info/about.json carries build_steps.sh's --extra-meta, as conda-build's does.  The
recipe's one output is ``libfoo`` (FAKE_BUILD_OUTPUTS), so `tools check --config` checks
them for real and finds them sound.  A delegate posts the packages and log_files.zip; each
test below hands the reviewer's command a copy with one thing wrong.
"""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import pytest
from helpers.fake_engine_feedstock import (
    ARM,
    CPU,
    CUDA,
    Feedstock,
    copy_upload,
    delegate_feedstock,
    git_in,
    post_upload,
    rezip,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="drives bash scripts (POSIX)")


@pytest.fixture(scope="module")
def upload(tmp_path_factory) -> tuple[Feedstock, str, Path]:
    fs = delegate_feedstock(tmp_path_factory.mktemp("upload"))
    run = fs.run("--all")
    assert run.returncode == 0, run.stderr
    return fs, git_in(fs, "rev-parse", "HEAD"), post_upload(fs, tmp_path_factory.mktemp("posted"))


# ---------------------------------------------------------------- the reviewer's verdict


def test_verify_passes_on_an_untouched_upload(upload) -> None:
    fs, head, posted = upload
    run = fs.review("verify", str(posted), "--commit", head)
    assert run.returncode == 0, run.stdout + run.stderr
    unsigned, verdict = run.stdout.splitlines()
    assert unsigned.startswith("NOTE unsigned: 3 of 3 packages have no <package>.sigs beside")
    assert verdict.startswith(f"verified: pytorch-feedstock at commit {head[:12]} (--commit)")
    assert "3 of 4 configs built, 3 packages match SHA256SUMS" in verdict
    assert verdict.endswith("not built, as recorded: win-64 cpu (cannot build here (Windows))")


def test_verify_names_a_tampered_package(upload, tmp_path: Path) -> None:
    fs, head, posted = upload
    posted = copy_upload(posted, tmp_path)
    package = sorted((posted / "linux-64").glob("*.conda"))[0]
    data = bytearray(package.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one bit pattern changed inside the payload
    package.write_bytes(bytes(data))
    run = fs.review("verify", str(posted), "--commit", head)
    assert run.returncode == 1
    name = f"linux-64/{package.name}"
    assert f"FAIL {name}: tampered: its sha256 is " in run.stdout
    assert "; SHA256SUMS says " in run.stdout and ", summary.json says " in run.stdout
    [problems] = run.stderr.splitlines()
    assert problems.startswith("problems: NOT verified: ") and name in problems


def test_verify_names_a_config_of_the_matrix_the_upload_lacks(upload, tmp_path: Path) -> None:
    fs, head, posted = upload
    posted = copy_upload(posted, tmp_path)

    def forget_cuda(folder: Path) -> None:
        summary = json.loads((folder / "summary.json").read_text())
        del summary["configs"][CUDA]
        (folder / "summary.json").write_text(json.dumps(summary))

    rezip(posted, forget_cuda)
    run = fs.review("verify", str(posted), "--commit", head)
    assert run.returncode == 1
    missing = f"FAIL linux-64 cuda12.9: missing: no record of {CUDA} (neither built nor explained)"
    assert missing in run.stdout.splitlines()


def test_a_failing_verdict_also_says_what_the_upload_holds(upload, tmp_path: Path) -> None:
    fs, head, posted = upload
    posted = copy_upload(posted, tmp_path)

    def forget_cuda_and_fail_arm(folder: Path) -> None:
        summary = json.loads((folder / "summary.json").read_text())
        del summary["configs"][CUDA]
        summary["configs"][ARM].update(status="failed", note="exit 1")
        (folder / "summary.json").write_text(json.dumps(summary))

    rezip(posted, forget_cuda_and_fail_arm)
    run = fs.review("verify", str(posted), "--commit", head)
    assert run.returncode == 1
    [verdict] = run.stderr.splitlines()
    assert verdict.startswith("problems: NOT verified: ")
    assert verdict.endswith(
        "; the upload holds 1 of 4 configs built; missing: linux-64 cuda12.9 (no record), "
        "linux-aarch64 cpu (failed: exit 1); not built, as recorded: win-64 cpu "
        "(cannot build here (Windows))"
    )


def test_verify_names_a_log_cut_short(upload, tmp_path: Path) -> None:
    fs, head, posted = upload
    posted = copy_upload(posted, tmp_path)

    def cut(folder: Path) -> None:
        log = folder / f"{ARM}-log.txt"
        log.write_text("".join(log.read_text().splitlines(keepends=True)[:-4]))

    rezip(posted, cut)
    run = fs.review("verify", str(posted), "--commit", head)
    assert run.returncode == 1
    assert "FAIL linux-aarch64 cpu: log cut short or not a success" in run.stdout


def test_verify_names_the_config_and_package_built_from_another_commit(tmp_path: Path) -> None:
    fs = delegate_feedstock(tmp_path / "fs")
    assert fs.run(CPU, CUDA).returncode == 0
    head = git_in(fs, "rev-parse", "HEAD")
    (fs.root / "README.md").write_text("a later commit\n")
    git_in(fs, "add", "README.md")
    git_in(fs, "commit", "-qm", "after the review")
    later = git_in(fs, "rev-parse", "HEAD")
    rebuilt = fs.run(CPU, "--force")
    assert rebuilt.returncode == 0, rebuilt.stderr
    run = fs.review("verify", str(fs.artifacts), "--commit", head)
    assert run.returncode == 1
    lines = run.stdout.splitlines()
    assert f"FAIL linux-64 cpu: recorded commit {later}, expected {head}" in lines
    [package] = (fs.artifacts / "linux-64").glob("libfoo-*versionNone*.conda")
    assert (
        f"FAIL linux-64/{package.name}: from another commit: it embeds {later}, expected {head}"
        in lines
    )
    assert not any("cuda12.9" in line for line in lines)  # built from the PR's head


def test_verify_refuses_a_zip_with_a_path_outside_its_folder(upload, tmp_path: Path) -> None:
    fs, head, _ = upload
    posted = tmp_path / "posted"
    posted.mkdir()
    with zipfile.ZipFile(posted / "log_files.zip", "w") as archive:
        archive.writestr("summary.json", "{}")
        archive.writestr("../escaped.txt", "written outside")
    run = fs.review("verify", str(posted), "--commit", head)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.splitlines() == [
        f"error: {posted / 'log_files.zip'}: member '../escaped.txt' is not a plain file name "
        "(a path, '..', a folder or a link); refusing to extract anything from it"
    ]
    assert not list(tmp_path.rglob("escaped.txt"))


def test_verify_of_a_folder_without_a_summary_is_one_line(upload, tmp_path: Path) -> None:
    fs, _, _ = upload
    run = fs.review("verify", str(tmp_path))
    assert run.returncode == 2
    assert run.stderr.startswith(f"error: review verify {tmp_path}: no summary.json")


# ---------------------------------------------------------------- provenance and dirty trees


def test_summary_log_and_report_name_the_commit_and_the_recipe(upload) -> None:
    fs, head, _ = upload
    record = fs.summary()["configs"][CPU]
    source = record["provenance"]
    assert (source["commit"], source["dirty"], source["recipe_version"]) == (head, False, "2.13.0")
    assert source["engine"] == "docker 0.0-fake" and source["machine"] == "delegate"
    log = (fs.artifacts / f"{CPU}-log.txt").read_text()
    assert f"### build-locally: commit: {head}\n" in log
    assert "### build-locally: tree: clean\n" in log
    report = fs.review("report").stdout
    assert f"**Provenance:** commit `{head}`, tree clean; recipe version `2.13.0`" in report
    [package] = (fs.artifacts / "linux-64").glob("libfoo-*versionNone*.conda")
    assert "| linux-64 cpu | ✅ done | " in report
    assert f"| ✅ {head[:12]}: {package.name} | - |" in report  # each package, with its commit
    assert "; image `quay.io/condaforge/linux-anvil-x86_64:alma10`." in report
    assert "| win-64 cpu | ☑️ skipped | - | 0 | - | - | - | cannot build here (Windows) |" in report
    assert "on 1 machine(s)" in report  # the skipped Windows row is no machine


def test_a_batch_from_a_dirty_tree_says_so_in_every_output(tmp_path: Path) -> None:
    fs = delegate_feedstock(tmp_path)
    (fs.root / "recipe" / "conda_build_config.yaml").write_text("# not committed\n")
    run = fs.run(CPU)
    assert run.returncode == 0, run.stderr
    warning = "WARNING: built from a dirty tree (uncommitted changes)"
    table_total = next(line for line in run.stdout.splitlines() if line.startswith("total"))
    files_line = next(line for line in run.stdout.splitlines() if line.startswith("summary:"))
    assert warning in table_total and warning in files_line and warning in run.stderr
    assert fs.summary()["configs"][CPU]["provenance"]["dirty"] is True
    log_head = (fs.artifacts / f"{CPU}-log.txt").read_text().splitlines()[:4]
    assert any(line.endswith(f"warning: {warning}") for line in log_head)
    report = fs.review("report")
    assert report.stdout.startswith(f"> [!WARNING]\n> {warning}")
    request = fs.review("request", "jdoe/label/cfep03")
    assert request.stdout.startswith(f"# {warning}") and warning in request.stderr
    verify = fs.review("verify", str(fs.artifacts))
    assert verify.returncode == 1 and "FAIL linux-64 cpu: built from a dirty tree" in verify.stdout


# ---------------------------------------------------------------- resumes and merges


def test_an_earlier_runs_record_survives_a_resume_and_draws_its_bar(tmp_path: Path) -> None:
    fs = delegate_feedstock(tmp_path)
    assert fs.run(CPU, ARM, FAKE_BUILD_FAIL=ARM).returncode == 1
    first = fs.summary()["configs"][CPU]
    resumed = fs.run(CPU, ARM)
    assert resumed.returncode == 0, resumed.stderr
    assert "[1/2] linux-64 cpu: done by an earlier run (on delegate at " in resumed.stderr
    kept = fs.summary()["configs"][CPU]
    assert kept["status"] == "done" and kept["earlier_run"] is True
    for field in ("packages", "duration_seconds", "machine", "started", "provenance"):
        assert kept[field] == first[field], field
    svg = fs.review("report") and (fs.artifacts / "timeline.svg").read_text()
    assert "<title>linux-64 cpu (" in svg and svg.count("<rect x=") == 2  # a bar per build


def test_merging_builds_of_two_commits_names_the_configs_machines_and_field(
    tmp_path: Path,
) -> None:
    alpha = delegate_feedstock(tmp_path / "alpha", "alpha")
    beta = delegate_feedstock(tmp_path / "beta", "beta")
    (beta.root / "README.md").write_text("beta's checkout moved on\n")
    git_in(beta, "add", "README.md")
    git_in(beta, "commit", "-qm", "another commit")
    assert alpha.run(CPU).returncode == 0 and beta.run(CUDA).returncode == 0
    run = alpha.review("merge", str(beta.artifacts))
    assert run.returncode == 2
    [line] = run.stderr.splitlines()
    assert line.startswith(f"error: review merge: {CPU} (built on alpha) and {CUDA} (built on")
    assert "have a different commit (" in line


def test_report_request_and_why_read_a_posted_upload_as_they_read_build_artifacts(
    upload, tmp_path: Path
) -> None:
    """A reviewer has the packages beside log_files.zip, or the zip alone: each review command
    reads them as it reads the delegate's build_artifacts/."""
    # Before: --report DIR found no summary.json in a folder holding log_files.zip.
    fs, _, posted = upload
    here = fs.review("request", "jdoe/label/cfep03")
    assert here.returncode == 0, here.stderr
    for given in (posted, posted / "log_files.zip"):
        request = fs.review("request", "jdoe/label/cfep03", str(given))
        assert request.returncode == 0, request.stderr
        assert request.stdout == here.stdout
        why = fs.review("why", CPU, str(given))
        assert why.returncode == 0, why.stderr
        assert why.stdout.startswith("linux-64 cpu (done): built; nothing failed. log: ")
    report = fs.review("report", str(posted))
    assert report.returncode == 0, report.stderr
    [package] = (posted / "linux-64").glob("libfoo-*versionNone*.conda")
    assert f": {package.name} |" in report.stdout  # its embedded commit, read from the upload
