"""Stand-ins for the Windows system programs recipe/bld.bat and .scripts/run_win_build.bat
run (robocopy, findstr; Wine's are a stub and a findstr that prints nothing), and recorders
for the programs the CI script runs (micromamba, conda, conda-build, upload_package).

Run by bridge.py as standins.py is. ``WINE_STANDIN_FAIL`` (comma-separated) makes one fail as
the real program would: ``robocopy`` (exit 8: a copy failed), ``robocopy-locked`` (a
destination file stays locked: robocopy retries it /R times /W seconds apart, by default
1,000,000 times 30 s apart, then fails with 8), or a recorded program's name (exit 1).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

from standins import _error, _fails

#: robocopy's retries of a file it cannot copy and the seconds between them, unless /R: and
#: /W: say otherwise (Microsoft's robocopy documentation).
ROBOCOPY_DEFAULT_RETRIES = 1_000_000
ROBOCOPY_DEFAULT_WAIT_S = 30


def robocopy_retries(args: list[str]) -> tuple[int, int]:
    """The /R:n retries and /W:n seconds robocopy runs with."""
    retries, wait = ROBOCOPY_DEFAULT_RETRIES, ROBOCOPY_DEFAULT_WAIT_S
    for arg in args:
        if arg.upper().startswith("/R:"):
            retries = int(arg[3:])
        elif arg.upper().startswith("/W:"):
            wait = int(arg[3:])
    return retries, wait


def robocopy(args: list[str], env: dict[str, str]) -> int:
    """``robocopy SRC DST /E ...``: the tree copied; exit 1 when files were copied, 0 when
    none, 8 and above for failures (16: the source is missing), as Windows' robocopy. A
    locked file (``robocopy-locked``) is retried as robocopy retries it; the stand-in says
    how long that takes instead of waiting, then fails as robocopy does once they run out."""
    source, dest = Path(args[0]), Path(args[1])
    if not source.is_dir():
        return _error("robocopy", f"{source} does not exist", 16)
    if _fails(env, "robocopy"):
        return _error("robocopy", "a file could not be copied (WINE_STANDIN_FAIL)", 8)
    if _fails(env, "robocopy-locked"):
        retries, wait = robocopy_retries(args)
        return _error(
            "robocopy",
            f"a locked file, retried {retries} times {wait} s apart: gave up after "
            f"{retries * wait} s (WINE_STANDIN_FAIL)",
            8,
        )
    copied = 0
    for path in source.rglob("*"):
        if path.is_file():
            (dest / path.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest / path.relative_to(source))
            copied += 1
    return 1 if copied else 0


def _findstr_pattern(text: str) -> str:
    """A findstr /r expression as Python's re: ``.`` ``*`` ``^`` ``$`` ``[]`` and ``\\x``
    mean the same in both for the expressions bld.bat uses."""
    return text


def findstr(args: list[str], env: dict[str, str]) -> int:
    """findstr with /b, /r, /l, /v and /c:STRING over files or standard input (Wine's findstr
    prints nothing): the matching lines (with /v the others); exit 0 when a line was
    printed, 1 when none."""
    regex, invert, begin, patterns, files = False, False, False, [], []
    for arg in args:
        lower = arg.lower()
        if lower == "/b":
            begin = True
        elif lower == "/r":
            regex = True
        elif lower == "/l":
            regex = False
        elif lower == "/v":
            invert = True
        elif lower.startswith("/c:"):
            patterns.append(arg[3:].strip('"'))
        elif Path(arg).is_file():  # bridge.py made it a Linux path: it starts with /
            files.append(Path(arg))
        else:
            return _error("findstr", f"{arg}: not a file, nor an option modelled here", 2)
    if begin:
        patterns = ["^" + (p if regex else re.escape(p)) for p in patterns]
        regex = True
    if regex:
        compiled = [re.compile(_findstr_pattern(p)) for p in patterns]
        matches = lambda line: any(c.search(line) for c in compiled)  # noqa: E731
    else:
        matches = lambda line: any(p in line for p in patterns)  # noqa: E731
    lines = []
    for source in files or [None]:
        text = source.read_text() if source else sys.stdin.read()
        lines += text.splitlines()
    printed = [line for line in lines if matches(line) != invert]
    sys.stdout.write("".join(f"{line}\n" for line in printed))
    return 0 if printed else 1


#: What a recorded program is run with that decides where it works and writes.
RECORDED_ENVIRONMENT = ("CONDA_PREFIX", "CONDA_BLD_PATH")


def record(tool: str, args: list[str], env: dict[str, str]) -> int:
    """A program .scripts/run_win_build.bat runs (micromamba, conda-build ...): its command
    line, current directory and ``RECORDED_ENVIRONMENT``, one JSON line in
    ``WINE_STANDIN_RECORD``; exit 0 (1 when WINE_STANDIN_FAIL names the program)."""
    seen = {name: env.get(name) for name in RECORDED_ENVIRONMENT}
    with open(env["WINE_STANDIN_RECORD"], "a") as log:
        log.write(json.dumps({"tool": tool, "args": args, "cwd": os.getcwd(), "env": seen}))
        log.write("\n")
    return 1 if _fails(env, tool) else 0
