"""Each engine of the registry on its own: whether it builds a config here (probe) and the
steps it runs for one (plan), without starting any process."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tools.foundation.errors import UserError
from tools.localbuild.engines import docker, embedded, native, osx, registry, win
from tools.localbuild.engines.base import HostFacts, host_subdir
from tools.localbuild.engines.engine import LABEL, ContainerEngine
from tools.localbuild.options import build_parser, from_args
from tools.localbuild.records.configs import Config

LINUX = HostFacts(os="linux", selinux_enforcing=False, pid=4242, subdir="linux-64", glibc="2.36")
MAC = HostFacts(os="osx", selinux_enforcing=False, pid=1, subdir="osx-arm64")
WINDOWS = HostFacts(os="win", selinux_enforcing=False, pid=1, subdir="win-64")
DOCKER = ContainerEngine.from_env({})


@pytest.fixture(autouse=True)
def _no_processes(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("unit tests must not start processes")

    monkeypatch.setattr(subprocess, "Popen", refuse)


def config_of(root: Path, name: str, target: str, cuda: str = "None", stdlib: str = "2.17"):
    path = root / ".ci_support" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"target_platform:\n- {target}\ncuda_compiler_version:\n- {cuda}\n"
        f"c_stdlib_version:\n- '{stdlib}'\n"
    )
    return Config(name, path)


def options_for(root: Path, *argv: str, env: dict[str, str] | None = None):
    """The build options (the engines' input) of a build-locally command line."""
    args = build_parser().parse_args(list(argv))
    return from_args(args, env or {"PATH": "/usr/bin"}, root, interactive=False).build


def test_every_engine_of_the_registry_has_the_same_four_names() -> None:
    for name, engine in registry.ENGINES.items():
        missing = [a for a in ("probe", "plan", "describe", "INSTEAD") if not hasattr(engine, a)]
        assert missing == [], name


# ---------------------------------------------------------------- docker


def test_docker_builds_linux_and_osx_configs_but_not_windows_ones(tmp_path: Path) -> None:
    assert docker.probe(config_of(tmp_path, "linux_64_a", "linux-64"), LINUX) is None
    assert docker.probe(config_of(tmp_path, "osx_64_a", "osx-64"), LINUX) is None
    assert "not win ones" in docker.probe(config_of(tmp_path, "win_64_a", "win-64"), LINUX)


def test_docker_plans_run_docker_build_in_a_labelled_container(tmp_path: Path) -> None:
    config = config_of(tmp_path, "linux_64_a", "linux-64")
    steps = docker.plan(options_for(tmp_path, config.name), config, DOCKER, LINUX)
    assert steps.argv == ("bash", str(tmp_path / ".scripts" / "run_docker_build.sh"))
    assert steps.container == docker.container_name(config.name, LINUX.pid)
    assert LABEL in steps.changes["CONDA_FORGE_DOCKER_RUN_ARGS"].split()
    assert [m.container for m in steps.mounts] == [docker.FEEDSTOCK_MOUNT, docker.RECIPE_MOUNT]
    assert steps.script_writes_marker


# ---------------------------------------------------------------- osx


def test_osx_runs_on_a_mac_and_hands_other_machines_to_the_container(tmp_path: Path) -> None:
    config = config_of(tmp_path, "osx_arm64_a", "osx-arm64")
    assert osx.probe(config, MAC) is None
    assert "not one" in osx.probe(config, LINUX) and osx.INSTEAD == "docker"


def test_osx_plans_run_osx_build_without_a_container(tmp_path: Path) -> None:
    config = config_of(tmp_path, "osx_arm64_a", "osx-arm64")
    steps = osx.plan(options_for(tmp_path, config.name), config, DOCKER, MAC)
    assert steps.argv == ("bash", str(tmp_path / ".scripts" / "run_osx_build.sh"))
    assert steps.container is None and not steps.mounts and not steps.script_writes_marker


# ---------------------------------------------------------------- win


def test_win_builds_only_on_windows(tmp_path: Path) -> None:
    config = config_of(tmp_path, "win_64_a", "win-64")
    assert win.probe(config, WINDOWS) is None
    assert "Windows configs build only on Windows" in win.probe(config, LINUX)
    assert win.INSTEAD is None


def test_win_plans_run_win_build_through_cmd(tmp_path: Path) -> None:
    config = config_of(tmp_path, "win_64_a", "win-64")
    steps = win.plan(options_for(tmp_path, config.name), config, DOCKER, WINDOWS)
    assert steps.argv == ("cmd", "/D", "/Q", "/C", "CALL .scripts\\run_win_build.bat")


# ---------------------------------------------------------------- native


def test_native_refuses_windows_configs_and_windows_machines(tmp_path: Path) -> None:
    linux = config_of(tmp_path, "linux_64_a", "linux-64")
    assert native.probe(linux, LINUX) is None
    assert "--native runs .scripts/build_steps.sh" in native.probe(linux, WINDOWS)
    assert "--native" in native.probe(config_of(tmp_path, "win_64_a", "win-64"), LINUX)


def test_native_plans_build_steps_with_the_ccache_folder(tmp_path: Path) -> None:
    config = config_of(tmp_path, "linux_64_a", "linux-64")
    options = options_for(
        tmp_path, "--engine", "conda-build", "--ccache", str(tmp_path / "cache"), config.name
    )
    steps = native.plan(options, config, DOCKER, LINUX)
    assert steps.argv == ("bash", str(tmp_path / ".scripts" / "build_steps.sh"))
    assert steps.changes["CF_BUILD_NATIVE"] == "1"
    assert steps.changes["CCACHE_DIR"] == str(tmp_path / "cache")


# ---------------------------------------------------------------- embedded


def test_embedded_refuses_a_cuda_config_the_machines_glibc_cannot_install(tmp_path: Path) -> None:
    config = config_of(tmp_path, "linux_64_a", "linux-64", cuda="13.0", stdlib="2.28")
    old = HostFacts(os="linux", selinux_enforcing=False, pid=1, subdir="linux-64", glibc="2.17")
    assert "need glibc >= 2.28 (c_stdlib_version), this machine has 2.17" in embedded.probe(
        config, old
    )
    assert embedded.probe(config, LINUX) is None  # new enough: no refusal


def test_embedded_refuses_a_config_of_another_platform(tmp_path: Path) -> None:
    config = config_of(tmp_path, "linux_aarch64_a", "linux-aarch64")
    why = embedded.probe(config, LINUX)
    assert why.startswith("a linux-aarch64 config, and ") and "only for this machine" in why


def test_embedded_plans_rattler_build_on_the_v1_recipe(tmp_path, monkeypatch) -> None:
    (tmp_path / "recipe").mkdir()
    (tmp_path / "recipe" / "recipe-v1.yaml").write_text("package: {}\n")
    monkeypatch.setattr(embedded, "package_time", lambda root, env: 1700000000)
    config = config_of(tmp_path, "linux_64_a", "linux-64", cuda="12.9")
    options = options_for(tmp_path, "--engine", "rattler-build", config.name)
    steps = embedded.plan(options, config, DOCKER, LINUX)
    assert steps.argv[1:4] == ("-m", embedded.ENGINE_MODULE, "build")
    assert steps.argv[steps.argv.index("--recipe") + 1] == str(
        tmp_path / "recipe" / "recipe-v1.yaml"
    )
    assert steps.argv[-2:] == ("--timestamp", "1700000000")
    assert steps.changes == {
        "RATTLER_CACHE_DIR": str(options.artifacts / "pkg_cache"),
        "CONDA_OVERRIDE_CUDA": "12.9",
    }


# ---------------------------------------------------------------- the registry


def test_a_windows_config_on_linux_is_refused_with_the_win_engines_reason(tmp_path) -> None:
    config = config_of(tmp_path, "win_64_a", "win-64")
    with pytest.raises(UserError, match=r"^win_64_a: Windows configs build only on Windows"):
        registry.select(options_for(tmp_path, config.name), config, LINUX)


def test_a_config_of_no_known_platform_is_refused(tmp_path) -> None:
    config = config_of(tmp_path, "solaris_a", "solaris-64")
    with pytest.raises(UserError, match="cannot tell the platform from the name"):
        registry.select(options_for(tmp_path, config.name), config, LINUX)


def test_the_ladders_choice_wins_over_the_configs_platform(tmp_path) -> None:
    config = config_of(tmp_path, "linux_64_a", "linux-64")
    options = options_for(tmp_path, "--native", config.name)
    embedded_host = HostFacts(**{**LINUX.__dict__, "builder": "rattler-build"})
    assert registry.select(options, config, embedded_host) == "embedded"
    assert registry.select(options, config, LINUX) == "native"
    assert registry.select(options_for(tmp_path, config.name), config, LINUX) == "docker"


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
    assert host_subdir(system, machine) == subdir
