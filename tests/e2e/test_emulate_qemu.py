"""``python -m tools emulate`` for real: an aarch64 PyTorch wheel under QEMU, per CPU setting.

Needs root, binfmt_misc and Debian's qemu-user-static and debootstrap; on CI
(root, CI=true) the fixture installs the two packages.  The rootfs and the
environment are cached outside the repository, so only the first run on a
machine pays for debootstrap (about 3 minutes) and the pip install.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.cache import CacheError, pip_download
from helpers.debian import apt_install

from tools.emulate import host, rootfs
from tools.emulate.arch import ARCHES
from tools.emulate.mounts import MOUNTINFO, mounts_under

pytestmark = [pytest.mark.slow, pytest.mark.qemu]

REPO_ROOT = Path(__file__).resolve().parents[2]
# The newest CPU-only aarch64 torch on PyPI is 2.10; 2.9.1 (about 100 MB) is
# the one this machine's facts were established with.  cp311 matches the
# Python of the bookworm rootfs.
TORCH_AARCH64 = "torch==2.9.1"
DEBIAN_PACKAGES = ("qemu-user-static", "debootstrap")
SVE_OFF, SVE256 = "max,sve=off", "max,sve=on,sve256=on"
PPC64LE_OPT_IN = "PYTORCH_FEEDSTOCK_TEST_PPC64LE"


@pytest.fixture(scope="session")
def qemu_aarch64() -> None:
    """Skip unless this machine can run aarch64 code under QEMU (set it up on CI)."""
    if os.geteuid() != 0:
        pytest.skip("emulate needs root (mount, chroot, binfmt_misc)")
    missing = [
        name
        for name, found in (
            ("qemu-user-static", (host.BINFMT_D / "qemu-aarch64.conf").is_file()),
            ("debootstrap", shutil.which("debootstrap", path=host.SBIN_PATH) is not None),
        )
        if not found
    ]
    if missing and os.environ.get("CI") == "true":
        apt_install(*DEBIAN_PACKAGES)
    elif missing:
        pytest.skip(f"apt-get install {' '.join(missing)} to run the QEMU tests")
    try:
        host.ensure_binfmt(ARCHES["aarch64"])
    except host.HostError as exc:
        pytest.skip(f"no binfmt_misc for QEMU: {exc}")


@pytest.fixture(scope="session")
def torch_aarch64_wheel(qemu_aarch64, tests_cache_dir: Path) -> Path:
    try:
        return pip_download(
            tests_cache_dir / "wheels-aarch64",
            "torch-2.9.1-cp311-*aarch64.whl",
            [
                TORCH_AARCH64,
                *("--no-deps", "--only-binary=:all:", "--platform", "manylinux_2_28_aarch64"),
                *("--python-version", "3.11", "--implementation", "cp", "--abi", "cp311"),
            ],
            timeout=1200,
        )
    except CacheError as error:
        pytest.skip(f"for aarch64: {error}")


@pytest.fixture(scope="session")
def rootfs_dir(tests_cache_dir: Path) -> Path:
    return tests_cache_dir / "rootfs-arm64"


def _mounts_left(rootfs_dir: Path) -> list[Path]:
    # Under the rootfs lock: another test session on this machine may be
    # mid-run on the same cached rootfs, with its mounts rightly in place.
    with rootfs.locked(rootfs_dir):
        return mounts_under(rootfs_dir.resolve(), MOUNTINFO.read_text())


def _emulate(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools", "emulate", *map(str, args)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )


@pytest.fixture(scope="session")
def torch_run(torch_aarch64_wheel: Path, rootfs_dir: Path) -> dict:
    """One real run with SVE off and SVE at 256 bits; --keep makes re-runs fast."""
    result = _emulate(
        "--arch",
        "aarch64",
        "--cpu",
        SVE_OFF,
        "--cpu",
        SVE256,
        "--rootfs",
        rootfs_dir,
        "--keep",
        "--json",
        torch_aarch64_wheel,
    )
    assert result.returncode == 0, result.stdout + result.stderr[-4000:]
    return json.loads(result.stdout)


def test_torch_sees_sve256_only_when_qemu_offers_256_bit_sve(torch_run) -> None:
    report = torch_run
    capabilities = {r["cpu"]: r["capability"] for r in report["results"]}
    assert capabilities == {SVE_OFF: "DEFAULT", SVE256: "SVE256"}


def test_every_setting_passes_the_matmul_check(torch_run) -> None:
    report = torch_run
    assert report["passed"]
    assert all("matmul matches numpy" in r["output_tail"] for r in report["results"])


def test_no_mount_is_left_behind(torch_run, rootfs_dir: Path) -> None:
    assert _mounts_left(rootfs_dir) == []


def test_a_setting_qemu_rejects_fails_with_exit_1(
    torch_run, torch_aarch64_wheel: Path, rootfs_dir: Path
) -> None:
    result = _emulate(
        "--arch",
        "aarch64",
        "--cpu",
        "no-such-cpu",
        "--rootfs",
        rootfs_dir,
        "--keep",
        "--json",
        torch_aarch64_wheel,
    )
    report = json.loads(result.stdout)
    assert result.returncode == 1
    assert [(r["cpu"], r["passed"]) for r in report["results"]] == [("no-such-cpu", False)]
    assert _mounts_left(rootfs_dir) == []


# --- ppc64le: PyPI has no torch for it, so a conda package of our own probes the CPU ----

PROBE_MAIN = """\
import ctypes
import os

import packaging  # declared in the dist-info: pip installed it from PyPI

AT_HWCAP2 = 26
PPC_FEATURE2_ARCH_3_00 = 0x00800000  # POWER9
PPC_FEATURE2_ARCH_3_1 = 0x00040000  # POWER10

getauxval = ctypes.CDLL(None).getauxval
getauxval.restype = ctypes.c_ulong
hwcap2 = getauxval(AT_HWCAP2)
if hwcap2 & PPC_FEATURE2_ARCH_3_1:
    level = "POWER10"
elif hwcap2 & PPC_FEATURE2_ARCH_3_00:
    level = "POWER9"
else:
    level = "pre-POWER9"
print("emulate-capability:", level)
with open(os.path.join(os.environ["CONDA_PREFIX"], "etc", "cpuprobe.conf")) as handle:
    print(handle.read().strip())
"""
PLACEHOLDER = "/opt/conda-bld/cpuprobe_" + "placehold_" * 10


def _probe_package(directory: Path) -> Path:
    """A linux-ppc64le conda package: a module, its dist-info, a file needing relocation."""
    from conda_package_handling import api

    site = "lib/python3.11/site-packages"
    files = {
        f"{site}/cpuprobe/__init__.py": "",
        f"{site}/cpuprobe/__main__.py": PROBE_MAIN,
        f"{site}/cpuprobe-1.0.dist-info/METADATA": (
            "Metadata-Version: 2.1\nName: cpuprobe\nVersion: 1.0\nRequires-Dist: packaging\n"
        ),
        "etc/cpuprobe.conf": f"prefix={PLACEHOLDER}\n",
    }
    src = directory / "src"
    for name, text in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    (src / "info").mkdir()
    (src / "info" / "index.json").write_text(
        json.dumps(
            {
                "name": "cpuprobe",
                "version": "1.0",
                "build": "0",
                "build_number": 0,
                "subdir": "linux-ppc64le",
                "depends": ["python 3.11.*"],
            }
        )
    )
    (src / "info" / "paths.json").write_text(
        json.dumps(
            {
                "paths_version": 1,
                "paths": [
                    {
                        "_path": name,
                        "path_type": "hardlink",
                        **(
                            {"prefix_placeholder": PLACEHOLDER, "file_mode": "text"}
                            if name == "etc/cpuprobe.conf"
                            else {}
                        ),
                    }
                    for name in files
                ],
            }
        )
    )
    api.create(
        str(src),
        [*files, "info/index.json", "info/paths.json"],
        "cpuprobe-1.0-0.conda",
        out_folder=str(directory),
    )
    return directory / "cpuprobe-1.0-0.conda"


@pytest.fixture(scope="session")
def qemu_ppc64le(qemu_aarch64) -> None:
    # A second rootfs costs about 4 more minutes on a cold machine; CI's
    # budget has room for the aarch64 proof only, so this one is opt-in.
    if os.environ.get(PPC64LE_OPT_IN) != "1":
        pytest.skip(f"set {PPC64LE_OPT_IN}=1 to build a ppc64el rootfs (~4 min once) and run this")
    try:
        host.ensure_binfmt(ARCHES["ppc64le"])
    except host.HostError as exc:
        pytest.skip(f"no binfmt_misc for QEMU: {exc}")


def test_conda_package_sees_power9_and_power10_on_ppc64le(
    qemu_ppc64le, tests_cache_dir: Path, tmp_path
) -> None:
    rootfs_dir = tests_cache_dir / "rootfs-ppc64el"
    # No --keep: the package is rebuilt (new timestamps, new content) every run.
    result = _emulate(
        "--arch",
        "ppc64le",
        "--rootfs",
        rootfs_dir,
        "--json",
        _probe_package(tmp_path),
        "--",
        "python",
        "-m",
        "cpuprobe",
    )
    assert result.returncode == 0, result.stdout + result.stderr[-4000:]
    report = json.loads(result.stdout)
    assert {r["cpu"]: r["capability"] for r in report["results"]} == {
        "power9": "POWER9",
        "power10": "POWER10",
    }
    # The text file's placeholder now names the prefix inside the chroot.
    assert "prefix=/opt/emulate/envs/" in report["results"][0]["output_tail"]
    assert _mounts_left(rootfs_dir) == []
