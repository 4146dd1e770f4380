"""build-locally's logic, without starting any process (the e2e tests do that)."""

from __future__ import annotations

import argparse
import io
import json
import subprocess
from pathlib import Path

import pytest

from tools.foundation.errors import UserError
from tools.localbuild.batch.record import ConfigResult, classify
from tools.localbuild.batch.summary import summary_table
from tools.localbuild.engines import embedded, ladder
from tools.localbuild.engines.ccache import CcacheStats, parse_stats
from tools.localbuild.engines.engine import LABEL, ContainerEngine
from tools.localbuild.engines.logtee import (
    LineSplitter,
    LogSink,
    clean,
    ninja_progress,
    phase_of,
    scrub,
)
from tools.localbuild.engines.plan import HostFacts, describe, plan_build
from tools.localbuild.engines.progress import Progress
from tools.localbuild.options import build_parser, from_args
from tools.localbuild.records import artifacts as art
from tools.localbuild.records.configs import (
    Config,
    apply_filter,
    choose_interactively,
    docker_image,
    select,
)
from tools.localbuild.review.cfep3 import read_sums, request_yaml

CONFIGS = (
    "linux_64_blas_implgenericcuda_compiler_version12.9",
    "linux_64_blas_implgenericcuda_compiler_versionNone",
    "linux_64_blas_implmklcuda_compiler_versionNone",
    "osx_arm64_channel_targetsconda-forge_main",
    "win_64_cuda_compiler_versionNone",
)
LINUX_HOST = HostFacts(os="linux", selinux_enforcing=False, pid=4242)


@pytest.fixture(autouse=True)
def _no_processes(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("unit tests must not start processes")

    monkeypatch.setattr(subprocess, "Popen", refuse)


@pytest.fixture
def feedstock(tmp_path: Path) -> Path:
    ci = tmp_path / ".ci_support"
    (ci / "migrations").mkdir(parents=True)
    (ci / "migrations" / "cuda130.yaml").write_text("__migrator: {}\n")
    for name in CONFIGS:
        (ci / f"{name}.yaml").write_text(
            "docker_image:\n- quay.io/condaforge/linux-anvil-x86_64:alma10\n"
            "target_platform:\n- linux-64\n"
        )
    return tmp_path


def options_for(root: Path, *argv: str, env: dict[str, str] | None = None, interactive=False):
    args = build_parser().parse_args(list(argv))
    return from_args(args, env or {"PATH": "/usr/bin"}, root, interactive=interactive)


# ---------------------------------------------------------------- selection


def test_select_keeps_exact_names_in_the_order_given() -> None:
    assert select(CONFIGS, [CONFIGS[2], CONFIGS[0]]) == (CONFIGS[2], CONFIGS[0])


def test_select_expands_globs_without_duplicates() -> None:
    assert select(CONFIGS, ["linux_64_*mkl*", "linux_64_*"]) == (CONFIGS[2], CONFIGS[0], CONFIGS[1])


def test_select_accepts_a_path_with_yaml_suffix_as_typed_with_completion() -> None:
    assert select(CONFIGS, [f".ci_support/{CONFIGS[1]}.yaml"]) == (CONFIGS[1],)


def test_unknown_config_is_an_error_naming_the_closest_configs() -> None:
    with pytest.raises(UserError) as excinfo:
        select(CONFIGS, ["linux_64_blas_implmklcuda_compiler_version12.9"])
    first, *names = str(excinfo.value).splitlines()
    assert "no config named" in first and first.endswith("the closest are:")
    assert [n.strip() for n in names][:2] == [CONFIGS[2], CONFIGS[0]]


def test_unknown_config_is_never_replaced_by_the_only_config() -> None:
    with pytest.raises(UserError):
        select(CONFIGS[:1], ["linux_64_typo"])


def test_glob_matching_nothing_is_an_error() -> None:
    with pytest.raises(UserError, match="matches none of the 5 configs"):
        select(CONFIGS, ["linux_aarch64_*"])


def test_filter_is_matched_against_the_yaml_file_name_like_conda_smithy() -> None:
    assert apply_filter(CONFIGS, "osx_*") == (CONFIGS[3],)
    assert apply_filter(CONFIGS, "*None") == (CONFIGS[1], CONFIGS[2], CONFIGS[4])


def test_all_respects_the_filter() -> None:
    assert select(CONFIGS, [], all_configs=True, filter_glob="linux_*") == CONFIGS[:3]


def test_a_config_excluded_by_the_filter_is_an_error_not_a_silent_skip() -> None:
    with pytest.raises(UserError, match="excluded by --filter"):
        select(CONFIGS, [CONFIGS[3]], filter_glob="linux_*")


def test_names_and_all_together_are_refused() -> None:
    with pytest.raises(UserError, match="not both"):
        select(CONFIGS, [CONFIGS[0]], all_configs=True)


def test_no_request_means_ask() -> None:
    assert select(CONFIGS, []) == ()


def test_menu_picks_by_number() -> None:
    shown: list[str] = []
    assert choose_interactively(CONFIGS, lambda prompt: " 2 ", shown.append) == CONFIGS[1]
    assert any(CONFIGS[4] in line for line in shown)


def test_menu_rejects_a_number_out_of_range() -> None:
    with pytest.raises(UserError, match="1-5"):
        choose_interactively(CONFIGS, lambda prompt: "9", lambda line: None)


def test_docker_image_is_the_first_entry(feedstock: Path) -> None:
    path = feedstock / ".ci_support" / f"{CONFIGS[0]}.yaml"
    assert docker_image(path) == "quay.io/condaforge/linux-anvil-x86_64:alma10"


def test_unreadable_config_yaml_is_a_user_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("docker_image: [unclosed\n")
    with pytest.raises(UserError, match=r"bad\.yaml"):
        docker_image(bad)


# ---------------------------------------------------------------- options


def test_output_id_without_debug_is_refused(feedstock: Path) -> None:
    with pytest.raises(UserError, match="--debug"):
        options_for(feedstock, "--output-id", "pytorch", CONFIGS[0])


def test_debug_needs_a_single_config(feedstock: Path) -> None:
    with pytest.raises(UserError, match="single config"):
        options_for(feedstock, "--debug", "--all")


def test_secrets_are_removed_from_the_build_environment(feedstock: Path) -> None:
    env = {"PATH": "/usr/bin", "BINSTAR_TOKEN": "tok-123456", "GITHUB_TOKEN": "ghs-abcdef"}
    options = options_for(feedstock, CONFIGS[0], env=env)
    assert "BINSTAR_TOKEN" not in options.env and "GITHUB_TOKEN" not in options.env
    assert set(options.secrets) == {"tok-123456", "ghs-abcdef"}
    assert options.withheld == ("BINSTAR_TOKEN", "GITHUB_TOKEN")


def test_run_args_that_forward_a_token_are_refused(feedstock: Path) -> None:
    env = {"PATH": "/usr/bin", "CONDA_FORGE_DOCKER_RUN_ARGS": "--rm -e BINSTAR_TOKEN"}
    with pytest.raises(UserError, match="BINSTAR_TOKEN"):
        options_for(feedstock, CONFIGS[0], env=env)


def test_ccache_dir_with_whitespace_is_refused(feedstock: Path) -> None:
    with pytest.raises(UserError, match="whitespace"):
        options_for(feedstock, "--ccache", str(feedstock / "my cache"), CONFIGS[0])


# ---------------------------------------------------------------- plans


def plan(feedstock: Path, *argv: str, env=None, host=LINUX_HOST, name=CONFIGS[0]):
    options = options_for(feedstock, *argv, name, env=env)
    engine = ContainerEngine.from_env(options.env)
    return plan_build(
        options, Config(name, feedstock / ".ci_support" / f"{name}.yaml"), engine, host
    )


def test_plan_sets_conda_smithys_environment_contract(feedstock: Path) -> None:
    result = plan(feedstock)
    assert result.changes["CONFIG"] == CONFIGS[0]
    assert result.changes["UPLOAD_PACKAGES"] == "False"
    assert result.changes["IS_PR_BUILD"] == "True"
    assert result.changes["MINIFORGE_HOME"] == str(feedstock / "miniforge3")
    assert "BUILD_WITH_CONDA_DEBUG" not in result.changes
    assert result.argv == ("bash", str(feedstock / ".scripts" / "run_docker_build.sh"))


def test_plan_without_debug_drops_a_stale_debug_export(feedstock: Path) -> None:
    result = plan(
        feedstock, env={"PATH": "/usr/bin", "BUILD_WITH_CONDA_DEBUG": "1", "BUILD_OUTPUT_ID": "x"}
    )
    assert "BUILD_WITH_CONDA_DEBUG" not in result.env and "BUILD_OUTPUT_ID" not in result.env


def test_plan_with_debug_and_output_id(feedstock: Path) -> None:
    result = plan(feedstock, "--debug", "--output-id", "pytorch")
    assert result.changes["BUILD_WITH_CONDA_DEBUG"] == "1"
    assert result.changes["BUILD_OUTPUT_ID"] == "pytorch"
    assert (
        "--rm" not in result.changes["CONDA_FORGE_DOCKER_RUN_ARGS"]
    )  # keep the container to poke at


def test_plan_names_and_labels_its_container_after_the_users_run_args(feedstock: Path) -> None:
    result = plan(feedstock, env={"PATH": "/usr/bin", "CONDA_FORGE_DOCKER_RUN_ARGS": "--gpus all"})
    run_args = result.changes["CONDA_FORGE_DOCKER_RUN_ARGS"].split()
    assert run_args[:2] == ["--gpus", "all"]
    assert run_args[run_args.index("--name") + 1] == result.container
    assert LABEL in run_args and "--rm" in run_args


def test_docker_image_env_overrides_the_config(feedstock: Path) -> None:
    result = plan(feedstock, env={"PATH": "/usr/bin", "DOCKER_IMAGE": "example.org/anvil:test"})
    assert result.image == "example.org/anvil:test"


def test_ccache_is_mounted_and_announced_to_the_container(feedstock: Path, tmp_path: Path) -> None:
    result = plan(feedstock, "--ccache", str(tmp_path / "cache"))
    assert (
        f"-v {tmp_path / 'cache'}:/home/conda/ccache:rw"
        in result.changes["CONDA_FORGE_DOCKER_RUN_ARGS"]
    )
    assert "-e CCACHE_DIR=/home/conda/ccache" in result.changes["CONDA_FORGE_DOCKER_RUN_ARGS"]


def test_podman_ccache_volume_skips_selinux_relabel_when_selinux_is_off(
    feedstock: Path, tmp_path: Path
) -> None:
    cache = str(tmp_path / "cache")
    podman = plan(
        feedstock, "--ccache", cache, env={"PATH": "/usr/bin", "DOCKER_EXECUTABLE": "podman"}
    )
    docker = plan(feedstock, "--ccache", cache)
    assert podman.mounts[-1].options == "rw" and docker.mounts[-1].options == "rw,z"
    assert f"{cache}:/home/conda/ccache:rw " in podman.changes["CONDA_FORGE_DOCKER_RUN_ARGS"]


def test_windows_configs_are_refused_on_linux(feedstock: Path) -> None:
    with pytest.raises(UserError, match="Windows configs build only on Windows"):
        plan(feedstock, name=CONFIGS[4])


def test_osx_configs_use_the_container_on_linux_like_conda_smithy(feedstock: Path) -> None:
    env = {"PATH": "/usr/bin", "OSX_SDK_DIR": "/sdk"}
    assert plan(feedstock, name=CONFIGS[3], env=env).dispatch == "docker"


def test_osx_configs_on_a_mac_need_the_sdk_dir(feedstock: Path) -> None:
    mac = HostFacts(os="osx", selinux_enforcing=False, pid=1)
    with pytest.raises(UserError, match="OSX_SDK_DIR"):
        plan(feedstock, name=CONFIGS[3], host=mac)
    ready = plan(
        feedstock, name=CONFIGS[3], host=mac, env={"PATH": "/usr/bin", "OSX_SDK_DIR": "/sdk"}
    )
    assert ready.argv[-1].endswith("run_osx_build.sh") and not ready.script_writes_marker


def test_native_runs_build_steps_on_the_host(feedstock: Path) -> None:
    result = plan(feedstock, "--native")
    assert result.argv[-1].endswith("build_steps.sh")
    assert result.changes["CF_BUILD_NATIVE"] == "1"
    assert result.changes["FEEDSTOCK_ROOT"] == str(feedstock)


def test_dry_run_description_shows_command_env_mounts_and_withheld_tokens(feedstock: Path) -> None:
    env = {"PATH": "/usr/bin", "BINSTAR_TOKEN": "tok-123456"}
    result = plan(feedstock, env=env)
    text = describe(
        result, status="would build", engine=ContainerEngine.from_env(env), secrets=("tok-123456",)
    )
    assert "run_docker_build.sh" in text and f"CONFIG={CONFIGS[0]}" in text
    assert f"{feedstock} -> /home/conda/feedstock_root" in text
    assert "withheld: BINSTAR_TOKEN" in text and "tok-123456" not in text


# ---------------------------------------------------------------- engine


@pytest.mark.parametrize(
    ("executable", "name"),
    [
        ("docker", "docker"),
        ("podman", "podman"),
        ("/usr/local/bin/podman-remote", "podman"),
    ],
)
def test_engine_follows_docker_executable(executable: str, name: str) -> None:
    engine = ContainerEngine.from_env({"DOCKER_EXECUTABLE": executable})
    assert engine.name == name and engine.executable == executable


def test_missing_engine_says_how_to_go_on_without_one() -> None:
    engine = ContainerEngine.from_env({})
    with pytest.raises(UserError) as excinfo:
        engine.resolve({"PATH": "/nonexistent"})
    assert "leave out --engine docker" in str(excinfo.value)


def test_the_ladder_falls_to_the_embedded_engine_and_says_why(tmp_path: Path) -> None:
    # Before: no ladder; the run stopped at "no container engine ... use --native".
    chosen = ladder.choose(None, ContainerEngine.from_env({}), {"PATH": str(tmp_path)})
    assert chosen.builder == "rattler-build"
    assert chosen.line.startswith("engine: rattler-build ")
    assert "`docker` is not on PATH; no conda-build on PATH" in chosen.line


def test_the_ladder_takes_the_conda_build_on_path_before_the_embedded_engine(
    tmp_path: Path,
) -> None:
    (tmp_path / "conda-build").write_text("#!/bin/sh\n")
    (tmp_path / "conda-build").chmod(0o755)
    chosen = ladder.choose(None, ContainerEngine.from_env({}), {"PATH": str(tmp_path)})
    assert chosen.builder == "conda-build"
    assert "conda-build on PATH" in chosen.line and "`docker` is not on PATH" in chosen.line


def test_debug_is_refused_when_the_embedded_engine_would_build(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="--debug opens conda-build's debug shell"):
        ladder.choose(None, ContainerEngine.from_env({}), {"PATH": str(tmp_path)}, debug=True)


def test_a_forced_engine_is_probed_alone(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path)}
    chosen = ladder.choose("rattler-build", ContainerEngine.from_env({}), env)
    assert chosen.line.endswith("(--engine rattler-build)") and "docker" not in chosen.line
    with pytest.raises(UserError, match="needs conda-build on PATH"):
        ladder.choose("conda-build", ContainerEngine.from_env({}), env)


@pytest.mark.parametrize(
    ("system", "machine", "subdir"),
    [
        ("linux", "x86_64", "linux-64"),
        ("linux", "aarch64", "linux-aarch64"),
        ("linux", "ppc64le", "linux-ppc64le"),
        ("darwin", "arm64", "osx-arm64"),
        ("darwin", "x86_64", "osx-64"),
        ("win32", "AMD64", "win-64"),
    ],
)
def test_the_host_platform_in_condas_words(system: str, machine: str, subdir: str) -> None:
    assert embedded.host_subdir(system, machine) == subdir


def _variant_file(tmp_path: Path, cuda: str, stdlib: str, target: str = "linux-64") -> Config:
    path = tmp_path / "cfg.yaml"
    path.write_text(
        f"target_platform:\n- {target}\ncuda_compiler_version:\n- {cuda}\n"
        f"c_stdlib_version:\n- '{stdlib}'\n"
    )
    return Config("cfg", path)


def test_the_embedded_engine_refuses_a_cuda_config_the_machines_glibc_cannot_install(
    tmp_path: Path,
) -> None:
    config = _variant_file(tmp_path, "13.0", "2.28")
    with pytest.raises(UserError, match=r"need glibc >= 2\.28 .* this machine has 2\.17"):
        embedded.check_buildable(config, "linux-64", "2.17")
    embedded.check_buildable(config, "linux-64", "2.36")  # new enough: no refusal


def test_the_embedded_engine_refuses_a_config_of_another_platform(tmp_path: Path) -> None:
    config = _variant_file(tmp_path, "None", "2.17", target="linux-aarch64")
    with pytest.raises(UserError, match=r"a linux-aarch64 config, and .* only for this machine"):
        embedded.check_buildable(config, "linux-64", "2.36")


def test_prune_only_touches_our_labelled_containers() -> None:
    argv = ContainerEngine.from_env({}).prune_argv()
    assert argv[:3] == ["docker", "container", "prune"] and f"label={LABEL}" in argv


# ---------------------------------------------------------------- log lines


def test_log_lines_keep_what_a_terminal_shows_last() -> None:
    assert clean("\x1b[32mok\x1b[0m") == "ok"
    assert clean("Downloading 10%\rDownloading 100%\r") == "Downloading 100%"


def test_splitter_survives_utf8_split_across_reads() -> None:
    splitter = LineSplitter()
    data = "naïve line\r\nnext".encode()
    cut = data.index(b"\xc3") + 1
    assert splitter.feed(data[:cut]) == []
    assert splitter.feed(data[cut:]) == ["naïve line"]
    assert splitter.flush() == ["next"]


def test_scrub_redacts_known_values_and_github_token_shapes() -> None:
    token = "ghp_" + "a" * 36
    assert scrub(f"value tok-123456 and {token}", ["tok-123456"]) == "value *** and ***"


@pytest.mark.parametrize(
    ("line", "phase"),
    [
        ("::group::Configuring conda", "Configuring conda"),
        ("##[group]Inspecting artifacts", "Inspecting artifacts"),
        ("==> Running conda-build for x", "Running conda-build for x"),
        ("Configuring conda", "Configuring conda"),
        ("BUILD START: ['libtorch-2.13.0-h1_0.conda']", "build start 'libtorch-2.13.0-h1_0.conda'"),
        ("[12/9000] Building CXX object x.o", None),
        ("plain output", None),
    ],
)
def test_phase_of_recognises_group_markers(line: str, phase: str | None) -> None:
    assert phase_of(line) == phase


def test_ninja_progress_is_read_from_status_lines() -> None:
    assert ninja_progress("[12/9000] Building CXX object x.o") == (12, 9000)
    assert ninja_progress("[done]") is None


def test_log_sink_timestamps_and_redacts(tmp_path: Path) -> None:
    sink = LogSink(tmp_path / "x-log.txt", ["tok-123456"], clock=lambda: 3600 * 5 + 61)
    assert sink.line("token tok-123456") == "token ***"
    sink.close()
    assert (tmp_path / "x-log.txt").read_text() == "[05:01:01] token ***\n"


# ---------------------------------------------------------------- artifacts


def test_produced_packages_are_new_or_changed_ones() -> None:
    before = {"linux-64/a.conda": (1, 1), "linux-64/b.conda": (1, 1)}
    after = {"linux-64/a.conda": (1, 1), "linux-64/b.conda": (2, 5), "noarch/c.tar.bz2": (1, 1)}
    assert art.produced(before, after) == ["linux-64/b.conda", "noarch/c.tar.bz2"]


def test_sha256sums_lists_packages_in_channel_folders_only(tmp_path: Path) -> None:
    (tmp_path / "linux-64").mkdir()
    (tmp_path / "linux-64" / "libtorch-2.13.0-h0_0.conda").write_bytes(b"abc")
    (tmp_path / "pkg_cache").mkdir()
    (tmp_path / "pkg_cache" / "cached-1.0-0.conda").write_bytes(b"cached")
    art.write_sha256sums(tmp_path)
    assert (tmp_path / "SHA256SUMS").read_text() == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  "
        "linux-64/libtorch-2.13.0-h0_0.conda\n"
    )
    assert not list(tmp_path.glob(".SHA256SUMS*"))


def test_work_dirs_are_conda_build_timestamped_folders(tmp_path: Path) -> None:
    for name in ("libtorch_1732000000123", "pkg_cache", "linux-64", "src_cache"):
        (tmp_path / name).mkdir()
    assert art.work_dirs(tmp_path) == {"libtorch_1732000000123"}
    assert art.remove_work_dirs(tmp_path, ["libtorch_1732000000123", "../etc_1732000000123"]) == [
        "libtorch_1732000000123"
    ]


def test_earlier_log_is_set_aside_not_overwritten(tmp_path: Path) -> None:
    art.log_path(tmp_path, "cfg").write_text("first attempt\n")
    moved = art.set_aside_old_log(tmp_path, "cfg")
    assert moved is not None and moved.read_text() == "first attempt\n"
    assert not art.log_path(tmp_path, "cfg").exists()


def test_unreadable_summary_is_treated_as_absent(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text("{not json")
    assert art.read_summary(tmp_path) == {}
    (tmp_path / "summary.json").write_text(json.dumps({"configs": {"a": {"status": "done"}}}))
    assert art.read_summary(tmp_path) == {"a": {"status": "done"}}


# ---------------------------------------------------------------- ccache and summary


def test_ccache_print_stats_hits_are_direct_plus_preprocessed() -> None:
    stats = parse_stats("direct_cache_hit\t7\npreprocessed_cache_hit\t1\ncache_miss\t2\n")
    assert stats == CcacheStats(hits=8, misses=2) and stats.describe() == "80%"


def test_ccache_stats_without_counters_are_unknown() -> None:
    assert parse_stats("not ccache output") is None


@pytest.mark.parametrize(
    ("returncode", "interrupted", "marker", "status"),
    [
        (0, False, True, "done"),
        (0, False, False, "failed"),  # the script ended early without failing: not done
        (1, False, False, "failed"),
        (130, True, False, "interrupted"),
        (0, True, True, "interrupted"),
    ],
)
def test_classify_counts_only_a_clean_exit_with_marker_as_done(
    returncode, interrupted, marker, status
) -> None:
    assert classify(returncode, interrupted, marker)[0] == status


def test_summary_table_lists_every_config_with_its_status() -> None:
    results = [
        ConfigResult(
            "cfg_a",
            "done",
            seconds=3725,
            packages=(art.Package("linux-64/a.conda", "0" * 64, 1),),
            ccache=CcacheStats(3, 1),
        ),
        ConfigResult("cfg_b", "failed", seconds=60),
        ConfigResult("cfg_c", "pending"),
    ]
    labels = {"cfg_a": "linux-64 cpu", "cfg_b": "win-64 cuda12.9", "cfg_c": "osx-64 cpu"}
    lines = summary_table(results, labels).splitlines()
    assert lines[0].split() == ["status", "time", "pkgs", "ccache", "label", "config"]
    assert lines[1].split() == ["done", "1:02:05", "1", "75%", "linux-64", "cpu", "cfg_a"]
    assert lines[2].split() == ["FAILED", "0:01:00", "-", "-", "win-64", "cuda12.9", "cfg_b"]
    assert lines[3].split() == ["pending", "-", "-", "-", "osx-64", "cpu", "cfg_c"]


def test_summary_table_ends_with_the_total_build_and_wall_clock_time() -> None:
    results = [
        ConfigResult("a", "done", seconds=3600, packages=(art.Package("p", "0" * 64, 1),)),
        ConfigResult("b", "failed", seconds=1800),
        ConfigResult("c", "skipped", seconds=999),  # built by an earlier run: not this run's time
    ]
    total = summary_table(results, wall_seconds=5410).splitlines()[-1]
    assert total.split() == ["total", "1:30:00", "1", "-", "3", "configs", "(wall", "clock",
                             "1:30:10)"]  # fmt: skip


def test_summary_table_keeps_an_earlier_runs_build_out_of_this_runs_total() -> None:
    results = [
        ConfigResult("a", "done", seconds=3600, earlier=True),
        ConfigResult("b", "done", seconds=60),
        ConfigResult("w", "skipped", reason="cannot build here (Windows)"),
    ]
    lines = summary_table(results).splitlines()
    assert lines[1].split()[:5] == ["done", "(earlier", "run)", "1:00:00", "0"]
    assert lines[3].split()[:7] == ["skipped:", "cannot", "build", "here", "(Windows)", "-", "0"]
    assert lines[-1].split()[:2] == ["total", "0:01:00"]
    assert "3 configs, 1 built by an earlier run" in lines[-1]


def _record(machine: str, commit: str, packages=("linux-64/a.conda",)) -> dict[str, object]:
    return {
        "status": "done",
        "machine": machine,
        "packages": [{"path": p, "sha256": "0" * 64, "size": 1} for p in packages],
        "provenance": {"machine": machine, "commit": commit, "dirty": False},
    }


def test_merge_refuses_one_config_built_from_two_commits_naming_machines_and_field() -> None:
    from tools.localbuild.review.merge import Source, choose_records

    sources = [
        Source(Path(name), None, None, (), {"cfg": _record(name, commit)})
        for name, commit in (("alpha", "a" * 40), ("beta", "b" * 40))
    ]
    with pytest.raises(UserError) as excinfo:
        choose_records(sources)
    assert str(excinfo.value).startswith(
        f"review merge: cfg was built on alpha and on beta with a different commit ({'a' * 40} vs "
    )


def test_merge_prefers_another_machines_failure_to_a_config_filtered_out_here() -> None:
    from tools.localbuild.review.merge import Source, choose_records

    here = {"cfg": {"status": "skipped", "reason": "filtered out"}}
    there = {"cfg": {"status": "failed", "machine": "beta", "note": "exit status 1"}}
    sources = [Source(Path("a"), None, None, (), here), Source(Path("b"), None, None, (), there)]
    assert choose_records(sources)["cfg"].record["status"] == "failed"


def test_parser_accepts_conda_smithys_command_line() -> None:
    args = build_parser().parse_args(
        ["--filter", "linux_*", "--debug", "--output-id", "pytorch", "cfg"]
    )
    assert isinstance(args, argparse.Namespace)
    assert (args.config, args.filter_glob, args.debug, args.output_id) == (
        ["cfg"],
        "linux_*",
        True,
        "pytorch",
    )


# ---------------------------------------------------------------- progress and CFEP-03 request


def test_progress_redraws_one_status_line_on_a_terminal() -> None:
    now = [100.0]
    stream = io.StringIO()
    progress = Progress(stream, is_tty=True, clock=lambda: now[0])
    progress.start(2, 5, "linux_64_cfg")
    progress.line("==> Running conda-build for linux_64_cfg")
    progress.line("[120/4000] Building CXX object x.o")
    now[0] += 65
    progress.tick()
    text = stream.getvalue()
    assert "[2/5] linux_64_cfg\n" in text
    assert "[2/5]   0:00:00  Running conda-build for linux_64_cfg\n" in text
    assert text.endswith(
        "\r\x1b[K[2/5]   0:01:05  Running conda-build for linux_64_cfg  [120/4000]"
    )
    assert "Building CXX object" not in text


def test_progress_without_a_terminal_prints_a_rare_heartbeat() -> None:
    now = [0.0]
    stream = io.StringIO()
    progress = Progress(stream, is_tty=False, clock=lambda: now[0])
    progress.start(1, 1, "cfg")
    now[0] += 10
    progress.tick()
    assert "still running" not in stream.getvalue()
    now[0] += 300
    progress.tick()
    assert stream.getvalue().splitlines()[-1] == "[1/1]   0:05:10  starting (still running)"


def test_heartbeat_lines_line_up_with_phase_lines() -> None:
    now = [0.0]
    stream = io.StringIO()
    progress = Progress(stream, is_tty=False, clock=lambda: now[0])
    progress.start(3, 15, "cfg")
    now[0] += 42
    progress.line("==> Running conda-build")
    now[0] += 400
    progress.tick()
    phase, heartbeat = stream.getvalue().splitlines()[-2:]
    assert phase.index("0:00:42") == heartbeat.index("0:07:22")
    assert phase.index("Running") == heartbeat.index("Running")


def test_the_start_line_shows_the_label_and_the_status_line_the_eta_and_its_source() -> None:
    now = [0.0]
    wall = 1_767_261_600.0  # 2026-01-01 10:00:00 UTC
    stream = io.StringIO()
    progress = Progress(stream, is_tty=False, clock=lambda: now[0], wall=lambda: wall + now[0])
    progress.start(
        1, 2, "linux_64_long", label="linux-64 cpu", expected=(7200.0, 86400.0, "cost model")
    )
    first, second = stream.getvalue().splitlines()
    assert first == "[1/2] linux-64 cpu  linux_64_long"
    assert second == (
        "[1/2]   0:00:00  expected 2:00:00; ETA 12:00Z, batch Fri 12:00Z (cost model)"
    )
    now[0] += 1800
    assert progress.status().endswith("starting  ETA 12:00Z, batch Fri 12:00Z (cost model)")
    now[0] += 7200  # past the estimate: the config is due now, and says it is late
    assert "ETA 12:30Z, batch Fri 12:30Z (over the estimate)" in progress.status()


def test_cfep3_request_names_each_package_with_its_digest(tmp_path: Path) -> None:
    from ruamel.yaml import YAML

    sums = tmp_path / "SHA256SUMS"
    sums.write_text(
        f"{'a' * 64}  linux-64/libtorch-2.13.0-cuda129_h1_302.conda\n"
        f"{'b' * 64}  noarch/pytorch-gpu-2.13.0-cuda129_h2_302.conda\n"
    )
    text = request_yaml("jdoe/label/cfep03", read_sums(sums))
    assert YAML(typ="safe").load(text) == {
        "action": "cfep3_copy",
        "anaconda_org_packages": [
            {
                "package": "jdoe/label/cfep03/linux-64/libtorch-2.13.0-cuda129_h1_302.conda",
                "sha256": "a" * 64,
            },
            {
                "package": "jdoe/label/cfep03/noarch/pytorch-gpu-2.13.0-cuda129_h2_302.conda",
                "sha256": "b" * 64,
            },
        ],
    }


def test_cfep3_request_keeps_long_package_names_on_one_line() -> None:
    name = "linux-64/libtorch-2.13.0-" + "x" * 200 + ".conda"
    text = request_yaml("jdoe/label/cfep03", [("c" * 64, name)])
    assert f"- package: jdoe/label/cfep03/{name}\n" in text


def test_cfep3_request_rejects_a_malformed_checksum_line(tmp_path: Path) -> None:
    sums = tmp_path / "SHA256SUMS"
    sums.write_text("deadbeef  linux-64/x.conda\n")
    with pytest.raises(UserError, match="SHA256SUMS:1"):
        read_sums(sums)


def test_cfep3_request_rejects_a_channel_url(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="jdoe/label/cfep03"):
        request_yaml("https://anaconda.org/jdoe", [("a" * 64, "linux-64/x.conda")])


# ---------------------------------------------------------------- --why's patterns


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (r"C:\b\aten\src\ATen\Context.cpp(12): error C2065: 'x': undeclared identifier",
         "compiler error"),
        ("kernel.cu(40): error: identifier \"foo\" is undefined", "compiler error"),
        ("ld.lld: error: undefined symbol: c10::version()", "linker error"),
        ("Undefined symbols for architecture arm64:", "linker error"),
        ("torch_cpu.lib(Context.obj) : error LNK2019: unresolved external symbol", "linker error"),
        ("      3/12 Test  #3: test_api .........................***Failed    0.02 sec",
         "test failure"),
        ("TESTS FAILED: pytorch-2.13.0-cuda129_py312_0.conda", "test failure"),
        ("FAILED: caffe2/CMakeFiles/torch_cpu.dir/a.cpp.o", ""),  # ninja's step, not the error
        ("-- Performing Test HAS_WERROR - Failed", ""),
        ("### build-locally: failed after 0:01:00 (exit status 1)", ""),
        # a solve that found no environment: conda-build, libmamba, rattler-build, resolvo
        ("conda_build.exceptions.DependencyNeedsBuildingError: Unsatisfiable dependencies for "
         "platform linux-64: {MatchSpec(\"libabseil==20260526\")}", "solver failure"),
        ("Could not solve for environment specs", "solver failure"),
        ("error: Failed to resolve dependencies", "solver failure"),
        ("Cannot solve the request because of: No candidates were found for libfoo *.",
         "solver failure"),
        # a download this machine could not make (issue 43, item 1): rattler-build (no URL),
        # the embedded engine's line naming it, conda and conda-build, curl in the scripts
        ("error: Failed to download from URL: Request failed after 3 retries",
         "download failure"),
        ("error: cannot download https://github.com/pytorch/pytorch/releases/download/v9.9.9/"
         "pytorch-v9.9.9.tar.gz (the source archive recipe-v1.yaml names): ...",
         "download failure"),
        ("CondaHTTPError: HTTP 000 CONNECTION FAILED for url "
         "<https://conda.anaconda.org/conda-forge/linux-64/repodata.json>", "download failure"),
        ("curl: (6) Could not resolve host: micro.mamba.pm", "download failure"),
    ],
)  # fmt: skip
def test_why_knows_real_errors_from_the_lines_around_them(line: str, kind: str) -> None:
    from tools.localbuild.review.why import kind_of

    assert kind_of(line) == kind


def test_why_without_a_recognised_error_shows_the_end_of_the_log() -> None:
    from tools.localbuild.review.why import TAIL, first_error

    lines = [f"[10:00:{i % 60:02d}] step {i}\n" for i in range(100)]
    found = first_error(lines)
    assert found.kind == "" and [n for n, _ in found.context] == list(range(101 - TAIL, 101))


@pytest.mark.parametrize(
    ("argv", "command"),
    [(["--why", "x"], "why CONFIG"), (["--report"], "report [DIR...]"),
     (["--verify=d", "--commit", "abc1234"], "verify DIR"), (["cfg", "--merge", "d"], "merge DIR"),
     (["--cfep3-request", "jdoe"], "request CHANNEL"), (["--publish", "d"], "publish DEST"),
     (["--all", "--allow-other-engine"], "verify|request|merge|publish")],
)  # fmt: skip
def test_a_flag_that_moved_to_the_review_is_refused_naming_its_command(
    tmp_path: Path, argv: list[str], command: str
) -> None:
    from tools.localbuild.options import parse

    with pytest.raises(UserError, match="moved to `python -m tools review ") as refused:
        parse(argv, {}, tmp_path, interactive=False)
    assert f"python -m tools review {command}" in str(refused.value)
    assert "\n" not in str(refused.value)  # one line


def test_the_menu_takes_a_label_as_well_as_a_number() -> None:
    said: list[str] = []
    pool = ("linux_64_long_a", "linux_64_long_b")
    label_of = {"linux_64_long_a": "linux-64 cpu", "linux_64_long_b": "linux-64 cuda13.0"}
    chosen = choose_interactively(
        pool, lambda _: "linux-64  cuda13.0", said.append, label_of=label_of
    )
    assert chosen == "linux_64_long_b"
    assert said[1:] == [
        "  1. linux-64 cpu       linux_64_long_a",
        "  2. linux-64 cuda13.0  linux_64_long_b",
    ]
