"""Every batch file of a Windows build held to what Microsoft's cmd and Wine's run alike.

Rules over the text of every recipe/*.bat file (bld.bat, the files it runs, the activation
templates) and .scripts/run_win_build.bat: forms Wine's cmd runs differently (issue 42;
tests/test_bld_bat_wine*.py run the build under Wine) and Microsoft's cmd behaviour Wine
hides (issue 49; docs/testing.md, "Wine's cmd and Microsoft's"). One rule per construct,
each with its reason.
"""

from __future__ import annotations

import re

import pytest
from fixtures.bld_bat import (
    DISPATCHER,
    HAND_OVER,
    RECIPE,
    ROOT,
    RUN_WIN_BUILD,
    build_files,
    code,
    recipe_bat_files,
    stage_files,
)

#: The one status check after a program, a `call`, a second cmd or `pushd` (a crash's too).
ERRORLEVEL_CHECK = "if !errorlevel! neq 0 exit /b !errorlevel!"
SCRIPTS = {path.relative_to(ROOT).as_posix(): path for path in recipe_bat_files()}
SCRIPTS[RUN_WIN_BUILD.relative_to(ROOT).as_posix()] = RUN_WIN_BUILD
BUILD = [f"recipe/{name}" for name in build_files()]
#: Variables conda-build, conda-smithy or Windows set to a path.
PATH_VARIABLES = {
    "SRC_DIR",
    "PREFIX",
    "BUILD_PREFIX",
    "LIBRARY_PREFIX",
    "LIBRARY_BIN",
    "LIBRARY_LIB",
    "LIBRARY_INC",
    "RECIPE_DIR",
    "SP_DIR",
    "PYTHON",
    "MINIFORGE_HOME",
    "USERPROFILE",
    "TEMP",
}


def code_lines(script: str) -> list[str]:
    return code(SCRIPTS[script].read_text())


def test_the_build_runs_every_batch_file_of_the_recipe_but_the_activation_templates() -> None:
    # bld_common.bat and each stage's file, found by following the hand-overs from bld.bat.
    templates = {"activate-libtorch.bat", "deactivate-libtorch.bat"}
    assert set(build_files()) == {path.name for path in recipe_bat_files()} - templates
    assert set(stage_files().values()) < set(build_files())


def test_the_dispatcher_is_short_and_no_batch_file_long() -> None:
    assert len(DISPATCHER.read_text().splitlines()) < 150
    for path in recipe_bat_files():
        assert len(path.read_text().splitlines()) <= 400, path.name


@pytest.mark.parametrize("script", BUILD)
def test_every_file_the_build_runs_is_crlf_on_disk(script: str) -> None:
    # cmd reads the files bld.bat runs from disk; an LF-only file can lose a label at a
    # 512-byte boundary (see the next test). .gitattributes checks every .bat out CRLF.
    lines = SCRIPTS[script].read_bytes().split(b"\n")[:-1]
    assert lines and all(line.endswith(b"\r") for line in lines)
    assert "*.bat text eol=crlf" in (ROOT / ".gitattributes").read_text().splitlines()


def test_the_copy_conda_build_inlines_looks_up_no_label_before_handing_over() -> None:
    # conda-build writes the top-level build's conda_build.bat with LF line ends only; Microsoft's
    # cmd can miss a label straddling a 512-byte read in such a file. The copy hands over to
    # the recipe's CRLF file (read from disk) before any goto or call :label.
    lines = code(DISPATCHER.read_text())
    hand_over = next(i for i, line in enumerate(lines) if "!RECIPE_DIR!\\bld.bat" in line)
    assert lines[hand_over] == 'cmd /d /s /c ""!RECIPE_DIR!\\bld.bat""'
    assert lines[hand_over + 1] == "exit /b !errorlevel!"
    before = lines[:hand_over]
    assert not [line for line in before if re.search(r"\bgoto\b|\bcall\s+:|^:", line)], before


@pytest.mark.parametrize("script", BUILD)
def test_another_batch_file_runs_in_a_second_cmd_never_by_call(script: str) -> None:
    # Wine's cmd sets ERRORLEVEL 1 after `call` of a batch file that fails, whatever its
    # status (a crash's -1073741819, a recipe error's 2); a second cmd's status is the file's.
    lines = code_lines(script)
    assert [line for line in lines if re.match(r"(?i)^call\s+[^:\s]", line)] == []
    for index, line in enumerate(lines):
        if HAND_OVER.match(line):
            named = HAND_OVER.match(line).group(1)
            assert named == "!STAGE_FILE!" or (RECIPE / named).is_file(), line
            assert lines[index + 1] in (ERRORLEVEL_CHECK, "exit /b !errorlevel!"), line


@pytest.mark.parametrize("script", BUILD)
def test_every_error_message_is_one_line_followed_by_exit_2(script: str) -> None:
    lines = code_lines(script)
    for index, line in enumerate(lines):
        if line.startswith("echo bld.bat: error:"):
            assert line.endswith("1>&2"), line
            assert lines[index + 1] == "exit /b 2", line
            assert "recipe\\" in line or "%RECIPE_FILE%" in line, line


@pytest.mark.parametrize("script", BUILD)
def test_every_exit_is_batch_local(script: str) -> None:
    exits = [line for line in code_lines(script) if re.search(r"\bexit\b", line)]
    assert [line for line in exits if "exit /b " not in line] == []


@pytest.mark.parametrize("script", BUILD)
def test_every_command_that_can_fail_is_followed_by_an_errorlevel_check(script: str) -> None:
    lines = code_lines(script)
    for index, line in enumerate(lines):
        if not line.startswith(('"%PYTHON%"', '"!PYTHON!"', "call :", "pushd ", "cmd ")):
            continue
        following = lines[index + 1]
        if following in ("exit /b %ERRORLEVEL%", "exit /b !errorlevel!"):
            continue  # a subroutine or a hand-over passing its last status back
        assert following == ERRORLEVEL_CHECK, f"{line!r} is followed by {following!r}"


@pytest.mark.parametrize("script", BUILD)
def test_every_jump_target_is_a_label_of_the_same_file(script: str) -> None:
    source = SCRIPTS[script].read_text()
    labels = set(re.findall(r"^:(\w+)\r?$", source, flags=re.MULTILINE))
    targets = set(re.findall(r"\b(?:goto|call) :(\w+)", source))
    assert targets <= labels, targets - labels


@pytest.mark.parametrize("script", BUILD)
def test_error_messages_expand_paths_after_the_block_is_read(script: str) -> None:
    # %VAR% inside ( ... ) is expanded when the block is parsed; a path with ")" such as
    # "Program Files (x86)" would end the block early. !VAR! is expanded afterwards.
    for line in code_lines(script):
        if line.startswith("echo bld.bat: error:"):
            for name in ("PYTHON", "SP_DIR", "CMAKE_CACHE", "TORCH_RECORD"):
                assert f"%{name}%" not in line, line


# Forms Windows' cmd and Wine 8's cmd run differently (issue 42). Each: a pattern over a
# script's code lines, and why it is avoided.
CMD_DIFFERENCES = {
    "a for variable inside `do if ... ( block )`": (
        re.compile(r"^for\b.*%%\w.*\bdo if\b.*\($"),
        "Wine's cmd leaves %%v unexpanded in the block: the loop calls a label instead",
    ),
    "a wildcard inside a quoted path in for or for /d": (
        re.compile(r'^for(\s+/d)?\s+%%\w\s+in\s+\([^)]*"[^"]*[*?][^"]*"'),
        "Wine's cmd matches it literally: pushd the folder, then an unquoted relative wildcard",
    ),
    "a substitution in a delayed expansion, !VAR:a=b!": (
        re.compile(r"![A-Za-z_][A-Za-z0-9_]*:[^!]*=[^!]*!"),
        "Wine's cmd gives it back literally: substitute with %VAR:a=b% outside ( ) blocks",
    ),
}


@pytest.mark.parametrize("script", list(SCRIPTS))
@pytest.mark.parametrize("construct", list(CMD_DIFFERENCES))
def test_no_form_wine_and_windows_cmd_run_differently(script: str, construct: str) -> None:
    pattern, reason = CMD_DIFFERENCES[construct]
    found = [line for line in code_lines(script) if pattern.search(line)]
    assert found == [], f"{construct}: {reason}"


def test_every_exist_test_of_a_variable_first_tests_that_it_is_defined() -> None:
    # `if exist ""` is a syntax error to Wine's cmd: a variable that may be empty (one a
    # build file sets empty; the files a build runs inherit it) is tested with `if defined`
    # on the same line first.
    lines = [line for script in BUILD for line in code_lines(script)]
    emptied = {match.group(1) for line in lines if (match := re.match(r'^set "(\w+)="$', line))}
    unguarded = [
        line
        for line in lines
        for name in re.findall(r'exist "[!%](\w+)[!%]"', line)
        if name in emptied and f"if defined {name} if exist" not in line
    ]
    assert unguarded == []


@pytest.mark.parametrize("script", list(SCRIPTS))
def test_no_conditional_command_operators(script: str) -> None:
    # Wine 8's cmd runs what follows `||` and `&&` whatever the status (it treats both as
    # `&`): a status is checked with `if errorlevel` on the next line instead.
    assert [line for line in code_lines(script) if "||" in line or "&&" in line] == []


@pytest.mark.parametrize("script", list(SCRIPTS))
def test_no_status_check_misses_a_crash(script: str) -> None:
    # `if errorlevel 1` is false for a negative status (0xC0000005 is -1073741819): after a
    # program, a call or pushd the check is `if !errorlevel! neq 0`. `if not errorlevel 1`
    # after findstr (0: found) is right as it is.
    found = [line for line in code_lines(script) if re.match(r"(?i)^if\s+errorlevel\s+\d", line)]
    assert found == []


@pytest.mark.parametrize("script", list(SCRIPTS))
def test_findstr_with_literals_of_different_lengths_ignores_case(script: str) -> None:
    # FINDSTR's documented bug: with several literal search strings of different lengths it
    # may miss the shorter one unless /i is given.
    for line in code_lines(script):
        for command in re.findall(r"(?i)\bfindstr\b[^|>]*", line):
            literals = re.findall(r'/c:"([^"]*)"', command)
            regex = re.search(r"(?i)\s/r\b", command)
            if len({len(s) for s in literals}) > 1 and not regex:
                assert re.search(r"(?i)\s/i\b", command), line


@pytest.mark.parametrize("script", list(SCRIPTS))
def test_robocopy_retries_a_failing_copy_for_at_most_a_minute(script: str) -> None:
    # robocopy's defaults are /R:1000000 /W:30: one locked file holds the job to its timeout.
    for line in code_lines(script):
        if re.match(r"(?i)^robocopy\b", line):
            retries = re.search(r"(?i)\s/R:(\d+)\b", line)
            wait = re.search(r"(?i)\s/W:(\d+)\b", line)
            assert retries and wait, line
            assert int(retries.group(1)) * int(wait.group(1)) <= 60, line


def path_variables(lines: list[str]) -> set[str]:
    """PATH_VARIABLES and every variable the lines set from one of them or to a path."""
    found = set(PATH_VARIABLES)
    for line in lines:
        for name, value in re.findall(r'set "(\w+)=([^"]*)"', line):
            used = set(re.findall(r"[%!](\w+)[%!]", value))
            if used & found or re.search(r"\w:\\|%~[a-z]*[dfp]", value):
                found.add(name)
    return found


@pytest.mark.parametrize("script", list(SCRIPTS))
def test_no_path_is_expanded_unquoted_while_a_block_is_read(script: str) -> None:
    # %VAR% inside ( ... ) is expanded when cmd reads the block: a ")" in the value
    # ("C:\Program Files (x86)\...") ends the block there. Quoted, or !VAR!, it is safe.
    # A build file inherits the paths the files before it set.
    lines = code_lines(script)
    inherited = [line for name in BUILD for line in code_lines(name)] if script in BUILD else []
    paths = path_variables(inherited + lines)
    depth, found = 0, []
    for line in lines:
        if depth:
            unquoted = re.sub(r'"[^"]*"', "", line)
            found += [line for name in re.findall(r"%(\w+)%", unquoted) if name in paths]
        depth += line.endswith("(") - line.startswith(")")
    assert found == []
