"""A release over several machines, end to end with the fake engine: --shard, then --merge.

Three throw-away feedstocks each build their shard of the same three configs
(tests/fixtures/fake_docker drives the repository's real .scripts); a fourth
merges their build_artifacts/, and a fifth builds everything in one batch.  The
merged release must be indistinguishable from the single batch.
"""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import pytest
from helpers.fake_engine_feedstock import ARM, CPU, CUDA, Feedstock

from tools.foundation.errors import UserError
from tools.review.merge import Source, check_one_release, choose_records

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="drives bash scripts through a pseudo-terminal (POSIX only)"
)

# What legitimately differs between two runs of the same build: when, and how long.
TIMING = ("started", "duration_seconds")


def records(fs: Feedstock) -> dict[str, dict]:
    return {
        name: {k: v for k, v in record.items() if k not in TIMING}
        for name, record in fs.summary()["configs"].items()
    }


def zip_members(fs: Feedstock) -> list[str]:
    with zipfile.ZipFile(fs.artifacts / "log_files.zip") as archive:
        return sorted(archive.namelist())


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> dict[str, object]:
    machines = []
    for k in (1, 2, 3):
        fs = Feedstock(tmp_path_factory.mktemp(f"machine{k}"))
        run = fs.run("--all", "--shard", f"{k}/3")
        assert run.returncode == 0, run.stderr
        machines.append(fs)
    merged = Feedstock(tmp_path_factory.mktemp("merged"))
    merge = merged.review("merge", *(str(m.artifacts) for m in machines))
    single = Feedstock(tmp_path_factory.mktemp("single"))
    one_batch = single.run("--all")
    assert one_batch.returncode == 0, one_batch.stderr
    return {"machines": machines, "merged": merged, "merge": merge, "single": single}


def test_each_machine_built_only_its_own_shard(release) -> None:
    built = [sorted(m.summary()["this_run"]) for m in release["machines"]]
    assert sorted(name for names in built for name in names) == sorted([ARM, CPU, CUDA])
    assert all(len(names) == 1 for names in built)


def test_merge_succeeds_and_says_what_it_combined(release) -> None:
    merge = release["merge"]
    assert merge.returncode == 0, merge.stderr
    assert "merged 3 folder(s) into build_artifacts/: 3 configs (3 done), 6 package(s) copied" in (
        merge.stderr
    )


def test_merged_checksums_equal_one_batchs(release) -> None:
    merged, single = release["merged"], release["single"]
    sums = (merged.artifacts / "SHA256SUMS").read_bytes()
    assert sums == (single.artifacts / "SHA256SUMS").read_bytes()
    assert len(sums.splitlines()) == 6


def test_merged_summary_equals_one_batchs_but_for_timing(release) -> None:
    merged, single = release["merged"], release["single"]
    assert records(merged) == records(single)
    assert list(merged.summary()["configs"]) == list(single.summary()["configs"])
    rest = ("started", "finished", "configs")
    assert {k: v for k, v in merged.summary().items() if k not in rest} == {
        k: v for k, v in single.summary().items() if k not in rest
    }


def test_merged_log_zip_holds_the_same_members_as_one_batchs(release) -> None:
    merged, single = release["merged"], release["single"]
    assert zip_members(merged) == zip_members(single)
    with zipfile.ZipFile(merged.artifacts / "log_files.zip") as archive:
        assert archive.read("SHA256SUMS") == (merged.artifacts / "SHA256SUMS").read_bytes()
        assert archive.read("summary.json") == (merged.artifacts / "summary.json").read_bytes()


def test_merged_logs_are_the_building_machines_own(release) -> None:
    merged = release["merged"]
    with zipfile.ZipFile(merged.artifacts / "log_files.zip") as archive:
        for config in (ARM, CPU, CUDA):
            [builder] = [m for m in release["machines"] if config in m.summary()["this_run"]]
            log = (builder.artifacts / f"{config}-log.txt").read_bytes()
            assert archive.read(f"{config}-log.txt") == log


def test_merged_release_leaves_every_done_marker(release) -> None:
    merged = release["merged"]
    assert all(merged.marker(c).exists() for c in (ARM, CPU, CUDA))


def test_cfep3_request_of_the_merge_equals_one_batchs(release) -> None:
    merged, single = release["merged"], release["single"]
    ours = merged.review("request", "jdoe/label/cfep03")
    theirs = single.review("request", "jdoe/label/cfep03")
    assert ours.returncode == theirs.returncode == 0
    assert ours.stdout == theirs.stdout


def test_merge_with_cfep3_request_prints_only_the_request_on_stdout(
    release, tmp_path: Path
) -> None:
    fs = Feedstock(tmp_path)
    run = fs.review("merge", *(str(m.artifacts) for m in release["machines"]), "--request", "jdoe")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("# built from commit ")
    assert "\naction: cfep3_copy\n" in run.stdout
    assert "merged 3 folder(s)" in run.stderr


def test_a_package_built_twice_differently_is_refused_in_one_line(release, tmp_path: Path) -> None:
    first = release["machines"][0].artifacts
    clash = tmp_path / "other-machine"
    package = next(p for p in first.rglob("*.conda"))
    (clash / package.parent.name).mkdir(parents=True)
    (clash / package.parent.name / package.name).write_text("built elsewhere, differently\n")
    (clash / "summary.json").write_text(json.dumps({"version": 1, "configs": {}}))

    fs = Feedstock(tmp_path / "merger")
    run = fs.review("merge", str(first), str(clash))
    assert run.returncode == 2
    [line] = run.stderr.splitlines()
    name = f"{package.parent.name}/{package.name}"
    assert line.startswith(f"error: review merge: {name} differs between")
    assert "Traceback" not in run.stderr
    assert not fs.artifacts.exists() or not any(fs.artifacts.rglob("*.conda"))


def test_the_same_package_from_two_machines_is_merged_once(release, tmp_path: Path) -> None:
    first = release["machines"][0].artifacts
    fs = Feedstock(tmp_path)
    run = fs.review("merge", str(first), str(first.parent))  # a checkout or its build_artifacts
    assert run.returncode == 0, run.stderr
    assert len((fs.artifacts / "SHA256SUMS").read_text().splitlines()) == 2


def test_a_folder_without_a_summary_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    fs = Feedstock(tmp_path / "merger")
    run = fs.review("merge", str(tmp_path / "empty"))
    assert run.returncode == 2
    assert run.stderr.strip().endswith(
        "empty: no summary.json, neither there nor in log_files.zip; "
        "ask for the whole build_artifacts upload"
    )


def test_a_config_that_failed_everywhere_keeps_its_log_and_fails_the_merge(
    tmp_path: Path,
) -> None:
    machine = Feedstock(tmp_path / "m1")
    assert machine.run("--all", FAKE_BUILD_FAIL="*aarch64*").returncode == 1
    fs = Feedstock(tmp_path / "merger")
    run = fs.review("merge", str(machine.artifacts))
    assert run.returncode == 1
    assert f"1 config(s) not built on any machine: {ARM}" in run.stderr
    assert fs.summary()["configs"][ARM]["status"] == "failed"
    assert f"{ARM}-log.txt" in zip_members(fs)


def test_a_later_success_elsewhere_replaces_a_failure_and_keeps_the_old_log(
    tmp_path: Path,
) -> None:
    fs = Feedstock(tmp_path / "here")
    assert fs.run(ARM, FAKE_BUILD_FAIL="*aarch64*").returncode == 1
    other = Feedstock(tmp_path / "there")
    assert other.run(ARM).returncode == 0
    run = fs.review("merge", str(other.artifacts))
    assert run.returncode == 0, run.stderr
    assert fs.summary()["configs"][ARM]["status"] == "done"
    assert fs.marker(ARM).exists()
    assert len(list((fs.artifacts / "old-logs").glob(f"{ARM}-log-*.txt"))) == 1


# ---------------------------------------------------------------- --shard with the batch


def test_shard_composes_with_filter(feedstock: Feedstock) -> None:
    run = feedstock.run("--all", "--filter", "linux_64_*", "--shard", "2/2")
    assert run.returncode == 0, run.stderr
    assert "shard 2/2: 1 of 2 configs" in run.stderr
    assert feedstock.summary()["this_run"] in ([CPU], [CUDA])


def test_a_rerun_of_a_shard_resumes_only_that_shard(feedstock: Feedstock) -> None:
    assert feedstock.run("--all", "--shard", "1/2", FAKE_BUILD_FAIL="*").returncode == 1
    mine = feedstock.summary()["this_run"]
    again = feedstock.run("--all", "--shard", "1/2")
    assert again.returncode == 0, again.stderr
    assert feedstock.summary()["this_run"] == mine
    assert {c for c in (ARM, CPU, CUDA) if feedstock.marker(c).exists()} == set(mine)


def test_an_empty_shard_builds_nothing_and_succeeds(feedstock: Feedstock) -> None:
    run = feedstock.run("--all", "--shard", "4/4")
    assert run.returncode == 0, run.stderr
    assert "shard 4/4: 0 of 3 configs" in run.stderr
    assert not feedstock.calls("run")


@pytest.fixture
def feedstock(tmp_path: Path) -> Feedstock:
    return Feedstock(tmp_path)


def _source(path: str, **records: dict) -> Source:
    return Source(Path(path), None, None, tuple(records), records)


def _built(status: str, *packages: tuple[str, str]) -> dict:
    return {
        "status": status,
        "packages": [{"path": p, "sha256": d, "size": 1} for p, d in packages],
    }


def test_the_best_record_of_a_config_wins_and_earlier_folders_win_ties() -> None:
    chosen = choose_records(
        [
            _source("/a", x=_built("failed"), y=_built("done", ("linux-64/y.conda", "1"))),
            _source("/b", x=_built("done", ("linux-64/x.conda", "2")), y=_built("skipped")),
        ]
    )
    assert (chosen["x"].source, chosen["y"].source) == (Path("/b"), Path("/a"))


def test_a_config_built_on_two_machines_with_different_packages_is_refused() -> None:
    with pytest.raises(UserError, match="x was built in both /a and /b with different packages"):
        choose_records(
            [
                _source("/a", x=_built("done", ("linux-64/x-1.conda", "1"))),
                _source("/b", x=_built("done", ("linux-64/x-2.conda", "2"))),
            ]
        )


# ---------------------------------------------------------------- one release, every offset

# The recipe's own build number, and the variant offsets recipe/meta.yaml adds to it; each
# config below carries a different sum, as a real release's configs do.
RECIPE_BUILD = 3
OFFSET_RECIPE = f"""\
{{% set build = {RECIPE_BUILD} %}}
{{% set number = build + (0 if cuda_compiler_version == "None" else 200)
   + (100 if blas_impl == "mkl" else 0) + (50 if cuda_linalg_flavor == "magma" else 0) %}}
"""
OFFSET_CONFIGS = {  # config: (blas_impl, CUDA, linalg flavour), every offset and sum
    "linux_64_blas_implgeneric_cuda_compiler_versionNone": ("generic", "None", "nomagma"),
    "linux_64_blas_implmkl_cuda_compiler_versionNone": ("mkl", "None", "nomagma"),
    "linux_64_blas_implgeneric_cuda_compiler_version12.9": ("generic", "12.9", "nomagma"),
    "linux_64_blas_implmkl_cuda_compiler_version12.9": ("mkl", "12.9", "nomagma"),
    "linux_64_blas_implgeneric_cuda_linalg_flavormagma": ("generic", "12.9", "magma"),
    "linux_64_blas_implmkl_cuda_linalg_flavormagma": ("mkl", "12.9", "magma"),
}


def _offset_feedstock(tmp: Path) -> Feedstock:
    """The throw-away feedstock, its recipe numbering configs as recipe/meta.yaml does."""
    fs = Feedstock(tmp)
    ci = fs.root / ".ci_support"
    for old in ci.glob("*.yaml"):
        old.unlink()
    for config, (blas, cuda, flavour) in OFFSET_CONFIGS.items():
        (ci / f"{config}.yaml").write_text(
            f"blas_impl:\n- {blas}\nchannel_sources:\n- conda-forge\ncuda_compiler_version:\n"
            f"- '{cuda}'\ncuda_linalg_flavor:\n- {flavour}\n"
            "docker_image:\n- quay.io/condaforge/linux-anvil-x86_64:alma10\n"
            "target_platform:\n- linux-64\n"
        )
    meta = fs.root / "recipe" / "meta.yaml"
    meta.write_text(OFFSET_RECIPE + meta.read_text() + "build:\n  number: {{ number }}\n")
    return fs


def test_a_release_mixing_every_variant_offset_merges(tmp_path: Path) -> None:
    machines = [_offset_feedstock(tmp_path / f"machine{k}") for k in (1, 2)]
    for k, fs in enumerate(machines, 1):
        run = fs.run("--all", "--shard", f"{k}/2")
        assert run.returncode == 0, run.stderr
    merged = _offset_feedstock(tmp_path / "merger")
    run = merged.review("merge", *(str(m.artifacts) for m in machines))
    assert run.returncode == 0, run.stderr
    facts = {n: r["provenance"] for n, r in merged.summary()["configs"].items()}
    # each config keeps its own rendered number; all share the recipe's
    offsets = [0, 100, 200, 250, 300, 350]
    assert sorted(p["build_number"] for p in facts.values()) == [RECIPE_BUILD + o for o in offsets]
    assert {p["recipe_build_number"] for p in facts.values()} == {RECIPE_BUILD}


def test_configs_from_two_recipe_build_numbers_are_not_one_release() -> None:
    def record(recipe_build: int, number: int) -> dict:
        facts = {"machine": "vm", "recipe_build_number": recipe_build, "build_number": number}
        return {"status": "done", "provenance": facts}

    with pytest.raises(UserError, match=r"different recipe build number \(4 vs 3\)"):
        check_one_release({"cpu": record(3, 3), "cuda": record(4, 204)})
