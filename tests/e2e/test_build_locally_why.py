"""``python -m tools review why CONFIG`` on real failing logs.

Each test breaks the miniature PyTorch (tests/fixtures/minitorch) the way a release
breaks: a compile error, a CMake error, an undefined symbol at link time, a failing test.
The build runs for real (cmake, ninja, the C++ compiler, pytest) as the body of the fake
container's conda-build (tests/fixtures/fake_docker), so build-locally.py writes the log
exactly as for a real release: through the pseudo-terminal, timestamped, tokens redacted.
Then ``--why`` is asked, as a user would, from the command line.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest
from helpers.fake_engine_feedstock import CPU, TOKEN, Feedstock
from helpers.minitorch.support import copy_project

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX pseudo-terminal and bash"),
    pytest.mark.skipif(
        not (shutil.which("cmake") and shutil.which("ninja") and shutil.which("c++")),
        reason="needs cmake, ninja and a C++ compiler to build the miniature",
    ),
]

LABEL = "linux-64 cpu"
STAMPED = re.compile(r"^[> ] \[\d\d:\d\d:\d\d\] ")


def _configure(project: Path) -> str:
    return (
        f"cmake -S {shlex.quote(str(project))} -B {shlex.quote(str(project / 'build'))} "
        f"-G Ninja -DPython_EXECUTABLE={shlex.quote(sys.executable)}"
    )


def _build(project: Path, target: str = "") -> str:
    return f"cmake --build {shlex.quote(str(project / 'build'))}" + (
        f" --target {target}" if target else ""
    )


def failed_build(tmp_path: Path, command: str) -> tuple[Feedstock, str]:
    """Build ``CPU`` with ``command`` as its body; return the feedstock and --why's stdout."""
    feedstock = Feedstock(tmp_path)
    # a token in the build's output: the log holds it redacted, and so must --why
    body = f"echo uploading with {TOKEN}; {command}"
    run = feedstock.run(CPU, FAKE_BUILD_RUN=body, BINSTAR_TOKEN=TOKEN)
    assert run.returncode == 1, run.stderr
    why = feedstock.review("why", LABEL)
    assert why.returncode == 0, why.stderr
    return feedstock, why.stdout


def _shown(stdout: str) -> tuple[str, list[str], str, str]:
    """--why's heading, the context lines (without their marker), the error line, the log."""
    head, *body, log = stdout.strip().splitlines()
    assert all(STAMPED.match(line) for line in body), body
    [error] = [line[2:] for line in body if line.startswith("> ")]
    return head, [line[2:] for line in body], error, log


def _check_common(feedstock: Feedstock, stdout: str, kind: str) -> str:
    head, context, error, log = _shown(stdout)
    assert head.startswith(f"{LABEL} (failed): {kind} at line ")
    assert log == f"log: {feedstock.artifacts / f'{CPU}-log.txt'}"
    number = int(head.rsplit("line ", 1)[1].split()[0])
    assert Path(log[5:]).read_text().splitlines()[number - 1] == error
    assert TOKEN not in Path(log[5:]).read_text() and TOKEN not in stdout
    assert 3 <= len(context) <= 12
    return error


def test_why_shows_the_first_compile_error_with_the_source_line(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "minitorch")
    with (project / "c10" / "c10.cpp").open("a") as source:
        source.write("namespace c10 {\nint broken() { return not_declared_anywhere; }\n}\n")
    feedstock, stdout = failed_build(tmp_path, f"{_configure(project)} && {_build(project)}")
    error = _check_common(feedstock, stdout, "compiler error")
    assert re.search(r"c10\.cpp:6:\d+: error: .*not_declared_anywhere", error)
    assert "FAILED: " in stdout  # ninja's line about the step, as context before the error


def test_why_shows_a_cmake_error_with_its_message(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "minitorch")
    empty = tmp_path / "no-openblas"
    empty.mkdir()
    # the container sees only what the .scripts pass in, so the variables go on the command
    command = f"BLAS=OpenBLAS OpenBLAS_HOME={shlex.quote(str(empty))} {_configure(project)}"
    feedstock, stdout = failed_build(tmp_path, command)
    error = _check_common(feedstock, stdout, "CMake error")
    # where the miniature looks for BLAS (CMakeLists.txt, or cmake/Targets.cmake since main's
    # scikit-build-core layout): any CMake file's heading with its line
    assert re.match(r"CMake Error at \S+(?:\.txt|\.cmake):\d+", error.split("] ", 1)[1])
    assert "OpenBLAS_LIB_openblas" in stdout  # the message body after the heading


def test_why_shows_an_undefined_reference_from_the_linker(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "minitorch")
    with (project / "aten" / "src" / "ATen" / "Context.cpp").open("a") as source:
        source.write(
            "int never_defined_anywhere();\nint use_it() { return never_defined_anywhere(); }\n"
        )
    command = f"LDFLAGS=-Wl,--no-undefined {_configure(project)} && {_build(project, 'torch_cpu')}"
    feedstock, stdout = failed_build(tmp_path, command)
    error = _check_common(feedstock, stdout, "linker error")
    assert "never_defined_anywhere" in error


def test_why_shows_the_assertion_of_a_failing_test(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "minitorch")
    test = tmp_path / "test_minitorch.py"
    test.write_text(
        "import ctypes\n\n\n"
        "def test_c10_reports_version_two():\n"
        f"    lib = ctypes.CDLL({str(project / 'build' / 'libc10.so')!r})\n"
        "    assert lib._ZN3c107versionEv() == 2\n"
    )
    tests = f"{shlex.quote(sys.executable)} -m pytest -p no:cacheprovider -q {test}"
    command = f"{_configure(project)} && {_build(project, 'c10')} && {tests}"
    feedstock, stdout = failed_build(tmp_path, command)
    error = _check_common(feedstock, stdout, "test failure")
    assert error.endswith("assert 1 == 2")
