"""One exception root for the toolkit; ``tools.__main__`` maps these to exit codes.

Exit codes: 0 success, 1 "checked and found problems", 2 unusable input or a
failed external command, 130 interrupted.  Library code raises, never exits.
"""

from __future__ import annotations

import os

from tools.secrets import scrub, secret_values


class ToolError(Exception):
    """An error the user can act on; its message is one line, and never shows a token."""

    exit_code = 2

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
    """A check ran and found problems (the findings were already printed)."""

    exit_code = 1
