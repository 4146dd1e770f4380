"""How many compile jobs a PyTorch build may run here: CPU_COUNT, capped by memory.

build.sh and bld.bat set MAX_JOBS from what this prints (setup.py passes it to CMake; from
2.14 on pyproject.toml's [tool.scikit-build.env] table makes it CMAKE_BUILD_PARALLEL_LEVEL).
One job per CPU runs out of memory: conda-forge's 16-CPU runners were OOM-killed and their
feedstock builds with 8 jobs on Linux (64 GB) and 4 on Windows (58 GB) since. The cap here
follows the machine instead of the CI service: at most one job per --per-job-gb (build.sh: 8,
bld.bat: 14, the memory per job those numbers leave), overridable with JOB_MEMORY_GB.

Usage: python build_jobs.py --per-job-gb N   (reads CPU_COUNT and JOB_MEMORY_GB)
Prints one number. Bad input: one `error:` line naming the variable, exit 2.
Standard library only (it runs in the build environment before anything is built).
"""

from __future__ import annotations

import argparse
import os
import sys

GIB = 1024**3


class JobsError(ValueError):
    """A setting that is not a positive whole number."""


def positive(name: str, value: str) -> int:
    if not value.strip().isdigit() or int(value) < 1:
        raise JobsError(f"{name}='{value}' is not a positive whole number; unset it or fix it")
    return int(value)


def jobs(cpus: int, memory_bytes: int | None, per_job_gb: int) -> int:
    """CPUs, at most one job per `per_job_gb` of memory, never fewer than one."""
    if memory_bytes is None:
        return cpus
    return max(1, min(cpus, memory_bytes // (per_job_gb * GIB)))


def machine_memory() -> int | None:
    """Physical memory in bytes, or None where it cannot be read."""
    if sys.platform == "win32":
        import ctypes

        class MemoryStatus(ctypes.Structure):
            _fields_ = [
                ("dwLength", ctypes.c_ulong),
                ("dwMemoryLoad", ctypes.c_ulong),
                ("ullTotalPhys", ctypes.c_ulonglong),
                ("ullAvailPhys", ctypes.c_ulonglong),
                ("ullTotalPageFile", ctypes.c_ulonglong),
                ("ullAvailPageFile", ctypes.c_ulonglong),
                ("ullTotalVirtual", ctypes.c_ulonglong),
                ("ullAvailVirtual", ctypes.c_ulonglong),
                ("ullAvailExtendedVirtual", ctypes.c_ulonglong),
            ]

        status = MemoryStatus()
        status.dwLength = ctypes.sizeof(MemoryStatus)
        if not ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(status)):
            return None
        return int(status.ullTotalPhys)
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def main(argv: list[str] | None = None, environ: dict[str, str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-job-gb", required=True, type=int)
    args = parser.parse_args(argv)
    env = os.environ if environ is None else environ
    try:
        cpus = positive("CPU_COUNT", env.get("CPU_COUNT") or str(os.cpu_count() or 1))
        per_job = positive("JOB_MEMORY_GB", env.get("JOB_MEMORY_GB") or str(args.per_job_gb))
    except JobsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(jobs(cpus, machine_memory(), per_job))
    return 0


if __name__ == "__main__":
    sys.exit(main())
