"""Bad input ends in one clear line and an exit code, never a traceback or a silent success:
checks, drift, matrix and emulate.

Each test runs a command the way a user types it (``python -m tools ...`` through its entry
point, in process) on one damaged or mistaken input, and checks the exit status and message.
"""

from __future__ import annotations

import io
import json
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from conda_package_streaming.create import conda_builder
from helpers.bad_input import (
    LINUX_CONFIG,
    OTHER_PLATFORM,
    incompressible_text,
    one_error_line,
    run_tool,
    tiny_conda,
    zero_middle,
)

# ------------------------------------------------------------------ check: damaged archives


def test_check_of_a_wheel_with_damaged_zip_data_is_one_line_and_exit_2(tmp_path, capsys):
    wheel = tmp_path / "torch-2.13.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("torch/a.txt", incompressible_text(200_000))
        archive.writestr("torch/b.txt", incompressible_text(200_000, seed=2))
    zero_middle(wheel)
    code, _, err = run_tool(capsys, "check", str(wheel))
    assert code == 2
    assert "not a readable wheel" in one_error_line(err)


def test_check_of_a_conda_with_a_damaged_zstd_payload_is_one_line_and_exit_2(tmp_path, capsys):
    pkg = tiny_conda(
        tmp_path,
        "libtorch",
        "cpu_generic_h1234567_0",
        {"lib/a.txt": incompressible_text(200_000), "lib/b.txt": incompressible_text(200_000, 2)},
    )
    zero_middle(pkg)
    code, _, err = run_tool(capsys, "check", str(pkg))
    assert code == 2
    assert "not a readable conda package" in one_error_line(err)


# ------------------------------------------------------------------ check: against a config


def _linux_elf_package(tmp_path: Path, name: str) -> Path:
    return tiny_conda(
        tmp_path,
        name,
        "cpu_generic_h1234567_0",
        {"lib/libx.so": Path(sys.executable).resolve().read_bytes()},
    )


def test_check_refuses_a_linux_package_against_another_platforms_config(tmp_path, capsys):
    if OTHER_PLATFORM is None:
        pytest.skip(".ci_support holds no config for another platform than linux-64")
    pkg = _linux_elf_package(tmp_path, "libtorch")
    code, out, err = run_tool(capsys, "check", str(pkg), "--config", OTHER_PLATFORM.name)
    assert code == 2
    line = one_error_line(err)
    assert "built for linux-64" in line and f"builds {OTHER_PLATFORM.platform}" in line
    assert "GLIBC_12" not in out


def test_check_fails_a_package_that_is_not_an_output_of_the_config(tmp_path, capsys):
    pkg = _linux_elf_package(tmp_path, "not-torch")
    code, out, _ = run_tool(capsys, "check", "--json", str(pkg), "--config", LINUX_CONFIG)
    assert code == 1
    failures = [f for f in json.loads(out) if f["check"] == "metadata.output"]
    assert [f["status"] for f in failures] == ["fail"]
    assert "not-torch is not an output" in failures[0]["detail"]


# ------------------------------------------------------------------ check: installed prefixes


def _prefix(tmp_path: Path, name: str, files: list[str]) -> Path:
    prefix = tmp_path / "env"
    (prefix / "conda-meta").mkdir(parents=True)
    record = {
        "name": name,
        "version": "2.13.0",
        "build": "cpu_generic_h1234567_0",
        "subdir": "linux-64",
        "depends": [],
        "files": files,
    }
    (prefix / "conda-meta" / f"{name}-2.13.0-cpu_generic_h1234567_0.json").write_text(
        json.dumps(record)
    )
    return prefix


def test_check_of_a_prefix_missing_the_files_its_record_lists_fails(tmp_path, capsys):
    prefix = _prefix(tmp_path, "libtorch", ["lib/libtorch.so", "lib/libc10.so"])
    code, out, _ = run_tool(capsys, "check", "--json", str(prefix))
    assert code == 1
    failures = [f for f in json.loads(out) if f["status"] == "fail"]
    assert [f["check"] for f in failures] == ["prefix.files"]
    assert "2 of 2 files" in failures[0]["detail"]


def test_check_of_a_prefix_without_this_feedstocks_packages_is_exit_2(tmp_path, capsys):
    prefix = _prefix(tmp_path, "zlib", [])
    code, _, err = run_tool(capsys, "check", str(prefix))
    assert code == 2
    assert "nothing to check" in one_error_line(err)


# ------------------------------------------------------------------ drift, matrix: ignored options


def test_drift_with_an_output_no_configuration_builds_is_exit_2(tmp_path, capsys):
    wheel = tmp_path / "torch-2.13.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(
            "torch-2.13.0.dist-info/METADATA",
            "Metadata-Version: 2.4\nName: torch\nVersion: 2.13.0\nRequires-Dist: sympy>=1.13.3\n",
        )
    code, out, err = run_tool(
        capsys,
        "drift",
        "--wheel",
        str(wheel),
        "--offline",
        "--output",
        "nonexist",
        "--config",
        LINUX_CONFIG,
    )
    assert code == 2
    assert "--output nonexist: no configuration builds" in one_error_line(err)
    assert out == ""


def test_matrix_diff_without_check_is_refused(capsys):
    code, out, err = run_tool(capsys, "matrix", "--diff")
    assert code == 2
    assert "--check --diff" in one_error_line(err)
    assert out == ""


# ------------------------------------------------------------------ emulate: linking stays inside


def conda_with_links(
    out: Path, name: str, files: dict[str, bytes], links: dict[str, str], paths: list[str]
) -> Path:
    """A linux-aarch64 .conda whose paths.json lists ``paths`` (which may lie about members)."""
    stem = f"{name}-1.0-0"
    index = {"name": name, "version": "1.0", "build": "0", "subdir": "linux-aarch64"}
    paths_json = {"paths": [{"_path": p, "path_type": "hardlink"} for p in paths]}
    with conda_builder(stem, out, compression_level=1) as tar:
        for member, data in {
            "info/index.json": json.dumps(index).encode(),
            "info/paths.json": json.dumps(paths_json).encode(),
            **files,
        }.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for member, target in links.items():
            info = tarfile.TarInfo(member)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tar.addfile(info)
    return out / f"{stem}.conda"


def link_into(tmp_path: Path, package: Path) -> Path:
    from pathlib import PurePosixPath

    from tools.emulate import install

    prefix = tmp_path / "rootfs" / "opt" / "env" / "prefix"
    install.link_conda_package(
        package,
        prefix,
        PurePosixPath("/opt/env/prefix"),
        tmp_path / "rootfs" / "opt" / "env" / "pkgs",
        python="3.11",
    )
    return prefix


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


@pytest.mark.parametrize("where", ["absolute", "dotdot"])
def test_emulate_refuses_a_paths_json_entry_outside_the_prefix(tmp_path, where):
    from tools.foundation.errors import UserError

    outside = tmp_path / "host" / "pwned"
    entry = str(outside) if where == "absolute" else "../../../../host/pwned"
    package = conda_with_links(tmp_path, "evil", {"lib/ok.txt": b"ok"}, {}, ["lib/ok.txt", entry])
    # What the entry names from the unpacked package's side exists (inside the rootfs), so
    # following the entry would copy it out of the rootfs.
    (tmp_path / "rootfs" / "host").mkdir(parents=True)
    (tmp_path / "rootfs" / "host" / "pwned").write_text("x")
    with pytest.raises(UserError, match=r"evil-1\.0-0\.conda: refused"):
        link_into(tmp_path, package)
    assert not outside.exists()
    assert not (tmp_path / "host").exists()


def test_emulate_refuses_a_member_linking_out_of_the_package(tmp_path):
    from tools.foundation.errors import UserError

    package = conda_with_links(
        tmp_path, "evil", {}, {"lib": "../../../../host"}, ["lib", "lib/pwned"]
    )
    (tmp_path / "host").mkdir()
    with pytest.raises(UserError, match=r"refused, symlink to '\.\./\.\./\.\./\.\./host' escapes"):
        link_into(tmp_path, package)
    assert files_under(tmp_path / "host") == set()


def test_emulate_refuses_a_write_through_a_link_an_earlier_package_placed(tmp_path):
    """Each package alone stays inside; together ``d -> .`` and ``d/up -> ..`` climb out."""
    from tools.foundation.errors import UserError

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = conda_with_links(tmp_path / "a", "first", {}, {"d": "."}, ["d"])
    second = conda_with_links(
        tmp_path / "b", "second", {"up/pwned": b"x"}, {"d/up": ".."}, ["d/up", "up/pwned"]
    )
    prefix = link_into(tmp_path, first)
    with pytest.raises(UserError, match=r"second-1\.0-0\.conda: refused"):
        link_into(tmp_path, second)
    assert files_under(tmp_path / "rootfs" / "opt" / "env") <= {"prefix", "prefix/d", "pkgs"}
    assert (prefix / "d").is_symlink()
