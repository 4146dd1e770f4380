"""``python -m tools emulate``'s machine, without emulating anything: one run per CPU setting
and its report, the host's checks (root, qemu, debootstrap, binfmt_misc) and the rootfs cache.
No test here starts a process."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path, PurePosixPath

import pytest

from tools.emulate import host, install, mounts, report, rootfs, runner
from tools.emulate.arch import ARCHES
from tools.foundation.errors import CommandError, UserError

AARCH64 = ARCHES["aarch64"]


@pytest.fixture(autouse=True)
def no_processes(monkeypatch):
    """Every test here must work without starting a single process."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"a unit test started a process: {args[:1]}")

    monkeypatch.setattr(subprocess, "Popen", refuse)


# --- running and reporting ------------------------------------------------


class RecordingChroot:
    """Stands in for a chroot session: records what would run, answers with canned output."""

    def __init__(
        self,
        stdout: str = "",
        returncode: int = 0,
        raises: Exception | None = None,
        stderr: str = "",
    ):
        self.env = {"PATH": "/usr/bin"}
        self.calls: list[tuple[tuple, dict]] = []
        self._result = subprocess.CompletedProcess([], returncode, stdout, stderr)
        self._raises = raises

    def run(self, *argv, env=None, capture=False, check=True, timeout=None):
        self.calls.append((argv, env))
        if self._raises:
            raise self._raises
        return self._result


def _env() -> install.Environment:
    return install.Environment(key="k", root=PurePosixPath("/opt/emulate/envs/k"), has_prefix=False)


def test_each_run_sets_qemu_cpu_and_puts_the_environment_first_on_path() -> None:
    fake = RecordingChroot(stdout="emulate-capability: SVE256\n")
    result = runner.run_setting(fake, _env(), "max,sve=on,sve256=on", ("python", "-c", "x"))
    ((argv, env),) = fake.calls
    assert argv == ("python", "-c", "x")
    assert env["QEMU_CPU"] == "max,sve=on,sve256=on"
    assert env["PATH"].startswith("/opt/emulate/envs/k/venv/bin:")
    assert (result.passed, result.capability) == (True, "SVE256")


def test_a_nonzero_exit_is_a_failed_setting() -> None:
    result = runner.run_setting(RecordingChroot(returncode=3), _env(), "power10", ("true",))
    assert not result.passed
    assert result.returncode == 3


def test_output_keeps_stdout_then_stderr(capsys) -> None:
    fake = RecordingChroot(stdout="ppc64le\n", stderr="boom\n", returncode=1)
    result = runner.run_setting(fake, _env(), "power9", ("true",))
    assert result.output == "ppc64le\nboom"
    assert "ppc64le\nboom\n" in capsys.readouterr().err


def test_a_timed_out_run_is_an_error_not_a_crash() -> None:
    fake = RecordingChroot(raises=CommandError("chroot: timed out after 5s"))
    result = runner.run_setting(fake, _env(), "power9", ("true",), timeout=5)
    assert (result.passed, result.returncode, result.error) == (
        False,
        None,
        "chroot: timed out after 5s",
    )


def test_capability_is_read_from_the_marker_line() -> None:
    assert runner.parse_capability("noise\nemulate-capability: SVE256\nmore\n") == "SVE256"


def test_capability_with_spaces_is_kept_whole() -> None:
    assert runner.parse_capability("emulate-capability: Z VECTOR\n") == "Z VECTOR"


def test_no_marker_means_no_capability() -> None:
    assert runner.parse_capability("capability SVE256\n") is None


def test_default_test_prints_the_marker_the_runner_parses() -> None:
    code = runner.DEFAULT_TEST_CODE
    assert "torch.backends.cpu.get_cpu_capability()" in code
    assert runner.CAPABILITY_MARKER in code
    compile(code, "<default test>", "exec")


def _result(
    cpu: str,
    returncode: int | None,
    capability: str | None = None,
    output: str = "",
    error: str | None = None,
) -> runner.SettingResult:
    return runner.SettingResult(
        cpu=cpu,
        returncode=returncode,
        capability=capability,
        seconds=12.34,
        output=output,
        error=error,
    )


def _report(*results: runner.SettingResult) -> report.Report:
    return report.Report(
        arch="aarch64", rootfs=Path("/r"), command=("python", "-c", "x"), results=results
    )


def test_table_shows_result_capability_and_time_per_setting() -> None:
    text = report.format_table(
        _report(_result("max,sve=off", 0, "DEFAULT"), _result("max,sve=on,sve256=on", 0, "SVE256"))
    )
    lines = text.splitlines()
    assert lines[1].split() == ["CPU", "SETTING", "RESULT", "CAPABILITY", "TIME"]
    assert lines[2].split() == ["max,sve=off", "pass", "DEFAULT", "12.3s"]
    assert lines[3].split() == ["max,sve=on,sve256=on", "pass", "SVE256", "12.3s"]
    assert lines[-1] == "2 passed, 0 failed"


def test_table_shows_the_output_of_failed_settings() -> None:
    text = report.format_table(
        _report(_result("power10", 1, output="Traceback\nImportError: no numpy\n"))
    )
    assert "--- power10: fail (1)\nTraceback\nImportError: no numpy" in text
    assert text.endswith("0 passed, 1 failed")


def test_json_report_has_one_entry_per_setting() -> None:
    data = json.loads(
        report.to_json(
            _report(_result("power9", 0, None), _result("power10", None, error="timed out"))
        )
    )
    assert data["passed"] is False
    assert [(r["cpu"], r["passed"], r["capability"], r["error"]) for r in data["results"]] == [
        ("power9", True, None, None),
        ("power10", False, None, "timed out"),
    ]
    assert data["results"][0]["seconds"] == 12.34


def test_a_report_without_results_has_not_passed() -> None:
    assert not _report().passed


# --- the host -------------------------------------------------------------


def test_not_root_is_a_one_line_error() -> None:
    with pytest.raises(host.HostError, match=r"emulate needs root .*; run it with sudo"):
        host.require_root(euid=1000)


def test_missing_qemu_names_the_debian_package(tmp_path) -> None:
    with pytest.raises(
        host.HostError,
        match="qemu-aarch64-static is not installed; apt-get install qemu-user-static",
    ):
        host.qemu_registration(AARCH64, binfmt_d=tmp_path)


def test_missing_debootstrap_names_the_debian_package(tmp_path) -> None:
    with pytest.raises(host.HostError, match="apt-get install debootstrap"):
        host.require_debootstrap(path=str(tmp_path))


def _binfmt_d(tmp_path: Path) -> Path:
    interpreter = tmp_path / "qemu-aarch64-static"
    interpreter.write_text("")
    conf = tmp_path / "binfmt.d"
    conf.mkdir()
    (conf / "qemu-aarch64.conf").write_text(
        f":qemu-aarch64:M::\\x7fELF:\\xff\\xff:{interpreter}:OCF\n"
    )
    return conf


def test_unmountable_binfmt_misc_is_a_one_line_error(tmp_path) -> None:
    def refuse(target):
        raise CommandError("mount exited with status 32: permission denied")

    with pytest.raises(host.HostError, match=r"cannot mount binfmt_misc on .*must run privileged"):
        host.ensure_binfmt(
            AARCH64,
            binfmt_misc=tmp_path / "binfmt_misc",
            binfmt_d=_binfmt_d(tmp_path),
            mount=refuse,
        )


def test_registration_without_fix_binary_is_refused(tmp_path) -> None:
    binfmt_misc = tmp_path / "binfmt_misc"
    binfmt_misc.mkdir()
    (binfmt_misc / "register").write_text("")
    (binfmt_misc / "qemu-aarch64").write_text(
        "enabled\ninterpreter /usr/bin/qemu-aarch64\nflags: OC\noffset 0\n"
    )
    with pytest.raises(host.HostError, match="without the F flag"):
        host.ensure_binfmt(AARCH64, binfmt_misc=binfmt_misc, binfmt_d=_binfmt_d(tmp_path))


def test_existing_registration_is_left_alone(tmp_path) -> None:
    binfmt_misc = tmp_path / "binfmt_misc"
    binfmt_misc.mkdir()
    (binfmt_misc / "register").write_text("")
    (binfmt_misc / "qemu-aarch64").write_text(
        "enabled\ninterpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P\nflags: POF\n"
    )
    entry = host.ensure_binfmt(AARCH64, binfmt_misc=binfmt_misc, binfmt_d=_binfmt_d(tmp_path))
    assert entry == host.BinfmtEntry(True, "/usr/libexec/qemu-binfmt/aarch64-binfmt-P", "POF")
    assert (binfmt_misc / "register").read_text() == ""


def test_mounts_under_a_root_are_listed_deepest_first() -> None:
    mountinfo = "\n".join(
        [
            "22 1 0:21 / /proc rw - proc proc rw",
            "90 1 0:50 / /c/root\\040fs/proc rw - proc proc rw",
            "91 1 0:51 / /c/root\\040fs/dev rw - tmpfs emulate-dev rw",
            "92 1 0:52 / /c/root\\040fs2/dev rw - tmpfs other rw",
        ]
    )
    assert mounts.mounts_under(Path("/c/root fs"), mountinfo) == [
        Path("/c/root fs/dev"),
        Path("/c/root fs/proc"),
    ]


# --- the rootfs cache -----------------------------------------------------


def test_a_directory_not_built_by_emulate_is_not_used(tmp_path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("precious")
    with pytest.raises(UserError, match="was not built by emulate"):
        rootfs.load(tmp_path / "mine", AARCH64, "bookworm")


def test_a_rootfs_of_another_arch_is_not_used(tmp_path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / rootfs.STAMP).write_text(
        rootfs.Rootfs(path=tree, arch="ppc64le", suite="bookworm", python="3.11").to_stamp()
    )
    with pytest.raises(UserError, match="holds ppc64le bookworm, not aarch64 bookworm"):
        rootfs.load(tree, AARCH64, "bookworm")


def test_a_finished_rootfs_is_reused(tmp_path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    built = rootfs.Rootfs(path=tree, arch="aarch64", suite="bookworm", python="3.11")
    (tree / rootfs.STAMP).write_text(built.to_stamp())
    assert rootfs.load(tree, AARCH64, "bookworm") == built


def test_no_rootfs_yet_means_build_one(tmp_path) -> None:
    assert rootfs.load(tmp_path / "absent", AARCH64, "bookworm") is None


def test_an_empty_directory_is_where_a_rootfs_gets_built(tmp_path) -> None:
    assert rootfs.load(tmp_path, AARCH64, "bookworm") is None
