"""Bad input to build-locally.py ends in one clear line and an exit code, never a traceback,
a token or a silent success.

Each test runs build-locally.py the way a user does (in a throw-away feedstock,
tests/helpers/fake_engine_feedstock.py) on one damaged or mistaken input, and checks the exit
status and message.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers.bad_input import (
    one_error_line,
)

# ------------------------------------------------------------------ build-locally.py


@pytest.fixture
def feedstock(tmp_path):
    from helpers.fake_engine_feedstock import Feedstock

    return Feedstock(tmp_path)


def _engine_that_prints(tmp_path: Path, text: str) -> Path:
    """A `docker` whose `info` fails printing ``text``, first on PATH."""
    bin_dir = tmp_path / "leaky-bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text(f"#!/bin/sh\necho 'permission denied: {text}' >&2\nexit 1\n")
    docker.chmod(0o755)
    return bin_dir


def test_build_locally_never_prints_a_token_a_failing_engine_printed(feedstock, tmp_path):
    from helpers.fake_engine_feedstock import CPU, TOKEN

    github = "ghp_" + "A1b2C3d4" * 5
    bin_dir = _engine_that_prints(tmp_path, f"{TOKEN} {github}")
    path = f"{bin_dir}:{feedstock.env['PATH']}"
    run = feedstock.run(CPU, "--engine", "docker", BINSTAR_TOKEN=TOKEN, PATH=path)
    assert run.returncode == 2
    assert "permission denied: *** ***" in run.stderr
    assert TOKEN not in run.stderr + run.stdout and github not in run.stderr + run.stdout


def test_the_engine_line_never_prints_a_token_a_failing_engine_printed(feedstock, tmp_path):
    # Without --engine the run goes on to the embedded engine, saying why docker did not do.
    from helpers.e2e_feedstock import without_engines
    from helpers.fake_engine_feedstock import CPU, TOKEN, V1_RECIPE

    (feedstock.root / "recipe" / "recipe-v1.yaml").write_text(V1_RECIPE)
    github = "ghp_" + "A1b2C3d4" * 5
    bin_dir = _engine_that_prints(tmp_path, f"{TOKEN} {github}")
    path = f"{bin_dir}:{without_engines(feedstock.env['PATH'])}"
    run = feedstock.run(CPU, "--dry-run", BINSTAR_TOKEN=TOKEN, PATH=path)
    assert run.returncode == 0, run.stderr
    assert "permission denied: *** ***" in run.stdout.splitlines()[0]
    assert TOKEN not in run.stderr + run.stdout and github not in run.stderr + run.stdout


def test_a_failed_commands_error_never_carries_a_token(monkeypatch):
    from tools.foundation.errors import CommandError
    from tools.foundation.proc import call

    monkeypatch.setenv("ANACONDA_API_TOKEN", "secret-value-42")
    with pytest.raises(CommandError) as excinfo:
        call(
            sys.executable,
            "-c",
            "import sys; sys.exit('denied: secret-value-42')",
            capture=True,
            quiet=True,
        )
    assert "secret-value-42" not in str(excinfo.value)
    assert "denied: ***" in str(excinfo.value)


def test_build_locally_refuses_a_second_run_on_the_same_build_artifacts(feedstock):
    import signal

    from helpers.fake_engine_feedstock import ARM, CPU, INTERRUPT_SAFETY_NET

    first = feedstock.start(CPU, FAKE_BUILD_HANG=CPU)
    try:
        log = feedstock.artifacts / f"{CPU}-log.txt"
        feedstock.wait_until(
            first,
            lambda: log.exists() and "compiling forever" in log.read_text(),
            "the first build never reached its hanging step",
        )
        second, dry = feedstock.run(ARM), feedstock.run(ARM, "--dry-run")
        assert second.returncode == 2
        assert f"another build-locally run (pid {first.pid})" in second.stderr
        assert (dry.returncode, dry.stderr) == (2, second.stderr)  # refused as the run is
        assert not feedstock.marker(ARM).exists() and not feedstock.builds()[1:]
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=INTERRUPT_SAFETY_NET)


def test_prune_keeps_the_work_folder_another_conda_build_made_meanwhile(feedstock):
    from helpers.fake_engine_feedstock import CPU

    neighbour = "zlib_1800000000000"
    run = feedstock.run(CPU, "--prune", FAKE_BUILD_NEIGHBOUR=neighbour)
    assert run.returncode == 0, run.stderr
    assert (feedstock.artifacts / neighbour).is_dir()
    assert not list(feedstock.artifacts.glob("libtorch_*"))


def test_cfep3_request_copies_release_candidates_to_their_label(feedstock):
    from helpers.fake_engine_feedstock import CPU

    config = feedstock.root / ".ci_support" / f"{CPU}.yaml"
    config.write_text(config.read_text() + "channel_targets:\n- conda-forge pytorch_rc\n")
    assert feedstock.run(CPU).returncode == 0
    run = feedstock.review("request", "jdoe/label/cfep03")
    assert run.returncode == 0, run.stderr
    assert "\nto_anaconda_org_label: pytorch_rc\n" in run.stdout


def test_cfep3_request_with_an_empty_channel_names_the_option(feedstock):
    run = feedstock.review("request", "")
    assert run.returncode == 2
    assert "review request ''" in one_error_line(run.stderr)


@pytest.mark.parametrize("value", ["rm", "/bin/rm", "docker-compose"])
def test_build_locally_refuses_a_docker_executable_that_is_no_engine(feedstock, value):
    from helpers.fake_engine_feedstock import CPU

    run = feedstock.run(CPU, DOCKER_EXECUTABLE=value)
    assert run.returncode == 2
    assert f"DOCKER_EXECUTABLE={value}: not docker or podman" in one_error_line(run.stderr)
    assert feedstock.calls() == []


def test_all_dry_run_lists_configs_this_machine_cannot_build_as_skipped(feedstock):
    ci = feedstock.root / ".ci_support"
    (ci / "win_64_cuda_compiler_versionNone.yaml").write_text("target_platform:\n- win-64\n")
    (ci / "osx_arm64_cuda_compiler_versionNone.yaml").write_text("target_platform:\n- osx-arm64\n")
    run = feedstock.run("--all", "--dry-run")
    assert run.returncode == 0, run.stderr
    assert "dry run: 3 config(s)" in run.stdout
    lines = run.stdout.splitlines()
    [win] = [line for line in lines if line.startswith("[-] win-64 ")]  # by label
    [osx] = [line for line in lines if line.startswith("[-] osx-arm64 ")]
    assert "would skip: cannot build on this machine" in win and "Windows" in win
    assert "OSX_SDK_DIR" in osx


def test_all_builds_what_this_machine_can_and_summarises_the_rest_as_skipped(feedstock):
    from helpers.fake_engine_feedstock import CPU

    ci = feedstock.root / ".ci_support"
    (ci / "win_64_cuda_compiler_versionNone.yaml").write_text("target_platform:\n- win-64\n")
    run = feedstock.run("--all")
    assert run.returncode == 0, run.stderr
    configs = feedstock.summary()["configs"]
    assert configs["win_64_cuda_compiler_versionNone"]["status"] == "skipped"
    assert "Windows" in configs["win_64_cuda_compiler_versionNone"]["note"]
    assert configs["win_64_cuda_compiler_versionNone"]["reason"] == "cannot build here (Windows)"
    assert configs[CPU]["status"] == "done"
