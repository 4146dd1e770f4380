"""build-locally's progress lines, the CFEP-03 request and the review's first-error
patterns, without starting any process."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import pytest

from tools.foundation.errors import UserError
from tools.localbuild.engines.watch.progress import Progress
from tools.review.cfep3 import read_sums, request_yaml


@pytest.fixture(autouse=True)
def _no_processes(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("unit tests must not start processes")

    monkeypatch.setattr(subprocess, "Popen", refuse)


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
    from tools.review.why import kind_of

    assert kind_of(line) == kind


def test_why_without_a_recognised_error_shows_the_end_of_the_log() -> None:
    from tools.review.why import TAIL, first_error

    lines = [f"[10:00:{i % 60:02d}] step {i}\n" for i in range(100)]
    found = first_error(lines)
    assert found.kind == "" and [n for n, _ in found.context] == list(range(101 - TAIL, 101))
