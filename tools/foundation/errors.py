"""One exception root for the toolkit, and the one handler that maps it to exit codes.

Exit codes: 0 success, 1 "checked and found problems", 2 unusable input or a
failed external command, 130 interrupted.  Library code raises, never exits; both entry
points (``python -m tools`` and ``build-locally.py``) run their command through
:func:`exit_code_of`.

What the user reads on stderr follows from the exit code: an error (exit 2) is one line
starting ``error:``; problems a check found (exit 1) end in one summary line starting
``problems:``, never ``error:``, since nothing went wrong with the command itself.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TextIO

from tools.foundation.secrets import scrub, secret_values

EXIT_INTERRUPTED = 130


class ToolError(Exception):
    """An error the user can act on; its message is one line (which a list to choose from may
    follow, one item per line: tools.foundation.selection's config names), never a token."""

    exit_code = 2
    prefix = "error"  # what the handler prints before the message

    def __init__(self, message: str = "") -> None:
        # Messages quote commands, their output and environment values: a credential of
        # this environment, or one shaped like a GitHub token, is masked wherever it came from.
        super().__init__(scrub(str(message), secret_values(os.environ)))


class UserError(ToolError):
    """Bad input: a file, key or value the user gave us is wrong."""


class CommandError(ToolError):
    """An external command failed or could not be started."""

    def __init__(self, message: str, returncode: int | None = None) -> None:
        super().__init__(message)
        self.returncode = returncode


class ProblemsFound(ToolError):
    """A check ran and found problems (the findings were already printed); its message is
    the summary line, printed after ``problems:``."""

    exit_code = 1
    prefix = "problems"


def exit_code_of(command: Callable[[], int | None], *, stderr: TextIO | None = None) -> int:
    """Run ``command`` and return its exit code; a toolkit error becomes one ``error: ...``
    line on ``stderr`` (``problems: ...`` for :class:`ProblemsFound`) and its exit code,
    Ctrl-C exits 130, a closed pipe (``| head``) 0."""
    err = sys.stderr if stderr is None else stderr
    try:
        return int(command() or 0)
    except ToolError as exc:
        print(f"{exc.prefix}: {exc}", file=err, flush=True)
        return exc.exit_code
    except KeyboardInterrupt:
        print("\ninterrupted", file=err, flush=True)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
