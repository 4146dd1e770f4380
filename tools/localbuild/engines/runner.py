"""Run one build plan: output tee'd to its log, a status line on screen, Ctrl-C handled.

The build's process tree needs what ``tools.foundation.proc.call`` does not offer (a
pseudo-terminal, its own session, streaming output, staged termination), so
this is the one other place that starts a long-running process; short engine
commands still go through ``tools.foundation.proc.call``.

Why a pseudo-terminal: the .scripts run ``docker run -it`` outside CI (both
ours and conda-smithy's).  ``-t`` needs a terminal on stdin, and the engine
switches that terminal to raw mode; giving it a pty of our own keeps the
user's terminal intact, so Ctrl-C reaches build-locally and not the container.
The child runs in a new session, so the terminal's SIGINT goes to us alone and
we stop the build in order: the container first, then the script.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from tools.foundation.errors import CommandError
from tools.foundation.proc import call
from tools.localbuild.engines.engine import ContainerEngine
from tools.localbuild.engines.logtee import LineSplitter, LogSink
from tools.localbuild.engines.plan import BuildPlan
from tools.localbuild.engines.progress import Progress


@dataclass(frozen=True)
class RunOutcome:
    returncode: int | None
    interrupted: bool
    seconds: float


class _Interrupt(Exception):
    """SIGTERM to build-locally, handled like Ctrl-C."""


@contextlib.contextmanager
def _sigterm_as_interrupt():
    if sys.platform == "win32":
        yield
        return

    def handler(signum, frame):
        raise _Interrupt()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _spawn(plan: BuildPlan):
    """Start the plan's command on a pty (POSIX) or pipes; returns (process, read_fd)."""
    try:
        import pty
    except ImportError:
        pty = None
    if pty is None or sys.platform == "win32":
        try:
            proc = subprocess.Popen(
                list(plan.argv),
                cwd=plan.cwd,
                env=dict(plan.env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
        except OSError as exc:
            raise CommandError(f"{plan.argv[0]}: could not start ({exc.strerror})") from None
        return proc, proc.stdout.fileno()
    master, slave = pty.openpty()
    _set_window_size(slave)
    try:
        proc = subprocess.Popen(
            list(plan.argv),
            cwd=plan.cwd,
            env=dict(plan.env),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        os.close(master)
        raise CommandError(f"{plan.argv[0]}: could not start ({exc.strerror})") from None
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)
    return proc, master


def _set_window_size(fd: int) -> None:
    # A wide virtual terminal keeps tools from wrapping or truncating log lines.
    import fcntl
    import struct
    import termios

    with contextlib.suppress(OSError):
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))


def _read(fd: int, timeout: float) -> bytes | None:
    """Bytes, b"" at end of output, or None when nothing arrived within ``timeout``."""
    if sys.platform != "win32":
        import select

        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            return None
    try:
        return os.read(fd, 65536)
    except OSError:  # EIO: every writer closed the pty
        return b""


def _signal_group(proc: subprocess.Popen, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        if sys.platform == "win32":
            proc.terminate()
        else:
            os.killpg(proc.pid, signum)


def _stop(
    plan: BuildPlan,
    proc: subprocess.Popen,
    engine: ContainerEngine | None,
    say: Callable[[str], None],
    wait: Callable[[float], bool],
) -> None:
    """Container first (it holds the build), then the script's process group.

    Signalling only the engine's client is not enough: with a terminal attached,
    `docker run` does not pass signals on, and the container would build on
    unseen.  If the container did not exist yet (Ctrl-C during `docker pull`),
    it is looked for once more after the script is gone, in case it just started.
    """

    def engine_command(argv: list[str]) -> bool:
        try:
            result = call(*argv, env=plan.env, capture=True, check=False, quiet=True, timeout=60)
        except CommandError as exc:
            say(f"could not run `{argv[0]} {argv[1]}`: {exc}")
            return False
        return result.returncode == 0

    stopped = False
    if plan.container and engine is not None:
        say(f"stopping container {plan.container}")
        stopped = engine_command(engine.stop_argv(plan.container))
        if stopped and not wait(15.0):
            engine_command(engine.kill_argv(plan.container))
            wait(5.0)
    for signum, grace in ((signal.SIGINT, 10.0), (signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        if proc.poll() is not None:
            break
        _signal_group(proc, signum)
        if wait(grace):
            break
    if plan.container and engine is not None and not stopped:
        engine_command(engine.stop_argv(plan.container))


def run(
    plan: BuildPlan, sink: LogSink, progress: Progress, engine: ContainerEngine | None
) -> RunOutcome:
    start = time.monotonic()
    proc, fd = _spawn(plan)
    splitter = LineSplitter()
    interrupted = False

    def emit(lines: list[str]) -> None:
        for text in lines:
            progress.line(sink.line(text))

    def wait(seconds: float) -> bool:
        """Wait for the script to end, still reading its output so it never blocks on a full pty."""
        deadline = time.monotonic() + seconds
        while proc.poll() is None and time.monotonic() < deadline:
            data = _read(fd, 0.2)
            if data:
                emit(splitter.feed(data))
            elif data == b"":
                time.sleep(0.1)
        return proc.poll() is not None

    try:
        with _sigterm_as_interrupt():
            try:
                idle_after_exit = 0
                while True:
                    data = _read(fd, 0.25)
                    if data:
                        emit(splitter.feed(data))
                    elif data == b"":
                        break
                    elif proc.poll() is not None:
                        # The script ended but something it started still holds the pty.
                        idle_after_exit += 1
                        if idle_after_exit >= 8:
                            break
                    progress.tick()
                    sink.tick()
            except (KeyboardInterrupt, _Interrupt):
                interrupted = True
                sink.note("interrupted; stopping the build (rerun the same command to resume)")
                progress.message("interrupted: stopping the build...")
                try:
                    _stop(plan, proc, engine, lambda m: (sink.note(m), progress.message(m)), wait)
                except (KeyboardInterrupt, _Interrupt):
                    _signal_group(proc, signal.SIGKILL)
                # Whatever the build printed while stopping belongs in its log.
                while data := _read(fd, 0.2):
                    emit(splitter.feed(data))
        emit(splitter.flush())
        returncode = proc.wait()
    finally:
        if proc.poll() is None:
            _signal_group(proc, signal.SIGKILL)
            proc.wait()
        if proc.stdout is None:
            os.close(fd)
        else:
            proc.stdout.close()
    return RunOutcome(
        returncode=returncode, interrupted=interrupted, seconds=time.monotonic() - start
    )


def run_attached(plan: BuildPlan) -> int:
    """--debug: the user's terminal drives the build's shell directly; nothing is tee'd."""
    proc = subprocess.Popen(list(plan.argv), cwd=plan.cwd, env=dict(plan.env))
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:  # belongs to the shell inside; keep waiting for it
            continue
