"""build-locally.py end to end: one config, and batches of them.

The repository's .scripts run through a fake `docker` in a throw-away feedstock
(tests/helpers/fake_engine_feedstock.py)."""

from __future__ import annotations

import hashlib
import re
import shutil
import sys
import zipfile
from pathlib import Path

import pytest
from helpers.fake_engine_feedstock import (
    ARM,
    CPU,
    CUDA,
    Feedstock,
    Run,
    config_yaml,
)

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="drives bash scripts through a pseudo-terminal (POSIX only)"
)


@pytest.fixture
def feedstock(tmp_path: Path) -> Feedstock:
    return Feedstock(tmp_path)


@pytest.fixture(scope="module")
def single(tmp_path_factory) -> tuple[Feedstock, Run]:
    """One successful build of one config, inspected by several tests."""
    fs = Feedstock(tmp_path_factory.mktemp("single"))
    return fs, fs.run(CPU)


@pytest.fixture(scope="module")
def batch(tmp_path_factory) -> tuple[Feedstock, Run]:
    """--all with the aarch64 config failing, inspected by several tests."""
    fs = Feedstock(tmp_path_factory.mktemp("batch"))
    return fs, fs.run("--all", FAKE_BUILD_FAIL="*aarch64*")


# ---------------------------------------------------------------- one config


def test_single_config_succeeds_and_leaves_the_done_marker(single) -> None:
    fs, run = single
    assert run.returncode == 0, run.stderr
    assert fs.marker(CPU).exists()


def test_single_config_runs_the_configs_image_with_the_feedstock_mounted(single) -> None:
    fs, _ = single
    [call] = fs.calls("run")
    assert call["image"] == "quay.io/condaforge/linux-anvil-x86_64:alma10"
    assert call["mounts"]["/home/conda/feedstock_root"] == str(fs.root)
    assert call["mounts"]["/home/conda/recipe_root"] == str(fs.root / "recipe")
    assert call["command"] == ["bash", "/home/conda/feedstock_root/.scripts/build_steps.sh"]


def test_single_config_passes_the_local_build_contract_into_the_container(single) -> None:
    fs, _ = single
    [call] = fs.calls("run")
    inside = call["container_env"]
    assert (inside["CONFIG"], inside["UPLOAD_PACKAGES"], inside["IS_PR_BUILD"]) == (
        CPU,
        "False",
        "True",
    )
    assert (
        "-it" in call["argv"]
    )  # build-locally gives the script a terminal, as a user's shell would


def test_build_steps_calls_conda_build_with_the_config_and_never_uploads(single) -> None:
    fs, _ = single
    [build] = fs.builds()
    assert build["tool"] == "conda-build"
    argv = build["argv"]
    assert argv[argv.index("-m") + 1] == str(fs.artifacts / ".ci_support" / f"{CPU}.yaml")
    assert "--suppress-variables" in argv and "--no-test" not in argv
    assert not (fs.state / "uploads.txt").exists()


def test_ci_setup_appends_to_a_copy_of_the_config_not_the_checkout(single) -> None:
    fs, _ = single
    assert (fs.root / ".ci_support" / f"{CPU}.yaml").read_text() == config_yaml("linux-64", "None")
    copy = (fs.artifacts / ".ci_support" / f"{CPU}.yaml").read_text()
    assert copy == config_yaml("linux-64", "None") + "CI:\n- fake-ci-setup\n"


def test_build_steps_writes_a_condarc_rooted_in_build_artifacts(single) -> None:
    fs, _ = single
    [build] = fs.builds()
    condarc = Path(build["env"]["CONDARC"]).read_text()
    assert f"root-dir: {fs.artifacts}" in condarc
    assert "pkg_format: '2'" in condarc and "zstd_compression_level: 19" in condarc


def test_single_config_log_is_timestamped_and_holds_the_build_output(single) -> None:
    fs, _ = single
    lines = (fs.artifacts / f"{CPU}-log.txt").read_text().splitlines()
    assert all(line[0] == "[" and line[9:11] == "] " for line in lines)
    assert any(line.endswith("BUILD START: ['libtorch-2.13.0-fake_0.conda']") for line in lines)
    # how long the fake build takes depends on the machine's load (its cores are shared)
    assert any(re.search(r"### build-locally: done after \d+:\d\d:\d\d$", line) for line in lines)


def test_single_config_log_ends_with_the_packages_their_digests_and_the_end_line(single) -> None:
    fs, _ = single
    *tail, end = (fs.artifacts / f"{CPU}-log.txt").read_text().splitlines()[-3:]
    assert end.endswith("### build-locally: end: done; done marker present")
    for line, package in zip(
        tail, sorted((fs.artifacts / "linux-64").glob("*.conda")), strict=True
    ):
        digest = hashlib.sha256(package.read_bytes()).hexdigest()
        assert line.endswith(
            f"package linux-64/{package.name} sha256 {digest} ({package.stat().st_size} bytes)"
        )


def test_progress_shows_phases_not_every_line(single) -> None:
    _, run = single
    assert "[1/1] linux-64 cpu  linux_64_cuda_compiler_versionNone\n" in run.stderr
    assert "Running conda-build for linux_64_cuda_compiler_versionNone" in run.stderr
    assert "Building CXX object" not in run.stderr + run.stdout


def test_single_config_removes_the_license_copy_it_made(single) -> None:
    fs, _ = single
    assert not (fs.root / "recipe" / "recipe-scripts-license.txt").exists()


def test_cross_built_aarch64_is_still_tested_under_emulation(batch) -> None:
    fs, _ = batch
    arm = [b for b in fs.builds() if b["env"]["CONFIG"] == ARM]
    assert arm and all("--no-test" not in b["argv"] for b in arm)


def test_cross_built_osx_skips_tests_it_cannot_run(feedstock: Feedstock) -> None:
    name = "osx_64_channel_targetsconda-forge_main"
    (feedstock.root / ".ci_support" / f"{name}.yaml").write_text(config_yaml("osx-64", "None"))
    assert feedstock.run(name, OSX_SDK_DIR=str(feedstock.root / "SDKs")).returncode == 0
    [build] = feedstock.builds()
    assert "--no-test" in build["argv"]


def test_cuda_config_gets_conda_override_cuda(feedstock: Feedstock) -> None:
    assert feedstock.run(CUDA).returncode == 0
    [build] = feedstock.builds()
    assert build["env"]["CONDA_OVERRIDE_CUDA"] == "12.9"


# ---------------------------------------------------------------- batches


def test_batch_exit_status_is_one_when_a_config_failed(batch) -> None:
    _, run = batch
    assert run.returncode == 1
    # the failed config by its label, and the command that shows its first error
    assert "problems: 1 of 3 config(s) failed: linux-aarch64 cpu (" in run.stderr
    assert "`python -m tools review why 'linux-aarch64 cpu'` shows the first error" in run.stderr


def test_batch_goes_on_after_a_failure_and_records_each_status(batch) -> None:
    fs, _ = batch
    configs = fs.summary()["configs"]
    assert {name: rec["status"] for name, rec in configs.items()} == {
        CUDA: "done",
        CPU: "done",
        ARM: "failed",
    }
    assert not fs.marker(ARM).exists()


def test_batch_prints_a_summary_table(batch) -> None:
    _, run = batch
    rows = {
        line.split()[-1]: line.split()[0]
        for line in run.stdout.splitlines()
        if line.startswith(("done", "FAILED"))
    }
    assert rows == {CUDA: "done", CPU: "done", ARM: "FAILED"}
    total = run.stdout.splitlines()[-3]  # then a blank line and the files written
    assert total.startswith("total ") and "3 configs (wall clock " in total


def test_batch_shows_each_configs_eta_from_the_cost_model(batch) -> None:
    _, run = batch
    expected = [line for line in run.stderr.splitlines() if "  expected " in line]
    assert [line[:6] for line in expected] == ["[1/3] ", "[2/3] ", "[3/3] "]
    assert all(line.endswith("(cost model)") and " ETA " in line for line in expected)


def test_durations_replace_the_cost_model_in_the_eta(batch, feedstock: Feedstock) -> None:
    fs, _ = batch
    earlier = feedstock.root / "earlier-summary.json"
    shutil.copyfile(fs.artifacts / "summary.json", earlier)
    run = feedstock.run("--all", "--durations", str(earlier))
    lines = [line for line in run.stderr.splitlines() if "  expected " in line]
    # the two configs that built were measured; the failed one's time says nothing
    assert lines and all(
        line.endswith("(--durations for 2, cost model for 1)") for line in lines
    ), lines
    first = next(line for line in lines if line.startswith("[1/3]"))
    assert "expected 0:00:0" in first  # a measured second or so, not the model's hours


def test_sha256sums_lists_every_package_with_its_real_digest(batch) -> None:
    fs, _ = batch
    lines = (fs.artifacts / "SHA256SUMS").read_text().splitlines()
    assert len(lines) == 4  # libtorch + pytorch for each of the two configs that built
    for line in lines:
        digest, name = line.split("  ")
        assert hashlib.sha256((fs.artifacts / name).read_bytes()).hexdigest() == digest


def test_summary_lists_each_configs_packages_with_digests(batch) -> None:
    fs, _ = batch
    packages = fs.summary()["configs"][CPU]["packages"]
    assert sorted(p["path"] for p in packages) == [
        "linux-64/libtorch-2.13.0-versionNone_34.conda",
        "linux-64/pytorch-2.13.0-versionNone_34.conda",
    ]
    sums = (fs.artifacts / "SHA256SUMS").read_text()
    assert all(f"{p['sha256']}  {p['path']}" in sums for p in packages)


def test_log_files_zip_holds_every_configs_log(batch) -> None:
    fs, _ = batch
    with zipfile.ZipFile(fs.artifacts / "log_files.zip") as archive:
        names = set(archive.namelist())
        failed_log = archive.read(f"{ARM}-log.txt").decode()
    assert {f"{c}-log.txt" for c in (CUDA, CPU, ARM)} <= names
    assert "FAILED: caffe2/CMakeFiles/torch_cpu.dir/part3.cpp.o" in failed_log


def test_cfep3_request_lists_the_built_packages_with_their_digests(batch) -> None:
    fs, _ = batch
    run = fs.review("request", "jdoe/label/cfep03")
    assert run.returncode == 0, run.stderr
    sums = (fs.artifacts / "SHA256SUMS").read_text().splitlines()
    comment, request = run.stdout.split("action: cfep3_copy\n", 1)
    assert request.startswith("anaconda_org_packages:\n")
    assert comment.startswith("# built from commit none (not a git checkout) (clean tree)\n")
    for line in sums:
        digest, name = line.split("  ")
        assert f"- package: jdoe/label/cfep03/{name}\n  sha256: {digest}\n" in run.stdout


def test_rerun_resumes_with_only_the_failed_config(feedstock: Feedstock) -> None:
    assert feedstock.run("--all", FAKE_BUILD_FAIL="*aarch64*").returncode == 1
    second = feedstock.run("--all")
    assert second.returncode == 0, second.stderr
    assert [c["container_env"]["CONFIG"] for c in feedstock.calls("run")] == [CUDA, CPU, ARM, ARM]
    records = feedstock.summary()["configs"]
    assert {k: (v["status"], v["earlier_run"]) for k, v in records.items()} == {
        CUDA: ("done", True),
        CPU: ("done", True),
        ARM: ("done", False),
    }
    assert len((feedstock.artifacts / "SHA256SUMS").read_text().splitlines()) == 6


def test_force_rebuilds_a_done_config(feedstock: Feedstock) -> None:
    assert feedstock.run(CPU).returncode == 0
    assert feedstock.run(CPU, "--force").returncode == 0
    assert len(feedstock.calls("run")) == 2


def test_fail_fast_stops_at_the_first_failure(feedstock: Feedstock) -> None:
    run = feedstock.run(CUDA, ARM, CPU, "--fail-fast", FAKE_BUILD_FAIL="*aarch64*")
    assert run.returncode == 1
    statuses = {k: v["status"] for k, v in feedstock.summary()["configs"].items()}
    assert statuses == {CUDA: "done", ARM: "failed", CPU: "pending"}


def test_prune_removes_our_containers_and_finished_work_folders_only(feedstock: Feedstock) -> None:
    run = feedstock.run(CPU, ARM, "--prune", FAKE_BUILD_FAIL="*aarch64*")
    assert run.returncode == 1
    prunes = feedstock.calls("container")
    assert len(prunes) == 2 and all(
        "label=org.conda-forge.build-locally=1" in c["argv"] for c in prunes
    )
    assert not [p for p in feedstock.artifacts.iterdir() if p.name.startswith("libtorch_")]
    assert list((feedstock.artifacts / "linux-64").glob("*.conda"))  # packages stay


def test_ccache_statistics_reach_the_summary(feedstock: Feedstock, tmp_path: Path) -> None:
    cache = tmp_path / "ccache"
    run = feedstock.run(CPU, "--ccache", str(cache))
    assert run.returncode == 0, run.stderr
    assert feedstock.summary()["configs"][CPU]["ccache"] == {
        "hits": 8,
        "misses": 2,
        "hit_rate": 0.8,
    }
    [build] = feedstock.builds()
    assert "--no-build-id" in build["argv"] and build["env"]["CCACHE_DIR"] == str(cache)
    conf = (feedstock.state / "home" / ".config" / "ccache" / "ccache.conf").read_text()
    assert f"cache_dir = {cache}" in conf


def test_mambabuild_tool_from_conda_forge_yml_is_honoured(feedstock: Feedstock) -> None:
    feedstock.set_forge_config("mambabuild")
    assert feedstock.run(CPU).returncode == 0
    [build] = feedstock.builds()
    assert build["tool"] == "conda-mambabuild"
    assert " boa" in (feedstock.state / "micromamba.txt").read_text()


def test_libmamba_tool_selects_the_solver(feedstock: Feedstock) -> None:
    feedstock.set_forge_config("conda-build+conda-libmamba-solver")  # conda-smithy's spelling
    assert feedstock.run(CPU).returncode == 0
    [build] = feedstock.builds()
    assert (build["tool"], build["env"]["CONDA_SOLVER"]) == ("conda-build", "libmamba")


def test_unknown_build_tool_fails_the_config_with_a_clear_line(feedstock: Feedstock) -> None:
    # not rattler-build: the toolkit renders a feedstock set to it from recipe/recipe.yaml.
    # In conda-forge.yml the toolkit refuses it up front (conda-smithy's schema); the local
    # override reaches the build scripts, which must refuse it too.
    assert feedstock.run(CPU, CONDA_BUILD_TOOL="boa").returncode == 1
    log = (feedstock.artifacts / f"{CPU}-log.txt").read_text()
    assert "conda_build_tool 'boa' is not supported" in log
