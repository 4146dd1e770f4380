"""The build scripts' output, which py-rattler-build keeps in the work folders' conda_build.log
where the binary streams it: shown in full after a build, its end after a failure."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def show_script_log(output_dir: Path, lines: int = 200) -> None:
    """The end of the failed build script's output: py-rattler-build keeps it in the work
    folder's conda_build.log, where the binary would have streamed it."""
    logs = sorted(output_dir.glob("bld/*/work/conda_build.log"), key=lambda p: p.stat().st_mtime)
    if logs:
        text = logs[-1].read_text(errors="replace").splitlines()
        print(f"--- last {lines} lines of {logs[-1]}", file=sys.stderr)
        print("\n".join(text[-lines:]), file=sys.stderr)


def work_folders(output_dir: Path) -> set[Path]:
    return {p.parent.parent for p in output_dir.glob("bld/*/work/conda_build.log")}


def show_build_output(output_dir: Path, before: set[Path], *, keep: bool) -> None:
    """The whole output of each build script this build ran, printed as the binary streams
    it (into the config's log): py-rattler-build keeps it in the work folder's
    conda_build.log, which it deletes on success unless asked to keep the work folder. So the
    build keeps them, and this removes what the person did not ask to keep."""
    made = sorted(work_folders(output_dir) - before, key=lambda p: p.stat().st_mtime)
    for folder in made:
        log = folder / "work" / "conda_build.log"
        print(f"--- the build script's output ({log.relative_to(output_dir).as_posix()})")
        with log.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                print(line.rstrip("\n"))
        sys.stdout.flush()
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
