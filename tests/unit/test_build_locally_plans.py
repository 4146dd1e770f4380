"""build-locally's plans and engines, without starting any process: what one config's
build is handed, and which engine builds it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers.build_locally_unit import CONFIGS, LINUX_HOST, make_feedstock, options_for

from tools.foundation.errors import UserError
from tools.localbuild.engines import ladder
from tools.localbuild.engines.engine import LABEL, ContainerEngine
from tools.localbuild.engines.plan import HostFacts, describe, plan_build
from tools.localbuild.records.configs import (
    Config,
)


@pytest.fixture(autouse=True)
def _no_processes(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("unit tests must not start processes")

    monkeypatch.setattr(subprocess, "Popen", refuse)


@pytest.fixture
def feedstock(tmp_path: Path) -> Path:
    return make_feedstock(tmp_path)


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


def test_prune_only_touches_our_labelled_containers() -> None:
    argv = ContainerEngine.from_env({}).prune_argv()
    assert argv[:3] == ["docker", "container", "prune"] and f"label={LABEL}" in argv
