"""build-locally.py end to end: safety (tokens, Ctrl-C), user errors and the modes.

The repository's .scripts run through a fake `docker` in a throw-away feedstock
(tests/helpers/fake_engine_feedstock.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers.e2e_feedstock import without_engines
from helpers.fake_engine_feedstock import (
    ARM,
    CPU,
    CUDA,
    FAKE_DOCKER,
    INTERRUPT_SAFETY_NET,
    TOKEN,
    V1_RECIPE,
    Feedstock,
    answer_menu,
)

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="drives bash scripts through a pseudo-terminal (POSIX only)"
)


@pytest.fixture
def feedstock(tmp_path: Path) -> Feedstock:
    return Feedstock(tmp_path)


# ---------------------------------------------------------------- safety


def test_tokens_are_not_forwarded_and_are_redacted_from_logs(feedstock: Feedstock) -> None:
    run = feedstock.run(CPU, BINSTAR_TOKEN=TOKEN, FAKE_BUILD_PRINT=f"leaked {TOKEN} here")
    assert run.returncode == 0, run.stderr
    assert all("BINSTAR_TOKEN" not in call["env"] for call in feedstock.calls())
    log = (feedstock.artifacts / f"{CPU}-log.txt").read_text()
    assert "leaked *** here" in log
    for path in (feedstock.artifacts / f"{CPU}-log.txt", feedstock.artifacts / "summary.json"):
        assert TOKEN not in path.read_text()
    with zipfile.ZipFile(feedstock.artifacts / "log_files.zip") as archive:
        assert all(TOKEN.encode() not in archive.read(n) for n in archive.namelist())
    assert TOKEN not in run.stdout + run.stderr


def test_sigint_stops_the_container_marks_interrupted_and_the_next_run_resumes(
    feedstock: Feedstock,
) -> None:
    proc = feedstock.start(CPU, ARM, FAKE_BUILD_HANG="*aarch64*")
    log = feedstock.artifacts / f"{ARM}-log.txt"
    feedstock.wait_until(
        proc,
        lambda: log.exists() and "compiling forever" in log.read_text(),
        "the build never reached its hanging step",
    )
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=INTERRUPT_SAFETY_NET)
    assert proc.returncode == 130, stderr
    [stop] = feedstock.calls("stop")
    assert stop["argv"][-1] == feedstock.calls("run")[-1]["name"]
    assert "interrupted" in log.read_text()
    assert {k: v["status"] for k, v in feedstock.summary()["configs"].items()} == {
        CPU: "done",
        ARM: "interrupted",
        CUDA: "skipped",  # not selected: every config of the matrix has a record
    }
    assert not feedstock.marker(ARM).exists()
    assert not list((feedstock.state / "containers").iterdir())  # the fake container is gone
    resumed = feedstock.run(CPU, ARM)
    assert resumed.returncode == 0, resumed.stderr
    assert [c["container_env"]["CONFIG"] for c in feedstock.calls("run")] == [CPU, ARM, ARM]
    assert list(
        (feedstock.artifacts / "old-logs").glob(f"{ARM}-log-*.txt")
    )  # the interrupted log is kept


def test_sigint_before_the_container_exists_stops_the_script_and_looks_again(
    feedstock: Feedstock,
) -> None:
    proc = feedstock.start(CPU, FAKE_DOCKER_PULL_HANG="1")
    feedstock.wait_until(proc, lambda: feedstock.calls("pull"), "the script never pulled")
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=INTERRUPT_SAFETY_NET)
    assert proc.returncode == 130, stderr
    assert len(feedstock.calls("stop")) == 2  # no container yet, then the final look
    assert feedstock.calls("run") == []
    assert feedstock.summary()["configs"][CPU]["status"] == "interrupted"


# ---------------------------------------------------------------- user errors and modes


def test_dry_run_prints_everything_and_runs_nothing(feedstock: Feedstock) -> None:
    run = feedstock.run("--all", "--dry-run", BINSTAR_TOKEN=TOKEN)
    assert run.returncode == 0, run.stderr
    for config in (CUDA, CPU, ARM):
        assert f"CONFIG={config}" in run.stdout
    assert "run:     bash " in run.stdout and "run_docker_build.sh" in run.stdout
    assert f"{feedstock.root} -> /home/conda/feedstock_root" in run.stdout
    assert "image:   quay.io/condaforge/linux-anvil-x86_64:alma10" in run.stdout
    assert "UPLOAD_PACKAGES=False" in run.stdout and "withheld: BINSTAR_TOKEN" in run.stdout
    assert TOKEN not in run.stdout
    # the engine is probed (`info`) as the run probes it; nothing is pulled or run
    assert [c["kind"] for c in feedstock.calls()] == ["info"]
    assert not feedstock.artifacts.exists()


def test_the_dry_run_lists_the_image_and_the_channels_the_container_build_downloads(
    feedstock: Feedstock,
) -> None:
    """Issue 43, item 4: the list a person planning a build without internet needs."""
    run = feedstock.run(CPU, "--dry-run")
    assert run.returncode == 0, run.stderr
    block = run.stdout.split("\ndownloads: what the run fetches; ", 1)[1].splitlines()[1:]
    assert block[0] == (
        "  quay.io/condaforge/linux-anvil-x86_64:alma10  (the container image, pulled unless "
        "present)"
    )
    assert any(line.startswith("  https://conda.anaconda.org/conda-forge  (") for line in block)


def test_podman_via_docker_executable(feedstock: Feedstock) -> None:
    run = feedstock.run(CPU, DOCKER_EXECUTABLE="podman")
    assert run.returncode == 0, run.stderr
    assert {c["engine"] for c in feedstock.calls()} == {"podman"}
    [unshare] = feedstock.calls("unshare")
    assert unshare["argv"][1:3] == ["chown", "-R"]
    [call] = feedstock.calls("run")
    volumes = [call["argv"][i + 1] for i, a in enumerate(call["argv"]) if a == "-v"]
    if not Path("/sys/fs/selinux/enforce").exists():
        assert all(v.endswith(":rw,delegated") for v in volumes)


def test_wrong_config_name_lists_the_closest_and_builds_nothing(feedstock: Feedstock) -> None:
    run = feedstock.run("linux_64_cuda_compiler_version13.0")
    assert run.returncode == 2
    line, *closest = run.stderr.strip().splitlines()
    assert line.startswith("error: no config named 'linux_64_cuda_compiler_version13.0'")
    assert len(closest) == 3 and CUDA in [name.split()[-1] for name in closest]
    assert feedstock.calls() == []


def _without_engines() -> str:
    """The test machine's PATH less any real docker, podman or conda-build."""
    return without_engines(os.environ["PATH"])


def test_a_forced_engine_missing_from_path_is_one_clear_line(feedstock: Feedstock) -> None:
    for engine in ("docker", "podman"):
        (feedstock.bin / engine).unlink()
    run = feedstock.run(CPU, "--engine", "docker", PATH=_without_engines())
    assert run.returncode == 2
    [line] = run.stderr.strip().splitlines()
    assert "no container engine" in line and "leave out --engine docker" in line


def test_dry_run_refuses_a_missing_forced_engine_as_the_run_does(feedstock: Feedstock) -> None:
    for engine in ("docker", "podman"):
        (feedstock.bin / engine).unlink()
    args, path = (CPU, "--engine", "docker"), _without_engines()
    real, dry = feedstock.run(*args, PATH=path), feedstock.run(*args, "--dry-run", PATH=path)
    assert (dry.returncode, dry.stderr) == (real.returncode, real.stderr) == (2, real.stderr)
    assert real.stderr.startswith("error: no container engine") and dry.stdout == ""


def test_without_an_engine_on_path_the_dry_run_plans_the_embedded_engine(
    feedstock: Feedstock,
) -> None:
    # Before: "error: no container engine: `docker` is not on PATH ...", exit 2.
    for engine in ("docker", "podman"):
        (feedstock.bin / engine).unlink()
    (feedstock.root / "recipe" / "recipe-v1.yaml").write_text(V1_RECIPE)
    dry = feedstock.run(CPU, "--dry-run", PATH=_without_engines())
    assert dry.returncode == 0, dry.stderr
    first, *plan = dry.stdout.splitlines()
    assert first.startswith("engine: rattler-build") and "`docker` is not on PATH" in first
    assert "no conda-build on PATH" in first
    assert any("-m tools.rattler_build build" in line for line in plan)
    assert not feedstock.artifacts.exists()


def test_dry_run_refuses_a_stopped_daemon_as_the_run_does(feedstock: Feedstock) -> None:
    real = feedstock.run(CPU, "--engine", "docker", FAKE_DOCKER_NO_DAEMON="1")
    dry = feedstock.run(CPU, "--engine", "docker", "--dry-run", FAKE_DOCKER_NO_DAEMON="1")
    assert (dry.returncode, dry.stderr) == (real.returncode, real.stderr) == (2, real.stderr)
    assert "docker info` failed" in dry.stderr and "engine:" not in dry.stdout


def test_a_forced_engine_without_daemon_is_one_clear_line(feedstock: Feedstock) -> None:
    run = feedstock.run(CPU, "--engine", "docker", FAKE_DOCKER_NO_DAEMON="1")
    assert run.returncode == 2
    [line] = run.stderr.strip().splitlines()
    assert "docker info` failed" in line and "leave out --engine docker" in line
    assert feedstock.calls("run") == []


def test_a_stopped_daemon_passes_the_run_to_the_next_engine_and_says_why(
    feedstock: Feedstock,
) -> None:
    (feedstock.root / "recipe" / "recipe-v1.yaml").write_text(V1_RECIPE)
    path = f"{feedstock.bin}{os.pathsep}{_without_engines()}"
    dry = feedstock.run(CPU, "--dry-run", FAKE_DOCKER_NO_DAEMON="1", PATH=path)
    assert dry.returncode == 0, dry.stderr
    first = dry.stdout.splitlines()[0]
    assert first.startswith("engine: rattler-build") and "docker info` failed" in first
    assert feedstock.calls("run") == []


def test_native_without_conda_build_says_how_to_get_it(feedstock: Feedstock) -> None:
    env_path = f"{feedstock.bin}{os.pathsep}/usr/bin{os.pathsep}/bin"
    run = feedstock.run(CPU, "--native", PATH=env_path)
    assert run.returncode == 2
    assert "environment.yml" in run.stderr


def test_native_runs_build_steps_with_the_local_conda_build(feedstock: Feedstock) -> None:
    tools = FAKE_DOCKER.parent / "container_bin"
    run = feedstock.run(CPU, "--native", PATH=f"{tools}{os.pathsep}{os.environ['PATH']}")
    assert run.returncode == 0, run.stderr
    assert feedstock.calls() == []
    [build] = feedstock.builds()
    assert build["env"]["CONDARC"] == str(feedstock.artifacts / ".condarc-native")
    assert not (feedstock.state / "micromamba.txt").exists()  # nothing installed natively
    assert feedstock.marker(CPU).exists()


def test_debug_sets_up_the_build_with_conda_debug_and_the_output_id(feedstock: Feedstock) -> None:
    run = feedstock.run(CPU, "--debug", "--output-id", "pytorch")
    assert run.returncode == 0, run.stderr
    [call] = feedstock.calls("run")
    assert call["container_env"]["BUILD_WITH_CONDA_DEBUG"] == "1"
    assert "--rm" not in call["argv"]  # the container stays for poking around
    debug = (feedstock.state / "conda.txt").read_text().split()
    assert debug[0] == "debug" and debug[debug.index("--output-id") + 1] == "pytorch"
    assert feedstock.builds() == [] and not feedstock.marker(CPU).exists()


def test_several_configs_without_a_terminal_need_names_or_all(feedstock: Feedstock) -> None:
    run = feedstock.run()
    assert run.returncode == 2 and "--all" in run.stderr


def test_conda_smithy_style_scripts_work_through_the_same_interface(feedstock: Feedstock) -> None:
    # Any run_docker_build.sh that honours the shared contract works: this one only passes
    # CONFIG through, as a freshly rerendered script would, and the engine does the rest.
    script = feedstock.root / ".scripts" / "run_docker_build.sh"
    script.write_text(
        "#!/usr/bin/env bash\nset -euo pipefail\n"
        "${DOCKER_EXECUTABLE:-docker} run ${CONDA_FORGE_DOCKER_RUN_ARGS} "
        '-v "$(pwd):/home/conda/feedstock_root:rw,z" -e CONFIG -e UPLOAD_PACKAGES '
        "quay.io/condaforge/linux-anvil-comp7 bash\n"
    )
    run = feedstock.run(CPU, FAKE_DOCKER_MODE="simulate")
    assert run.returncode == 0, run.stderr
    [call] = feedstock.calls("run")
    assert call["container_env"]["UPLOAD_PACKAGES"] == "False"
    assert "simulated-1.0-" in (feedstock.artifacts / "SHA256SUMS").read_text()


def test_no_config_on_a_terminal_offers_conda_smithys_numbered_menu(feedstock: Feedstock) -> None:
    returncode, stdout, stderr = answer_menu(feedstock, b"2\n")
    assert returncode == 0, stderr
    assert f"  1. linux-64 cuda12.9  {CUDA}\n" in stdout
    assert f"  2. linux-64 cpu       {CPU}\n" in stdout
    assert f"  3. linux-aarch64 cpu  {ARM}\n" in stdout
    assert [c["container_env"]["CONFIG"] for c in feedstock.calls("run")] == [CPU]


def test_list_shows_the_real_ci_support_configs(repo_root: Path) -> None:
    real = sorted(p.stem for p in (repo_root / ".ci_support").glob("*.yaml"))
    if not real:
        pytest.skip(".ci_support/ holds no configs yet (python -m tools matrix --write makes them)")
    result = subprocess.run(
        [sys.executable, str(repo_root / "build-locally.py"), "--list"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert [line.split()[-1] for line in result.stdout.splitlines()] == real
