"""The scripts under benchmarks/ start as the docs tell a maintainer to run them.

They are not tests and a full run takes minutes, so each is asked for ``--help`` only:
that imports everything the script imports, from the repository root, with nothing on
PYTHONPATH, which is where a script that finds only part of the repository breaks. The
zstd level benchmark also runs on a small payload: its table is what the docs quote.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS)
def test_benchmark_script_starts_from_the_repository_root(script: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [sys.executable, script, "--help"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: {Path(script).name}"), result.stdout


def test_the_zstd_level_benchmark_packs_real_packages_and_tables_their_sizes(
    tmp_path: Path,
) -> None:
    # A small payload only (the toolkit's conda-smithy module, about 100 kB): the real
    # measurement packs PyTorch's ~1 GB libtorch and takes hours of CPU at level 22.
    from conda_package_handling import api

    payload = tmp_path / "payload"
    shutil.copytree(
        REPO / "tools" / "smithy", payload, ignore=shutil.ignore_patterns("__pycache__")
    )
    kept, rows = tmp_path / "kept", tmp_path / "rows.jsonl"
    result = subprocess.run(
        [
            *(sys.executable, "benchmarks/bench_zstd_level.py", "--tree", str(payload)),
            *("--levels", "1,19", "--threads", "1", "--keep", str(kept), "--json", str(rows)),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    measured = [json.loads(line) for line in rows.read_text().splitlines()]
    assert [(r["level"], r["threads"]) for r in measured] == [(1, 1), (19, 1)]
    table = result.stdout.splitlines()
    assert [line.split()[:3] for line in table[1:]] == [
        ["payload", "1", "1"],
        ["payload", "19", "1"],
    ]
    low, high = measured
    assert high["size_bytes"] < low["size_bytes"]  # level 19 compresses harder
    for row in measured:
        package = kept / f"payload-L{row['level']}-T1.conda"
        assert package.stat().st_size == row["size_bytes"]
        assert row["input_bytes"] > sum(p.stat().st_size for p in payload.rglob("*.py"))
        out = tmp_path / f"out{row['level']}"
        api.extract(str(package), str(out))
        for source in payload.rglob("*"):
            if source.is_file():
                assert (out / source.relative_to(payload)).read_bytes() == source.read_bytes()
        assert json.loads((out / "info" / "index.json").read_text())["name"] == "payload"
