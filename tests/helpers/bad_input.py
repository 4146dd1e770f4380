"""What the bad-input tests share: the config they hand to the commands, a command run the way a
user types it (in process), the one error line it must print, and small damaged packages."""

from __future__ import annotations

import io
import json
import random
import tarfile
from pathlib import Path

from conda_package_streaming.create import conda_builder
from helpers import feedstock_matrix

from tools.__main__ import main

REPO = Path(__file__).resolve().parent.parent.parent
# The config these tests hand to the commands, read from .ci_support: a linux-64 CPU one
# where the matrix has one (the fastest to render), else a linux-64 one, else any.
_LINUX = feedstock_matrix.prefer(
    {"platform": "linux-64", "cuda": False}, {"platform": "linux-64"}, {}
)
LINUX_CONFIG = _LINUX.name if _LINUX else "no-config-in-ci-support"
# A config of another platform than linux-64 (conda-forge's osx-arm64), where there is one.
OTHER_PLATFORM = next((c for c in feedstock_matrix.configs() if c.platform != "linux-64"), None)


def run_tool(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def incompressible_text(size: int, seed: int = 1) -> bytes:
    """Text that compresses, but not to nothing, so damage lands inside the compressed data."""
    rnd = random.Random(seed)
    return "".join(rnd.choice("abcdefgh \n") for _ in range(size)).encode()


def tiny_conda(out: Path, name: str, build: str, members: dict[str, bytes], subdir="linux-64"):
    stem = f"{name}-2.13.0-{build}"
    with conda_builder(stem, out, compression_level=1) as tar:
        index = {
            "name": name,
            "version": "2.13.0",
            "build": build,
            "build_number": 0,
            "subdir": subdir,
            "depends": [],
        }
        for path, data in {"info/index.json": json.dumps(index).encode(), **members}.items():
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out / f"{stem}.conda"


def zero_middle(path: Path, size: int = 4096) -> None:
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + size] = bytes(size)
    path.write_bytes(bytes(data))
