"""What the CLI-convention tests share: the config they name and the toolkit run as a user
runs it (``python -m tools`` from the root, or ``python <repository>/tools`` by path)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers import feedstock_matrix
from helpers.cli import run_tools

ROOT = Path(__file__).resolve().parent.parent.parent
# The config these tests name, read from .ci_support: a CPU one where the matrix has one (the
# fastest to render; conda-forge's first is linux-64), and the glob of its platform.
ONE_CONFIG = feedstock_matrix.prefer({"cuda": False}, {})
ONE = ONE_CONFIG.name if ONE_CONFIG else "no-config-in-ci-support"
PLATFORM_GLOB = f"{ONE_CONFIG.prefix}_*" if ONE_CONFIG else "none_*"


def run_toolkit(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return run_tools(*args, cwd=cwd)


def run_by_path(tools: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python <repository>/tools ...``, as README and --help tell people to run it."""
    return subprocess.run(
        [sys.executable, tools, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
