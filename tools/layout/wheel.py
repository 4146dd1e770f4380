"""An upstream torch wheel read as the build's install tree, without extracting it.

The wheel's torch/lib, torch/include, torch/share and torch/bin are what `cmake --install`
lays out (the install tree the libtorch stage reads), and torch/ is what `pip install` leaves
in the pytorch output's site-packages. Only the archive's directory is read (names, sizes).
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

from tools.check.formats import wheel_platforms
from tools.foundation.errors import UserError

INSTALL_TOPS = ("lib", "include", "share", "bin")
# The target platforms whose wheels the layout replays (upstream's wheels this recipe builds
# packages for); which subdirs a platform tag fits is tools/check/formats.py's.
REPLAYED = ("osx-arm64", "osx-64", "linux-64", "linux-aarch64", "win-64")


@dataclass(frozen=True)
class Wheel:
    path: Path
    version: str
    platform: str
    tree: dict[str, int]  # install-tree path -> size
    torch: dict[str, int]  # path inside site-packages' torch/ -> size
    licenses: frozenset[str]  # paths under the dist-info's licenses/ (PEP 639)


def platform_of(path: Path) -> str:
    parts = path.name.removesuffix(".whl").split("-")
    if len(parts) < 5 or parts[0] != "torch" or not path.name.endswith(".whl"):
        raise UserError(f"{path}: not a torch wheel name (torch-VERSION-PY-ABI-PLATFORM.whl)")
    for platform in wheel_platforms(parts[-1]):
        if platform in REPLAYED:
            return platform
    raise UserError(f"{path}: platform tag '{parts[-1]}' is none this recipe builds")


def read_wheel(path: Path) -> Wheel:
    platform = platform_of(path)
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except (OSError, zipfile.BadZipFile) as error:
        raise UserError(f"{path}: cannot read the wheel ({error})") from None
    version = path.name.split("-")[1]
    tree: dict[str, int] = {}
    torch: dict[str, int] = {}
    licenses = set()
    for info in infos:
        if info.is_dir():
            continue
        name = info.filename
        if name.startswith("torch/"):
            rel = name.removeprefix("torch/")
            torch[rel] = info.file_size
            if rel.split("/")[0] in INSTALL_TOPS:
                tree[rel] = info.file_size
        elif ".dist-info/licenses/" in name:
            licenses.add(name.split(".dist-info/licenses/", 1)[1])
    if not tree:
        raise UserError(f"{path}: holds no torch/lib, torch/include, torch/share or torch/bin")
    return Wheel(path, version, platform, tree, torch, frozenset(licenses))
