"""Point CMake's exported targets at the files bld.bat moved out of lib\\.

PyTorch 2.13.0 installs its exported libraries with `install(TARGETS ... EXPORT Caffe2Targets
DESTINATION lib)`: on Windows the DLL (RUNTIME) and its import library (ARCHIVE) both land in
lib\\, and the export file CMake writes, share\\cmake\\Caffe2\\Caffe2Targets-release.cmake, says
IMPORTED_LOCATION_RELEASE "${_IMPORT_PREFIX}/lib/c10.dll". bld.bat puts the DLLs in
%LIBRARY_BIN% (where Windows finds them), so a consumer's find_package(Torch) stops at "The
imported target "c10" references the file .../lib/c10.dll but this file does not exist"
(issue 30 item 8). The pytorch stage deletes the copies libtorch ships from site-packages'
torch\\lib, which leaves the export in torch\\share just as stale.

CMake's export lists the files it will check in `_cmake_import_check_files_for_<target>`.
This rewrites, in every *Targets-*.cmake under the given directory, each listed file that
does not exist to the first --moved-to directory that holds a file of that name, relative to
the export's own _IMPORT_PREFIX (the package stays relocatable). Files that exist are left
alone. A file found nowhere is a problem: reported, and that export file is not written.

Usage: python cmake_export_paths.py SHARE_CMAKE_DIR --moved-to DIR [--moved-to DIR ...]
Prints one line per rewritten path. Bad input: one `error:` line, exit 2. A file found
nowhere: `problems:` line, exit 1. Standard library only (it runs in the build environment).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

# What CMake's install(EXPORT) writes to find the prefix from the export file's own place:
# one line taking the file's directory, then one more per directory level above it.
PREFIX_FROM_FILE = 'get_filename_component(_IMPORT_PREFIX "${CMAKE_CURRENT_LIST_FILE}" PATH)'
PREFIX_UP_ONE = 'get_filename_component(_IMPORT_PREFIX "${_IMPORT_PREFIX}" PATH)'
CHECKED_FILES = re.compile(r"list\(APPEND _cmake_import_check_files_for_\S+ ([^)]*)\)")
PREFIXED = re.compile(r'"\$\{_IMPORT_PREFIX\}/([^"]+)"')


class ExportError(ValueError):
    """Input this helper cannot work on (one `error:` line)."""


@dataclass(frozen=True)
class Rewrite:
    config_file: Path
    old: str  # the path after ${_IMPORT_PREFIX}/ as CMake wrote it
    new: str


@dataclass(frozen=True)
class Missing:
    config_file: Path
    path: str


def import_prefix(targets_file: Path) -> Path:
    """The directory CMake's export file computes as _IMPORT_PREFIX."""
    lines = [line.strip() for line in targets_file.read_text().splitlines()]
    if PREFIX_FROM_FILE not in lines:
        raise ExportError(
            f"{targets_file} does not compute _IMPORT_PREFIX from its own location (no "
            f"'{PREFIX_FROM_FILE}'); was it written by install(EXPORT)?"
        )
    prefix = targets_file.parent
    for _ in range(lines.count(PREFIX_UP_ONE)):
        prefix = prefix.parent
    return prefix


def checked_files(config_text: str) -> list[str]:
    """The prefix-relative files CMake will require to exist, as the export writes them."""
    found = set()
    for listed in CHECKED_FILES.findall(config_text):
        found.update(PREFIXED.findall(listed))
    return sorted(found)


def plan(
    config_file: Path, prefix: Path, moved_to: list[Path]
) -> tuple[list[Rewrite], list[Missing]]:
    """What to rewrite in one *Targets-<config>.cmake, and which files are found nowhere."""
    rewrites, missing = [], []
    for old in checked_files(config_file.read_text()):
        if (prefix / old).is_file():
            continue
        name = old.rsplit("/", 1)[-1]
        place = next((d for d in moved_to if (d / name).is_file()), None)
        if place is None:
            missing.append(Missing(config_file, old))
        else:
            relative = Path(os.path.relpath(place, prefix)).as_posix()
            rewrites.append(Rewrite(config_file, old, f"{relative}/{name}"))
    return rewrites, missing


def apply(config_file: Path, rewrites: list[Rewrite]) -> None:
    """Replace each "${_IMPORT_PREFIX}/<old>" (temp file + rename: never half-written)."""
    text = config_file.read_text()
    for rewrite in rewrites:
        text = text.replace(
            f'"${{_IMPORT_PREFIX}}/{rewrite.old}"', f'"${{_IMPORT_PREFIX}}/{rewrite.new}"'
        )
    handle, temp = tempfile.mkstemp(dir=config_file.parent, prefix=config_file.name + ".")
    try:
        with os.fdopen(handle, "w", newline="") as out:
            out.write(text)
        os.replace(temp, config_file)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def relocate(share_dir: Path, moved_to: list[Path]) -> tuple[list[Rewrite], list[Missing]]:
    """Rewrite every export under share_dir; the rewrites done and the files found nowhere."""
    if not share_dir.is_dir():
        raise ExportError(f"{share_dir} is not a directory; pass the installed share\\cmake")
    for directory in moved_to:
        if not directory.is_dir():
            raise ExportError(f"--moved-to {directory} is not a directory")
    exports = sorted(share_dir.rglob("*Targets.cmake"))
    if not exports:
        raise ExportError(f"{share_dir} holds no *Targets.cmake; pass the installed share\\cmake")
    done, not_found = [], []
    for targets_file in exports:
        prefix = import_prefix(targets_file)
        stem = targets_file.name[: -len(".cmake")]
        for config_file in sorted(targets_file.parent.glob(f"{stem}-*.cmake")):
            rewrites, missing = plan(config_file, prefix, moved_to)
            if missing:
                not_found += missing
            elif rewrites:
                apply(config_file, rewrites)
                done += rewrites
    return done, not_found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("share_dir", type=Path, help="the installed share/cmake directory")
    parser.add_argument(
        "--moved-to", type=Path, action="append", required=True,
        help="a directory bld.bat moved exported files to (repeat; the first match wins)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    try:
        done, not_found = relocate(args.share_dir, args.moved_to)
    except (ExportError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for rewrite in done:
        print(f"{rewrite.config_file}: ${{_IMPORT_PREFIX}}/{rewrite.old} -> {rewrite.new}")
    for entry in not_found:
        places = ", ".join(str(d) for d in args.moved_to)
        print(
            f"{entry.config_file}: ${{_IMPORT_PREFIX}}/{entry.path} exists neither there "
            f"nor in {places}",
            file=sys.stderr,
        )
    if not_found:
        print(
            f"problems: {len(not_found)} exported file(s) found nowhere; their export files "
            "are left as they were (check what bld.bat copies out of torch\\lib)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
