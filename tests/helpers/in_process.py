"""The toolkit's entry points run inside the test's own process, as a child would run them.

``python -m tools ARGS`` and ``python build-locally.py ARGS`` spend about 0.2 s of CPU each
starting Python and importing the toolkit before they do anything; the quick loop ran about
570 of them (issue 59, measured with a ``.pth`` that logged every Python process). Here the
same ``main()`` the child would reach runs in this process, where the toolkit is imported
once, with what a child would have of its own:

- its working directory and its environment (``os.environ`` replaced, so the programs it
  starts inherit them as they would);
- file descriptors 1 and 2 pointed at files of their own, and ``sys.stdout``/``sys.stderr``
  over them, so what the toolkit prints and what the programs it starts print both land in
  the result, each in its stream, as through a child's pipes; stdin what the test gives
  (never a terminal);
- the exit status ``sys.exit`` or ``main()`` gives;
- nothing left behind: the toolkit's in-memory caches (``functools`` caches keyed by path,
  whose file a test may have changed since) and its render workers
  (tools/foundation/parallel.py) are dropped after each run, so no run sees another's state.

The toolkit is this one where the child would import this repository's ``tools/``, or a
byte-for-byte copy of it in a feedstock (a clone of HEAD); a clone whose toolkit a test edited
gets a child. What a child alone shows stays a child: Ctrl-C and a terminal's questions
(``Popen``, a pseudo-terminal), the fuzzing, whose timeouts catch a hang
(tests/helpers/fuzz.py), the command-line conventions run by path as README.md says
(tests/helpers/cli_conventions.py), the tests that start ``python -m tools`` themselves, and
every program a build runs. ``run_tools(..., child=True)`` asks for a child.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def runs_this_toolkit(cwd: Path, env: Mapping[str, str] | None) -> bool:
    """Whether ``python -m tools`` started in ``cwd`` with ``env`` would import this
    repository's ``tools`` package, or a copy of it byte for byte in a feedstock (a clone of
    HEAD: so running it here changes nothing)."""
    own = Path(cwd) / "tools"
    if own.exists():
        return own.resolve() == REPO / "tools" or _a_copy_in_a_feedstock(own)
    path = (os.environ if env is None else env).get("PYTHONPATH", "")
    first = next((entry for entry in path.split(os.pathsep) if entry), "")
    return bool(first) and Path(first).resolve() == REPO


def _a_copy_in_a_feedstock(toolkit: Path) -> bool:
    """``toolkit`` holds this toolkit's files, byte for byte, beside a feedstock's
    conda-forge.yml. The toolkit reads its own folder (``__file__``) for content alone (the
    render cache's fingerprint, the records' toolkit digest, conda-smithy's schema), and for
    a path only where no feedstock is found from the working directory, which has one here."""
    if not (toolkit.parent / "conda-forge.yml").is_file():
        return False
    return _contents(toolkit) == _this_toolkit()


@functools.cache
def _this_toolkit() -> dict[str, bytes]:
    return _contents(REPO / "tools")  # no test edits it (tests/e2e/test_fuzz.py holds them to it)


def _contents(folder: Path) -> dict[str, bytes]:
    return {
        path.relative_to(folder).as_posix(): hashlib.sha256(path.read_bytes()).digest()
        for path in folder.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def run_python(
    argv: Sequence[str | Path],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
    stdin: str | None = None,
    child: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``argv``, ``[sys.executable, "-m", "tools", ...]``, ``[sys.executable, "<this
    repository>/tools", ...]`` or ``[sys.executable, ".../build-locally.py", ...]``: in this
    process where the child would import this same toolkit, else (or with ``child``, or any
    other program) as a child; ``stdin`` its input (never a terminal); never raises on a
    non-zero exit."""
    words = [str(word) for word in argv]
    if not child and words[0] == sys.executable and len(words) > 1:
        script = Path(cwd, words[1])
        if words[1:3] == ["-m", "tools"] and runs_this_toolkit(cwd, env):
            argv0 = str(REPO / "tools" / "__main__.py")
            return run_main(tools_main, [argv0, *words[3:]], cwd=cwd, env=env, stdin=stdin)
        toolkit = script if script.name == "tools" else script.parent
        by_path = script.name in ("tools", "__main__.py") and toolkit.is_dir()
        if by_path and (toolkit.resolve() == REPO / "tools" or _a_copy_in_a_feedstock(toolkit)):
            return run_main(tools_main, words[1:], cwd=cwd, env=env, stdin=stdin)
        if script.name == "build-locally.py" and runs_this_toolkit(script.parent, env):
            main = build_locally_main(script.parent)
            return run_main(main, words[1:], cwd=cwd, env=env, stdin=stdin)
    return subprocess.run(
        words,
        cwd=cwd,
        env=None if env is None else dict(env),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_main(
    main: Callable[[], int | None],
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``main()`` with ``sys.argv`` = ``argv``, as the child ``argv`` names would run it."""
    with _files() as (out, err), _as_a_child(argv, cwd, env, stdin or "", out, err):
        try:
            returncode = main()
        except SystemExit as stop:
            returncode = _status(stop.code)
        sys.stdout.flush()
        sys.stderr.flush()
        return subprocess.CompletedProcess(list(argv), returncode or 0, _read(out), _read(err))


def _status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # as Python prints sys.exit("message")
    return 1


@contextmanager
def _files() -> Iterator[tuple[io.BufferedRandom, io.BufferedRandom]]:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        yield out, err


def _read(file: io.BufferedRandom) -> str:
    file.seek(0)
    return file.read().decode("utf-8", errors="replace")


@contextmanager
def _as_a_child(
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str] | None,
    stdin: str,
    out: io.BufferedRandom,
    err: io.BufferedRandom,
) -> Iterator[None]:
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_argv, saved_streams = sys.argv, (sys.stdin, sys.stdout, sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    saved_fds = os.dup(1), os.dup(2)
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        os.chdir(cwd)
        sys.argv = list(argv)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        sys.stdin = io.StringIO(stdin)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            if stream not in saved_streams:
                stream.flush()
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.dup2(saved_fds[0], 1)
        os.dup2(saved_fds[1], 2)
        for fd in saved_fds:
            os.close(fd)
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        _forget_state()


def _forget_state() -> None:
    """Drop what one run of the toolkit keeps in memory for the rest of its process."""
    parallel = sys.modules.get("tools.foundation.parallel")
    if parallel is not None:
        parallel._stop()
    for name, module in list(sys.modules.items()):
        if name != "tools" and not name.startswith("tools."):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, functools._lru_cache_wrapper):
                value.cache_clear()


def tools_main() -> int:
    from tools.__main__ import main

    return main(sys.argv[1:])


def build_locally_main(root: Path) -> Callable[[], int]:
    def main() -> int:
        from tools.localbuild.cli import main as cli_main

        return cli_main(sys.argv[1:], root=root)

    return main
