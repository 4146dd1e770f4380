"""The Wine harness tells Wine failing to start a program from a script naming a missing one."""

from __future__ import annotations

from pathlib import Path

from fixtures.wine.unlaunched import STATUS, unlaunched


def _log(program: Path) -> str:
    """The tail of a stage's log as Wine's cmd wrote it in CI (echo on, then the message)."""
    name = "Z:" + str(program).replace("/", "\\")
    command = f'"{name}" -m pip install . --no-deps --no-build-isolation -v'
    return (
        f"Z:\\work>{command} \n"
        f"Can't recognize '{command}' as an internal or external command, or batch script.\n"
        "\nZ:\\work>if !errorlevel! neq 0 exit /b !errorlevel! \n"
    )


def test_an_existing_program_wine_did_not_start_is_named(tmp_path: Path) -> None:
    program = tmp_path / "host env" / "python.exe"
    program.parent.mkdir()
    program.write_bytes(b"MZ")
    assert unlaunched(STATUS, _log(program)) == program


def test_a_missing_program_is_the_scripts_fault(tmp_path: Path) -> None:
    assert unlaunched(STATUS, _log(tmp_path / "host env" / "python.exe")) is None


def test_a_script_that_went_on_after_the_message_is_not_a_launch_failure(tmp_path: Path) -> None:
    program = tmp_path / "python.exe"
    program.write_bytes(b"MZ")
    assert unlaunched(1, _log(program)) is None
