"""Wine itself for the tests that run batch files: the Wine prefix, launcher.c built by
MinGW, ``wine cmd`` and Windows path names, and the programs bridged to Linux.

Without Wine or MinGW the tests skip, naming the Debian packages; with ``CI`` set they fail
(CI installs both: .ci/run).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

import pytest
from helpers.cache import cached_dir, tests_cache_root

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[2]
RECIPE_DIR = REPO_ROOT / "recipe"
BRIDGE = HERE / "bridge.py"
#: launcher.c and the .bat files miniforge holds: data, under tests/fixtures/wine.
DATA = HERE.parents[1] / "fixtures" / "wine"
APT_PACKAGES = ("wine64", "gcc-mingw-w64-x86-64-win32")
MINGW_GCC = "x86_64-w64-mingw32-gcc"
WINE_ENV = {"WINEDEBUG": "-all", "WINEDLLOVERRIDES": "mscoree,mshtml="}


def require_wine() -> None:
    """Skip (fail under CI) when Wine or MinGW is missing, naming the apt packages."""
    missing = [tool for tool in ("wine", MINGW_GCC) if shutil.which(tool) is None]
    if not missing:
        return
    reason = (
        f"bld.bat under Wine needs {' and '.join(missing)}: "
        f"apt-get install -y {' '.join(APT_PACKAGES)} (.ci/run installs them)"
    )
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def _tool_version(args: list[str]) -> str:
    return subprocess.run(args, capture_output=True, text=True, check=False).stdout.strip()


def launcher_exe() -> Path:
    """launcher.c compiled by MinGW, cached by its source and the compiler's version."""
    source = DATA / "launcher.c"
    key = hashlib.sha256(source.read_bytes() + _tool_version([MINGW_GCC, "--version"]).encode())
    entry = tests_cache_root() / "wine" / f"launcher-{key.hexdigest()[:16]}"

    def build(folder: Path) -> None:
        subprocess.run(
            [
                MINGW_GCC,
                "-O2",
                "-Wall",
                "-o",
                str(folder / "launcher.exe"),
                str(source),
                "-lshell32",
            ],
            check=True,
            capture_output=True,
        )

    return (
        cached_dir(entry, build, lambda found: (found / "launcher.exe").is_file()) / "launcher.exe"
    )


def wine_prefix() -> Path:
    """A Wine prefix (about 9 s to create), cached per Wine version."""
    version = _tool_version(["wine", "--version"]).replace(" ", "_").replace("/", "_")
    entry = tests_cache_root() / "wine" / f"prefix-{version}"

    def build(folder: Path) -> None:
        env = {**os.environ, **WINE_ENV, "WINEPREFIX": str(folder)}
        # Output to a file, never a pipe: the server and services Wine leaves running hold
        # a pipe open, and reading it would wait for them.
        subprocess.run(
            ["wine", "cmd", "/d", "/c", "exit"],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=300,
        )
        # The prefix is complete once its server has written the registry and gone.
        subprocess.run(["wineserver", "-w"], env=env, check=True, timeout=120)

    prefix = cached_dir(entry, build, lambda found: (found / "system.reg").is_file())
    # One server for the whole run (each stage's cmd would start one, about a second each);
    # it exits by itself 30 s after its last client.
    env = {**os.environ, **WINE_ENV, "WINEPREFIX": str(prefix)}
    subprocess.run(
        ["wineserver", "-p", "30"],
        env=env,
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=60,
    )
    return prefix


def run_cmd(script: str, cwd: Path, prefix: Path) -> tuple[int, str]:
    """``wine cmd /d /c SCRIPT`` in ``cwd``: its status and output (stdout and stderr).
    Through a file, not a pipe, which a Wine server it starts would hold open."""
    log = cwd / f"{script.rsplit(chr(92), 1)[-1]}.log"
    with log.open("w") as out:
        proc = subprocess.run(
            ["wine", "cmd", "/d", "/c", script],
            cwd=cwd,
            env={**os.environ, **WINE_ENV, "WINEPREFIX": str(prefix)},
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=300,
            check=False,
        )
    return proc.returncode, log.read_text(errors="replace")


def windows(path: Path | str) -> str:
    """The Windows name of a Linux path (Wine's Z: drive is /)."""
    return "Z:" + str(path).replace("/", "\\")


def bridge(folder: Path, launcher: Path, names: Iterable[str], python: Path) -> None:
    """``names`` (python.exe, cmake.exe ...) in ``folder``, run by ``python bridge.py``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copyfile(launcher, folder / name)
    (folder / "wine-bridge.txt").write_text(f"{python}\n{BRIDGE}\n")
