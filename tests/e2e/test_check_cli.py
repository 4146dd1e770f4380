"""``python -m tools check`` from the command line: --baseline, --only, --status, directory
search, and the report's grouping, words and colour.

The packages are small and real: a shared library of this Python's own standard library
(an ELF file), given a build-machine RUNPATH with patchelf where a test needs a problem,
packed into .conda files with conda-package-streaming and into a wheel with zipfile.
"""

from __future__ import annotations

import io
import json
import os
import pty
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from conda_package_streaming.create import conda_builder
from helpers.cli import run_tools
from helpers.elf_module import small_elf

ROOT = Path(__file__).resolve().parents[2]
WHEEL_NAME = "torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl"
BAD_RUNPATH = "/opt/intel/oneapi/mkl/lib/intel64"


@pytest.fixture(scope="module")
def libraries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """``clean`` and ``leaky`` (absolute RUNPATH) copies of one small shared library."""
    if shutil.which("patchelf") is None:
        pytest.skip("patchelf is not installed (requirements-test.txt)")
    folder = tmp_path_factory.mktemp("elves")
    clean = folder / "clean.so"
    shutil.copyfile(small_elf(), clean)
    subprocess.run(["patchelf", "--remove-rpath", str(clean)], check=True)
    leaky = folder / "leaky.so"
    shutil.copyfile(clean, leaky)
    subprocess.run(["patchelf", "--set-rpath", f"$ORIGIN:{BAD_RUNPATH}", str(leaky)], check=True)
    return {"clean": clean.read_bytes(), "leaky": leaky.read_bytes()}


def _conda(out: Path, name: str, files: dict[str, bytes], subdir: str = "linux-64") -> Path:
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{name}-2.13.0-cpu_generic_h0c0ffee_0"
    index = {
        "name": name,
        "version": "2.13.0",
        "build": "cpu_generic_h0c0ffee_0",
        "build_number": 0,
        "subdir": subdir,
        "depends": [],
    }
    with conda_builder(stem, out, compression_level=1) as tar:
        for member, data in {"info/index.json": json.dumps(index).encode(), **files}.items():
            info = tarfile.TarInfo(member)
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
    return out / f"{stem}.conda"


def _wheel(out: Path, files: dict[str, bytes]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / WHEEL_NAME
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in files.items():
            archive.writestr(member, data)
    return path


def _check(*args: str | Path, env: dict[str, str] | None = None):
    return run_tools("check", *args, env=env)


def _fails(result) -> list[str]:
    return [f["path"] for f in json.loads(result.stdout) if f["status"] == "fail"]


# ------------------------------------------------------------------ --baseline


def test_baseline_leaves_out_a_problem_the_wheel_has_for_the_corresponding_file(
    libraries, tmp_path
) -> None:
    ours = _conda(tmp_path, "libtorch", {"lib/libfoo.so": libraries["leaky"]})
    wheel = _wheel(tmp_path, {"torch/lib/libfoo.so": libraries["leaky"]})
    alone = _check("--only", "elf.runpath", ours)
    assert alone.returncode == 1 and BAD_RUNPATH in alone.stdout
    compared = _check("--only", "elf.runpath", "--baseline", wheel, ours)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert BAD_RUNPATH not in compared.stdout
    assert f"baseline: 1 finding(s) left out because {wheel} has them too" in compared.stdout


def test_baseline_matches_site_packages_torch_with_the_wheels_torch(libraries, tmp_path) -> None:
    site = "lib/python3.11/site-packages/torch/bin/test_api"
    ours = _conda(tmp_path, "pytorch-tests", {site: libraries["leaky"]})
    wheel = _wheel(tmp_path, {"torch/bin/test_api": libraries["leaky"]})
    result = _check("--json", "--only", "elf.runpath", "--baseline", wheel, ours)
    assert result.returncode == 0, result.stdout + result.stderr
    assert _fails(result) == []


def test_baseline_keeps_a_problem_the_wheel_does_not_have(libraries, tmp_path) -> None:
    leaky, clean = libraries["leaky"], libraries["clean"]
    ours = _conda(tmp_path, "libtorch", {"lib/libfoo.so": leaky, "lib/libbar.so": leaky})
    wheel = _wheel(tmp_path, {"torch/lib/libfoo.so": leaky, "torch/lib/libbar.so": clean})
    result = _check("--json", "--only", "elf.runpath", "--baseline", wheel, ours)
    assert result.returncode == 1
    assert _fails(result) == [f"{ours.name}:lib/libbar.so"]


def test_baseline_problem_our_package_does_not_have_is_reported_fixed(libraries, tmp_path) -> None:
    ours = _conda(tmp_path, "libtorch", {"lib/libfoo.so": libraries["clean"]})
    wheel = _wheel(tmp_path, {"torch/lib/libfoo.so": libraries["leaky"]})
    result = _check("--json", "--only", "elf.runpath", "--baseline", wheel, ours)
    assert result.returncode == 0, result.stderr
    fixed = [f for f in json.loads(result.stdout) if f["detail"].startswith("fixed:")]
    assert [(f["status"], f["path"]) for f in fixed] == [("pass", f"{ours.name}:lib/libfoo.so")]
    assert f"{WHEEL_NAME}:torch/lib/libfoo.so" in fixed[0]["detail"]


# ------------------------------------------------------------------ --only, --status


def test_only_with_an_unknown_check_names_the_closest(tmp_path) -> None:
    result = _check("--only", "elf.rpath", tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith(
        "error: --only elf.rpath: no such check; the closest are elf.runpath"
    )
    assert result.stderr.count("\n") == 1


def test_only_a_family_runs_every_check_of_it_and_nothing_else(libraries, tmp_path) -> None:
    ours = _conda(tmp_path, "libtorch", {"lib/libfoo.so": libraries["clean"]})
    result = _check("--json", "--only", "elf", ours)
    checks = {f["check"] for f in json.loads(result.stdout)}
    assert {"elf.machine", "elf.runpath", "elf.needed"} <= checks
    assert all(check.startswith("elf.") for check in checks)


def test_status_filters_what_is_shown_but_a_failure_still_exits_1(libraries, tmp_path) -> None:
    ours = _conda(tmp_path, "libtorch", {"lib/libfoo.so": libraries["leaky"]})
    result = _check("--json", "--status", "pass", ours)
    assert result.returncode == 1
    statuses = {f["status"] for f in json.loads(result.stdout)}
    assert statuses == {"pass"}


# ------------------------------------------------------------------ directories


def test_build_artifacts_is_searched_through_its_channel_folders_not_its_caches(
    libraries, tmp_path
) -> None:
    artifacts = tmp_path / "build_artifacts"
    built = [
        _conda(artifacts / "linux-64", "libtorch", {"lib/libfoo.so": libraries["clean"]}),
        _conda(artifacts / "noarch", "pytorch-meta", {"share/x.txt": b"x\n"}, subdir="noarch"),
    ]
    (artifacts / "pkg_cache").mkdir()
    (artifacts / "pkg_cache" / "cuda-cudart-12.9.0-0.conda").write_bytes(b"not a package")
    (artifacts / "libtorch_1700000000" / "work").mkdir(parents=True)
    (artifacts / "libtorch_1700000000" / "work" / "stale.conda").write_bytes(b"no")
    result = _check("--json", "--only", "archive.member", artifacts)
    assert result.returncode == 0, result.stderr
    assert sorted(f["path"] for f in json.loads(result.stdout)) == sorted(p.name for p in built)


def test_a_directory_without_packages_says_where_it_looked(tmp_path) -> None:
    (tmp_path / "pkg_cache").mkdir()
    (tmp_path / "pkg_cache" / "dep-1.0-0.conda").write_bytes(b"dependency")
    result = _check(tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {tmp_path}: holds no .conda or .tar.bz2 packages")


# ------------------------------------------------------------------ the report


def test_report_groups_findings_by_check_with_counts_in_the_json_words(libraries, tmp_path) -> None:
    leaky = _conda(tmp_path / "a", "libtorch", {"lib/libfoo.so": libraries["leaky"]})
    clean = _conda(tmp_path / "b", "libtorch-extras", {"lib/libbar.so": libraries["clean"]})
    text = _check("--only", "elf.runpath,elf.machine", leaky, clean).stdout.splitlines()
    assert text[0] == "elf.runpath: 1 fail, 1 pass"
    assert text[1] == f"  fail  {leaky.name}:lib/libfoo.so"
    assert text[3] == f"  pass  {clean.name}"
    assert text[5] == "elf.machine: 2 pass"
    assert text[-1] == "summary: 1 fail, 0 warn, 3 pass"
    words = {line.split()[0] for line in text if line.startswith("  ") and line[2] != " "}
    assert words == {"fail", "pass"}


def test_more_rows_than_shown_are_counted_inside_their_group(libraries, tmp_path) -> None:
    files = {f"lib/lib{i:02d}.so": libraries["leaky"] for i in range(12)}
    ours = _conda(tmp_path, "libtorch", files)
    text = _check("--only", "elf.runpath,elf.machine", ours).stdout.splitlines()
    more = text.index("  fail  ... and 2 more fail (--json lists all)")
    assert text[0] == "elf.runpath: 12 fail"
    assert more == 21 and text[more + 1] == "elf.machine: 1 pass"


def _on_a_terminal(*args: str | Path, env: dict[str, str]) -> str:
    """Run check with stdout on a pseudo-terminal, as a person at a shell would."""
    leader, follower = pty.openpty()
    try:
        subprocess.run(
            [sys.executable, "-m", "tools", "check", *map(str, args)],
            cwd=ROOT,
            stdout=follower,
            stderr=subprocess.DEVNULL,
            env=env,
            timeout=300,
            check=False,
        )
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal has no writer left
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks).decode()
    finally:
        os.close(leader)


def test_colour_only_on_a_terminal_and_never_with_no_color(libraries, tmp_path) -> None:
    ours = _conda(tmp_path, "libtorch", {"lib/libfoo.so": libraries["leaky"]})
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | {"TERM": "xterm"}
    assert "\033[1;31mfail\033[0m" in _on_a_terminal("--only", "elf.runpath", ours, env=env)
    plain = _on_a_terminal("--only", "elf.runpath", ours, env=env | {"NO_COLOR": "1"})
    assert "fail" in plain and "\033[" not in plain
    piped = _check("--only", "elf.runpath", ours, env=env)
    assert "fail" in piped.stdout and "\033[" not in piped.stdout


def test_status_filter_is_said_in_the_summary_which_counts_every_finding(
    libraries, tmp_path
) -> None:
    ours = _conda(tmp_path, "libtorch", {"lib/libfoo.so": libraries["leaky"]})
    result = _check("--only", "elf.runpath", "--status", "warn", ours)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0] == "no warn findings"
    assert lines[-1] == (
        "summary: 1 fail, 0 warn, 0 pass (--status warn shows 0 of these 1 findings; "
        "it filters what is shown, not what is counted)"
    )


def test_exit_1_counts_failed_findings_of_how_many_checks(libraries, tmp_path) -> None:
    files = {f"lib/lib{i:02d}.so": libraries["leaky"] for i in range(12)}
    ours = _conda(tmp_path, "libtorch", files)
    result = _check("--only", "elf.runpath,elf.machine", ours)
    assert result.returncode == 1
    assert "12 findings of 1 check failed: elf.runpath" in result.stderr.splitlines()[-1]
    assert "check(s)" not in result.stderr
