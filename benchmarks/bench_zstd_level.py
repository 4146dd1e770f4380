#!/usr/bin/env python3
"""What conda-forge.yml's zstd_compression_level costs and saves on PyTorch's packages.

    python benchmarks/bench_zstd_level.py WHEEL [WHEEL ...] [--levels 16,19,22]
        [--threads 1,2] [--uplinks 10,50,100,1000] [--json FILE]
    python benchmarks/bench_zstd_level.py --tree DIR ...   (one folder packed as it is)
    python benchmarks/bench_zstd_level.py --table FILE     (the rows --json wrote, sorted)

A torch wheel is unpacked and split the way the recipe splits it: ``libtorch`` (torch/lib's
libraries but libtorch_python and libtorch_cuda_linalg, torch/include, torch/share) under
lib/, include/, share/; ``pytorch`` (the rest of the wheel, libtorch_python included) under
lib/python3.X/site-packages/. libtorch_cuda_linalg is a package of its own, left out here.
Each package is packed into a .conda as conda-build packs it: conda-package-handling's
``api.create`` with ``compression_tuple=(".tar.zst", "zstd", "zstd:compression-level=L")``,
which compresses with one zstd worker (conda_build/build.py, conda_package_handling
conda_fmt.py). ``--threads 2`` packs the same inner .tar.zst with two workers, as
rattler-build does on a 2-core runner (its compression threads default to every core).

Each packing runs in a child process of its own: wall seconds, CPU seconds (user + system)
and peak memory (the child's maximum resident set) are the child's. The machine should be
otherwise idle; on a shared machine trust the CPU seconds over the wall seconds. The table
gives, per row, the size, and what it saves against the first level's size in upload time
at each uplink (Mbit/s), less the extra packing time it costs (CPU seconds over zstd
workers, so that other users' load does not count): the net seconds a CI job that packs and
uploads gains. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

# Never part of libtorch: the Python binding (pytorch's) and the linalg library (its own
# package, recipe/meta.yaml's libtorch-cuda-linalg).
NOT_LIBTORCH = ("libtorch_python", "libtorch_cuda_linalg")


@dataclass(frozen=True)
class Row:
    payload: str  # "<wheel or folder> <package>"
    level: int
    threads: int
    input_bytes: int
    wall_s: float
    cpu_s: float
    peak_mib: float
    size_bytes: int


def split_wheel(wheel: Path, into: Path) -> dict[str, Path]:
    """The wheel's files as the libtorch and pytorch prefixes (folders) the recipe makes."""
    prefixes = {"libtorch": into / "libtorch", "pytorch": into / "pytorch"}
    with zipfile.ZipFile(wheel) as archive:
        python = _python_of(archive)
        for info in archive.infolist():
            if info.is_dir():
                continue
            name = info.filename
            package, path = "pytorch", f"lib/{python}/site-packages/{name}"
            if name.startswith("torch/lib/") and not name[10:].startswith(NOT_LIBTORCH):
                package, path = "libtorch", f"lib/{name[10:]}"
            elif name.startswith(("torch/include/", "torch/share/")):
                package, path = "libtorch", name[6:]
            elif name.startswith("torch/lib/libtorch_cuda_linalg"):
                continue
            target = prefixes[package] / path
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(info) as source, target.open("wb") as sink:
                shutil.copyfileobj(source, sink, 1 << 20)
    return prefixes


def _python_of(archive: zipfile.ZipFile) -> str:
    """python3.X from the wheel's tag (torch-V-cp311-... -> python3.11)."""
    tag = Path(archive.filename or "").name.split("-")[2]
    if not tag.startswith("cp3"):
        raise SystemExit(f"bench_zstd_level: {archive.filename}: not a CPython wheel ({tag})")
    return f"python3.{tag[3:]}"


def with_info(prefix: Path, name: str) -> list[str]:
    """The files to pack: the payload and a small info/ (index.json, files), as a package
    has; what a package's info/ holds is a few kB and does not move the numbers."""
    files = sorted(p.relative_to(prefix).as_posix() for p in prefix.rglob("*") if p.is_file())
    files = [f for f in files if not f.startswith("info/")]
    info = prefix / "info"
    info.mkdir(exist_ok=True)
    index = {"name": name, "version": "0", "build": "0", "build_number": 0, "depends": []}
    (info / "index.json").write_text(json.dumps(index, indent=2))
    (info / "files").write_text("\n".join(files) + "\n")
    return [*files, "info/index.json", "info/files"]


def pack(prefix: Path, files: list[str], out: Path, level: int, threads: int) -> None:
    """One .conda, as conda-build writes it (``threads`` 1) or with more zstd workers."""
    from conda_package_handling import api

    extra = {} if threads == 1 else {"compression_threads": threads}
    api.create(
        str(prefix),
        files,
        out.name,
        str(out.parent),
        compression_tuple=(".tar.zst", "zstd", f"zstd:compression-level={level}"),
        **extra,
    )


def measure(prefix: Path, files: list[str], out: Path, level: int, threads: int) -> Row:
    """Pack in a child process; its wall and CPU seconds and its peak memory."""
    listing = prefix.parent / f"{out.stem}.files"
    listing.write_text("\n".join(files))
    command = [sys.executable, __file__, "--pack", str(prefix), str(listing), str(out)]
    command += [str(level), str(threads)]
    start = time.monotonic()
    child = subprocess.Popen(command)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"bench_zstd_level: packing {prefix} failed ({child.returncode})")
    size_in = sum((prefix / f).stat().st_size for f in files)
    return Row(
        payload="",
        level=level,
        threads=threads,
        input_bytes=size_in,
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        peak_mib=usage.ru_maxrss / 1024,  # kB on Linux
        size_bytes=out.stat().st_size,
    )


def upload_s(size: int, mbit_s: float) -> float:
    return size * 8 / (mbit_s * 1e6)


def _busy_s(row: Row) -> float:
    """The packing's seconds on an idle machine with a core per zstd worker: its CPU seconds
    over its workers (exact for one worker; a lower bound for more). Wall seconds measured
    on a shared machine hold the other users' load."""
    return row.cpu_s / row.threads


def table(rows: list[Row], uplinks: list[float]) -> list[str]:
    """The rows; "net" is the upload seconds saved against the first level (same payload
    and threads) less the extra packing seconds, per uplink."""
    head = f"{'payload':34} {'lvl':>3} {'thr':>3} {'in MB':>7} {'wall s':>7} {'CPU s':>7} "
    head += f"{'peak MiB':>8} {'size MB':>8} {'ratio':>6}"
    head += "".join(f" {f'net@{u:g}':>9}" for u in uplinks)
    lines = [head]
    for row in rows:
        base = next(r for r in rows if (r.payload, r.threads) == (row.payload, row.threads))
        line = f"{row.payload:34} {row.level:3d} {row.threads:3d} {row.input_bytes / 1e6:7.1f} "
        line += f"{row.wall_s:7.1f} {row.cpu_s:7.1f} {row.peak_mib:8.0f} "
        line += f"{row.size_bytes / 1e6:8.2f} {row.input_bytes / row.size_bytes:6.2f}"
        for uplink in uplinks:
            saved = upload_s(base.size_bytes, uplink) - upload_s(row.size_bytes, uplink)
            line += f" {saved - (_busy_s(row) - _busy_s(base)):9.1f}"
        lines.append(line)
    return lines


def _numbers(text: str, kind=int) -> list:
    try:
        return [kind(part) for part in text.split(",") if part]
    except ValueError:
        message = f"{text!r}: expected numbers separated by commas"
        raise argparse.ArgumentTypeError(message) from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheels", nargs="*", type=Path, help="torch wheels to split and pack")
    parser.add_argument("--tree", type=Path, action="append", default=[],
                        help="a folder packed as one package, as it is")  # fmt: skip
    parser.add_argument("--packages", type=lambda t: t.split(","), default=["libtorch", "pytorch"],
                        help="which of a wheel's packages to pack")  # fmt: skip
    parser.add_argument("--levels", type=_numbers, default=[16, 19, 22])
    parser.add_argument("--threads", type=_numbers, default=[1, 2])
    parser.add_argument("--uplinks", type=lambda t: _numbers(t, float),
                        default=[10.0, 50.0, 100.0, 1000.0], help="Mbit/s")  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write the rows here, one per line")
    parser.add_argument("--keep", type=Path, help="keep the packages in this folder")
    parser.add_argument("--table", type=Path, help="print the table of rows --json wrote, only")
    parser.add_argument("--pack", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.table:
        saved = [Row(**json.loads(line)) for line in args.table.read_text().splitlines()]
        saved.sort(key=lambda r: (r.payload, r.threads, r.level))
        print("\n".join(table(saved, args.uplinks)))
        return 0
    if args.pack:
        prefix, listing, out, level, threads = args.pack
        files = Path(listing).read_text().splitlines()
        pack(Path(prefix), files, Path(out), int(level), int(threads))
        return 0
    missing = [p for p in [*args.wheels, *args.tree] if not p.exists()]
    if missing or not (args.wheels or args.tree):
        what = f"{missing[0]} does not exist" if missing else "give a wheel or --tree DIR"
        print(f"bench_zstd_level: {what}", file=sys.stderr)
        return 2
    rows: list[Row] = []
    print("\n".join(table([], args.uplinks)), flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-zstd-") as scratch:
        work = Path(scratch)
        payloads: list[tuple[str, Path]] = []
        for tree in args.tree:
            prefix = work / f"tree{len(payloads)}"
            shutil.copytree(tree, prefix, symlinks=True)
            payloads.append((tree.name, prefix))
        for wheel in args.wheels:
            version = wheel.name.split("-")[1]
            for package, prefix in split_wheel(wheel, work / version).items():
                if package in args.packages:
                    payloads.append((f"{version} {package}", prefix))
                else:
                    shutil.rmtree(prefix)
        for label, prefix in payloads:
            files = with_info(prefix, label.split()[-1])
            for threads in args.threads:
                for level in args.levels:
                    stem = f"{label.replace(' ', '_')}-L{level}-T{threads}"
                    out = (args.keep or work) / f"{stem}.conda"
                    out.parent.mkdir(parents=True, exist_ok=True)
                    row = measure(prefix, files, out, level, threads)
                    row = Row(**{**asdict(row), "payload": label})
                    rows.append(row)
                    print(table(rows, args.uplinks)[-1], flush=True)
                    if args.json:
                        with args.json.open("a") as stream:
                            stream.write(json.dumps(asdict(row)) + "\n")
                    if args.keep is None:
                        out.unlink()
            shutil.rmtree(prefix)
    return 0


if __name__ == "__main__":
    sys.exit(main())
