"""Print the TORCH_CUDA_ARCH_LIST of one config from recipe/cuda_arch_lists.txt.

    python cuda_arch_list.py FILE CUDA_VERSION TARGET_PLATFORM

build.sh and bld.bat both read their row through this script, so the table has one
reader in the build (batch's `for /f` tokenising of a commented, whitespace-aligned table
is fragile and cannot be run off Windows; tools/render/cuda_archs.py is the toolkit's reader).
A missing file or row is one `error:` line and exit status 2, so the build stops before
configuring. Runs inside the build: standard library only.
"""

from __future__ import annotations

import sys


def find_row(lines: list[str], cuda: str, platform: str) -> str | None:
    """The third column of the row `CUDA PLATFORM LIST`; '#' starts a comment."""
    for line in lines:
        words = line.split("#", 1)[0].split()
        if len(words) == 3 and words[0] == cuda and words[1] == platform:
            return words[2]
    return None


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("error: usage: cuda_arch_list.py FILE CUDA_VERSION TARGET_PLATFORM", file=sys.stderr)
        return 2
    path, cuda, platform = argv
    try:
        with open(path, encoding="utf-8") as stream:
            lines = stream.read().splitlines()
    except OSError as error:
        print(f"error: {path}: cannot read the CUDA arch lists ({error.strerror})", file=sys.stderr)
        return 2
    arch_list = find_row(lines, cuda, platform)
    if arch_list is None:
        print(
            f"error: {path}: no row for cuda_compiler_version='{cuda}'"
            f" target_platform='{platform}';"
            f" add a line '{cuda} {platform} TORCH_CUDA_ARCH_LIST' to it",
            file=sys.stderr,
        )
        return 2
    print(arch_list)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
