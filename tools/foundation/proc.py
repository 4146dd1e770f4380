"""The one place that starts subprocesses.

Every command is logged as ``+ cmd`` (with secrets redacted) and failures
raise :class:`tools.foundation.errors.CommandError`.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tools.foundation.errors import CommandError
from tools.foundation.secrets import SECRET_ENV_VARS, redact, scrub, secret_values

__all__ = ["SECRET_ENV_VARS", "call", "format_command", "redact", "scrub", "secret_values"]


def format_command(args: Sequence[str | os.PathLike[str]]) -> str:
    return shlex.join(str(a) for a in args)


def call(
    *args: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    capture: bool = False,
    timeout: float | None = None,
    check: bool = True,
    quiet: bool = False,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a command; log ``+ cmd`` to stderr unless ``quiet``.

    Raises CommandError when the program is missing, times out, or (with
    ``check``) exits non-zero.  With ``capture`` stdout and stderr are kept
    as text on the returned object.
    """
    if not args:
        raise ValueError("call() needs a command")
    program = str(args[0])
    # Every message below is scrubbed: the command line, and what the command printed,
    # may carry a token from either environment.
    secrets = secret_values(os.environ, env or {})
    shown = scrub(program, secrets)
    search_path = (env or os.environ).get("PATH") if env is not None else None
    resolved = shutil.which(program, path=search_path) if os.sep not in program else program
    if resolved is None or not Path(resolved).exists():
        raise CommandError(f"{shown}: command not found on PATH")
    argv = [resolved, *(str(a) for a in args[1:])]
    if not quiet:
        print(scrub("+ " + format_command([program, *args[1:]]), secrets), file=sys.stderr)
    try:
        result = subprocess.run(
            argv,
            env=None if env is None else dict(env),
            cwd=cwd,
            text=True,
            capture_output=capture,
            timeout=timeout,
            input=input,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise CommandError(f"{shown}: timed out after {timeout:g}s") from None
    except OSError as exc:
        raise CommandError(f"{shown}: could not start ({exc.strerror})") from None
    if check and result.returncode != 0:
        detail = ""
        if capture and result.stderr.strip():
            detail = ": " + result.stderr.strip().splitlines()[-1]
        raise CommandError(
            scrub(f"{shown} exited with status {result.returncode}{detail}", secrets),
            result.returncode,
        )
    return result
