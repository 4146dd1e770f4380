"""The GPU architectures a CUDA build promises, and which a CUDA version can run where.

``recipe/cuda_arch_lists.txt`` holds one ``TORCH_CUDA_ARCH_LIST`` per CUDA version and
target platform (build.sh and bld.bat export it); :func:`arch_list` reads the row of one
config and :func:`parse_arch_list` turns it into what the fatbins must hold.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tools.foundation.errors import UserError

ARCH_LISTS = "cuda_arch_lists.txt"
_ENTRY = re.compile(r"^(\d+)\.(\d+)(\+PTX)?$")

#: The SASS targets nvcc of each CUDA version accepts (CUDA 13.0 dropped everything below
#: Turing and renamed Jetson Thor from sm_101 to sm_110).
SUPPORTED: dict[str, frozenset[int]] = {
    # `ptxas --help` of nvidia-cuda-nvcc-cu12 12.8.93 (sm_103 and sm_121 came with 12.9).
    "12.8": frozenset({50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 120}),
    "12.9": frozenset(
        {50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 120, 121}
    ),
    "13.0": frozenset({75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121}),
}
#: Jetson (Tegra) GPUs: TX1, TX2, Xavier, Orin, Thor (sm_101 in CUDA 12, sm_110 in 13).
#: No linux-64 machine has one; on linux-aarch64 CUDA 12 serves them only through the
#: separate Tegra toolkit, while CUDA 13's one Arm (sbsa) toolkit serves Orin and Thor.
TEGRA = frozenset({53, 62, 72, 87, 101, 110})
SBSA_TEGRA_FROM_13 = frozenset({87, 110})


@dataclass(frozen=True)
class Promise:
    """What a TORCH_CUDA_ARCH_LIST asks nvcc for: SASS per entry, PTX for +PTX entries."""

    text: str
    sass: frozenset[int]
    ptx: frozenset[int]


def parse_arch_list(text: str) -> Promise:
    sass, ptx = set(), set()
    for entry in filter(None, re.split(r"[;\s]+", text.strip())):
        match = _ENTRY.match(entry)
        if not match:
            raise ValueError(f"TORCH_CUDA_ARCH_LIST entry {entry!r} is not MAJOR.MINOR[+PTX]")
        arch = int(match.group(1)) * 10 + int(match.group(2))
        sass.add(arch)
        if match.group(3):
            ptx.add(arch)
    return Promise(text, frozenset(sass), frozenset(ptx))


def read_rows(path: Path) -> dict[tuple[str, str], str]:
    """``(cuda version, target platform) -> TORCH_CUDA_ARCH_LIST`` from the recipe's file."""
    rows: dict[tuple[str, str], str] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) != 3:
            raise UserError(
                f"{path}:{number}: expected 'CUDA PLATFORM ARCH_LIST', got {line.strip()!r}"
            )
        try:
            parse_arch_list(words[2])
        except ValueError as error:
            raise UserError(f"{path}:{number}: {error}") from None
        rows[(words[0], words[1])] = words[2]
    return rows


def arch_list(recipe_dir: Path, cuda: str | None, subdir: str | None) -> str | None:
    """The config's TORCH_CUDA_ARCH_LIST, or None (a CPU config, or no file)."""
    path = recipe_dir / ARCH_LISTS
    if cuda in (None, "None") or subdir is None or not path.is_file():
        return None
    return read_rows(path).get((cuda, subdir))


def runnable(cuda: str, subdir: str) -> frozenset[int] | None:
    """The SASS architectures a machine of ``subdir`` with CUDA ``cuda`` can run (None:
    this CUDA version is not in SUPPORTED)."""
    supported = SUPPORTED.get(cuda)
    if supported is None:
        return None
    tegra = TEGRA
    if subdir == "linux-aarch64" and int(cuda.split(".")[0]) >= 13:
        tegra = TEGRA - SBSA_TEGRA_FROM_13
    return supported - tegra


#: The variant key (recipe/conda_build_config.yaml) naming the GPU set the CUDA packages
#: ship, and its value for conda-forge's promise: every GPU the CUDA version runs on the
#: platform gets SASS, and the newest entry PTX for GPUs after it.
ARCH_SET_KEY = "cuda_arch_set"
FULL = "full"
_LABEL = re.compile(r"^[a-z][a-z0-9]*$")


def uncovered(cuda: str, subdir: str, promise: Promise) -> list[str] | None:
    """What a list leaves out of the full promise: each GPU (``sm_XY``) the CUDA version
    runs on ``subdir`` with no SASS it can run (same major, minor not above its own), and
    ``PTX`` when the newest entry has none. None: this CUDA version is not in SUPPORTED."""
    can_run = runnable(cuda, subdir)
    if can_run is None:
        return None
    gaps = [
        f"sm_{gpu}"
        for gpu in sorted(can_run)
        if not any(a // 10 == gpu // 10 and a % 10 <= gpu % 10 for a in promise.sass)
    ]
    if promise.sass and max(promise.sass) not in promise.ptx:
        gaps.append(f"PTX for compute_{max(promise.sass)}")
    return gaps


def set_name(promise: Promise) -> str:
    """The ``cuda_arch_set`` name a narrower list must carry, read off the list itself:
    ``sm`` and the digits of each SASS architecture, ``ptx`` when any entry adds PTX
    (``9.0`` is sm90, ``8.0;9.0+PTX`` is sm80sm90ptx). A name chosen freely could stay on a
    package after its row changed (a lab puts conda-forge's row back and keeps ``sm90``)."""
    name = "".join(f"sm{arch}" for arch in sorted(promise.sass))
    return name + ("ptx" if promise.ptx else "")


def _row_line(path: Path, cuda: str, subdir: str) -> int:
    return next(
        n
        for n, row in enumerate(path.read_text().splitlines(), 1)
        if row.split("#", 1)[0].split()[:2] == [cuda, subdir]
    )


def config_arch_list(recipe_dir: Path, variant: dict[str, str], subdir: str) -> str | None:
    """The TORCH_CUDA_ARCH_LIST a config's build exports, once its ``cuda_arch_set`` is
    seen to tell the truth about it. conda-forge's configs carry no ``cuda_arch_set`` (a
    variant key in the files would enter every CUDA hash): absent or "full", the row must
    cover every GPU (``uncovered``); any other value must be the row's own name
    (``set_name``), which becomes part of the build string. None for CPU configs and
    recipes without the file; a name that does not match its row is a UserError."""
    cuda = variant.get("cuda_compiler_version")
    text = arch_list(recipe_dir, cuda, subdir)
    if text is None:
        return text
    label = variant.get(ARCH_SET_KEY) or FULL
    cbc = recipe_dir / "conda_build_config.yaml"
    path = recipe_dir / ARCH_LISTS
    if not _LABEL.match(label):
        raise UserError(
            f"{cbc}: {ARCH_SET_KEY} {label!r} is not a build-string word; use lower-case "
            f"letters and digits, e.g. sm90 (or leave it out for conda-forge's full list)"
        )
    promise = parse_arch_list(text)
    gaps = uncovered(str(cuda), subdir, promise)
    where = f"{path}:{_row_line(path, str(cuda), subdir)}: {cuda} {subdir} {text}"
    if label == FULL:
        if gaps:
            raise UserError(
                f"{where} leaves out {', '.join(gaps)}, but {ARCH_SET_KEY} is {FULL!r}"
                f" (or absent); name the narrower set in {cbc}"
                f" ({ARCH_SET_KEY}: [{set_name(promise)}]) so its packages say so in their"
                " build string"
            )
        return text
    if gaps == []:
        raise UserError(
            f"{where} is the full list, but {ARCH_SET_KEY} is {label!r}, which would name"
            f" packages for every GPU as a narrower set; remove {ARCH_SET_KEY} from {cbc}"
        )
    if label != set_name(promise):
        raise UserError(
            f"{where} is the set {set_name(promise)!r}, but {ARCH_SET_KEY} is {label!r};"
            f" set {ARCH_SET_KEY}: [{set_name(promise)}] in {cbc} (the build string names"
            " the list the packages hold)"
        )
    return text
