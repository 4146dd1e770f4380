"""MAX_JOBS follows the machine's memory in build.sh and bld.bat (recipe/build_jobs.py).

conda-forge's pytorch builds were OOM-killed at one job per CPU on 16-CPU runners and cap the
jobs at 8 (Linux, 64 GB) and 4 (Windows, 58 GB); our build scripts derive the cap from the
memory of the machine they run on, so local builds on small machines get it too.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import bld_bat
from helpers.build_scripts import build_sh_text
from helpers.recipe_helpers import RECIPE, recipe_module

build_jobs = recipe_module("build_jobs")

GIB = 1024**3


@pytest.mark.parametrize(
    ("cpus", "memory_gb", "per_job_gb", "expected"),
    [
        (16, 64, 8, 8),  # conda-forge's linux-64 runner: the cap they chose after OOM kills
        (16, 58, 14, 4),  # their Windows runner: the same
        (16, 48, 8, 6),
        (2, 24, 8, 2),  # this machine: CPUs are the limit
        (8, 4, 8, 1),  # never zero jobs
    ],
)
def test_jobs_are_cpus_capped_by_memory(cpus, memory_gb, per_job_gb, expected):
    assert build_jobs.jobs(cpus, memory_gb * GIB, per_job_gb) == expected


def test_unknown_memory_leaves_the_cpu_count():
    assert build_jobs.jobs(12, None, 8) == 12


def run(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(RECIPE / "build_jobs.py"), *args],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", **env},
        check=False,
    )


def test_this_machines_memory_caps_a_large_cpu_count():
    memory = build_jobs.machine_memory()
    assert memory and memory > GIB
    result = run("--per-job-gb", "8", CPU_COUNT="512")
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == max(1, memory // (8 * GIB)) < 512


def test_job_memory_gb_overrides_the_scripts_budget():
    memory = build_jobs.machine_memory()
    result = run("--per-job-gb", "8", CPU_COUNT="512", JOB_MEMORY_GB="1")
    assert int(result.stdout) == min(512, memory // GIB)


def test_a_cpu_count_that_is_not_a_number_is_one_error_line():
    result = run("--per-job-gb", "8", CPU_COUNT="lots")
    assert result.returncode == 2
    assert result.stderr == (
        "error: CPU_COUNT='lots' is not a positive whole number; unset it or fix it\n"
    )


def test_build_sh_and_bld_bat_take_max_jobs_from_build_jobs_py():
    # Before issue 30 both set MAX_JOBS to CPU_COUNT.
    sh = build_sh_text()
    bat = bld_bat.all_text()
    assert 'MAX_JOBS="$("${PYTHON}" -B "${RECIPE_DIR}/build_jobs.py" --per-job-gb 8)"' in sh
    assert 'build_jobs.py" --per-job-gb 14' in bat
    assert 'set "MAX_JOBS=%CPU_COUNT%"' not in bat and "MAX_JOBS=${CPU_COUNT" not in sh
