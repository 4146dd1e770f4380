"""The one place that starts subprocesses.

Every command is logged as ``+ cmd`` (with secrets redacted) and failures
raise :class:`tools.errors.CommandError`.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tools.errors import CommandError

# Variables that hold credentials on conda-forge CI; never printed, never
# forwarded to local builds (see build-locally.py).
SECRET_ENV_VARS = (
    "BINSTAR_TOKEN",
    "STAGING_BINSTAR_TOKEN",
    "FEEDSTOCK_TOKEN",
    "ANACONDA_API_TOKEN",
    "GITHUB_TOKEN",
)


def secret_values(env: Mapping[str, str]) -> list[str]:
    """The non-trivial secret values present in ``env``, longest first."""
    values = {env[name] for name in SECRET_ENV_VARS if len(env.get(name, "")) >= 4}
    return sorted(values, key=len, reverse=True)


def redact(text: str, secrets: Sequence[str]) -> str:
    for value in secrets:
        text = text.replace(value, "***")
    return text


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
    search_path = (env or os.environ).get("PATH") if env is not None else None
    resolved = shutil.which(program, path=search_path) if os.sep not in program else program
    if resolved is None or not Path(resolved).exists():
        raise CommandError(f"{program}: command not found on PATH")
    argv = [resolved, *(str(a) for a in args[1:])]
    if not quiet:
        secrets = secret_values(env if env is not None else os.environ)
        print(redact("+ " + format_command([program, *args[1:]]), secrets), file=sys.stderr)
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
    except subprocess.TimeoutExpired as exc:
        raise CommandError(f"{program}: timed out after {timeout:g}s") from exc
    except OSError as exc:
        raise CommandError(f"{program}: could not start ({exc.strerror})") from exc
    if check and result.returncode != 0:
        detail = ""
        if capture and result.stderr.strip():
            detail = ": " + result.stderr.strip().splitlines()[-1]
        raise CommandError(
            f"{program} exited with status {result.returncode}{detail}", result.returncode
        )
    return result
