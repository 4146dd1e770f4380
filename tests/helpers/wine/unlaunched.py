"""Wine's cmd failing to start a program that exists: Wine's fault, not the script's.

Wine's cmd (8.0, programs/cmd/wcmdmain.c ``WCMD_run_program``) prints "Can't recognize
'COMMAND' as an internal or external command" and sets ERRORLEVEL 9009 both when no file
matches and when CreateProcessW fails for one that does (``if (!status) break;`` falls
through to "not found"). CI saw the second once: a stage whose python.exe had run a moment
before could not start it again (the status reached Linux as 9009 % 256). Microsoft's cmd
would have run it, so the harness runs such an output once more; a program that does not
exist is the script's fault and fails the test as before.
"""

from __future__ import annotations

import re
from pathlib import Path

_CANT_RECOGNIZE = re.compile(r"^Can't recognize '(\"[^\"]+\"|\S+)", re.MULTILINE)
#: cmd's ERRORLEVEL 9009 as the exit status of ``wine cmd /c`` (8 bits on Linux).
STATUS = 9009 % 256


def unlaunched(returncode: int, log: str) -> Path | None:
    """The existing program whose failed start ended the script, if that is what ended it."""
    found = _CANT_RECOGNIZE.findall(log)
    if returncode != STATUS or not found:
        return None
    program = Path(linux_path(found[-1].strip('"')))
    return program if program.is_file() else None


def linux_path(name: str) -> str:
    """A ``Z:\\...`` path (Wine maps Z: to /) as a Linux one; anything else as it is."""
    if name[:3].upper() == "Z:\\":
        return "/" + name[3:].replace("\\", "/")
    return name
