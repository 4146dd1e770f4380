"""Reading packages for the checks: member safety, build-machine paths in text files, tiny real
.conda and .tar.bz2 archives, damaged input, and ELF facts read from a real ELF file.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from conda_package_streaming.create import conda_builder
from helpers.check_records import fails, statuses

from tools.check import load, run_checks
from tools.check.archive import build_prefix_strings, unsafe_reason
from tools.check.readers.elf import read_elf

REPO = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ archive members


@pytest.mark.parametrize(
    ("name", "kind", "target"),
    [
        ("/etc/passwd", "file", None),
        ("lib/../../evil", "file", None),
        ("../evil", "file", None),
        ("lib/link", "symlink", "/usr/lib/libc.so.6"),
        ("lib/link", "symlink", "../../outside"),
        ("lib/hard", "hardlink", "../outside"),
    ],
)
def test_members_leaving_the_package_are_unsafe(name, kind, target):
    assert unsafe_reason(name, kind, target) is not None


@pytest.mark.parametrize(
    ("name", "kind", "target"),
    [
        ("lib/libc10.so", "file", None),
        ("lib/python3.12/site-packages/torch/lib/libc10.so", "symlink", "../../../../libc10.so"),
        ("lib/libfoo.so", "symlink", "libfoo.so.1"),
    ],
)
def test_members_inside_the_package_are_safe(name, kind, target):
    assert unsafe_reason(name, kind, target) is None


def _tiny_conda(
    out: Path,
    members: dict[str, bytes],
    name="tiny",
    build="h1234567_0",
    paths_json: dict | None = None,
) -> Path:
    stem = f"{name}-1.0-{build}"
    with conda_builder(stem, out, compression_level=1) as tar:
        index = {
            "name": name,
            "version": "1.0",
            "build": build,
            "build_number": 0,
            "subdir": "linux-64",
            "depends": [],
        }
        extra = {"info/index.json": json.dumps(index).encode()}
        if paths_json is not None:
            extra["info/paths.json"] = json.dumps(paths_json).encode()
        for path, data in {**extra, **members}.items():
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out / f"{stem}.conda"


def test_leftover_build_env_path_in_a_text_file_fails(tmp_path):
    pkg = _tiny_conda(
        tmp_path,
        {"bin/tool": b"#!/home/conda/feedstock_root/build_artifacts/x/_build_env/bin/python\n"},
    )
    failing = fails(run_checks(load([pkg])), "layout.build-prefix")
    assert [f.path.split(":", 1)[1] for f in failing] == ["bin/tool"]
    assert "_build_env/bin/python" in failing[0].detail


def test_host_prefix_placeholder_declared_in_paths_json_is_allowed(tmp_path):
    placeholder = "/home/conda/feedstock_root/build_artifacts/x/_h_env_placehold_placehold"
    pkg = _tiny_conda(
        tmp_path,
        {"share/cmake/Foo/FooConfig.cmake": f'set(FOO_ROOT "{placeholder}/lib")\n'.encode()},
        paths_json={
            "paths": [
                {
                    "_path": "share/cmake/Foo/FooConfig.cmake",
                    "path_type": "hardlink",
                    "prefix_placeholder": placeholder,
                    "file_mode": "text",
                }
            ]
        },
    )
    assert statuses(run_checks(load([pkg])), "layout.build-prefix") == ["pass"]


def test_build_prefix_scan_finds_whole_paths_only_when_a_marker_is_present():
    assert build_prefix_strings(b"plain text /usr/lib/libz.so\n") == ()
    assert build_prefix_strings(b'x="/opt/conda/conda-bld/work/foo.h";') == (
        "/opt/conda/conda-bld/work/foo.h",
    )


def test_corrupt_archive_is_unusable_input_with_a_one_line_error(tmp_path):
    bad = tmp_path / "broken-1.0-h0_0.conda"
    bad.write_bytes(b"not a zip at all")
    result = subprocess.run(
        [sys.executable, "-m", "tools", "check", str(bad)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {bad}: not a readable conda package")
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_directory_without_packages_is_unusable_input(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "tools", "check", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "holds no .conda or .tar.bz2 packages" in result.stderr


# ------------------------------------------------------------------ ELF reading


def test_reading_a_real_elf_reports_needed_libraries_and_glibc_versions():
    interpreter = Path(sys.executable).resolve()
    with interpreter.open("rb") as stream:
        info = read_elf(stream)
    assert any(n.startswith(("libc.so", "libpython")) for n in info.needed)
    assert any(v.startswith("GLIBC_2.") for v in info.required_versions)


def test_truncated_elf_is_a_value_error(tmp_path):
    truncated = tmp_path / "libbroken.so"
    truncated.write_bytes(Path(sys.executable).resolve().read_bytes()[:200])
    with truncated.open("rb") as stream, pytest.raises(ValueError, match="unreadable ELF"):
        read_elf(stream)


def test_tar_bz2_packages_are_read_like_conda_ones(tmp_path):
    from conda_package_handling import api as cph

    conda = _tiny_conda(tmp_path, {"lib/escape": b""})
    (tmp_path / "bz2").mkdir()
    cph.transmute(str(conda), ".tar.bz2", out_folder=str(tmp_path / "bz2"))
    (bz2,) = (tmp_path / "bz2").glob("*.tar.bz2")
    (read,) = load([bz2])
    assert (read.name, [m.path for m in read.members]) == ("tiny", ["lib/escape"])
