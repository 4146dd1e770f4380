"""recipe/bld.bat held to build.sh's contract (recipe/README.md) by reading it.

No cmd.exe runs here (neither Windows nor Wine), so these tests read the script: the
steps it must take, their order, and that every failure stops it with a non-zero
status. The Python one-liners it embeds are real programs and are run.
"""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

BLD_BAT = Path(__file__).resolve().parents[1] / "recipe" / "bld.bat"
ROOT = BLD_BAT.parents[1]
TEXT = BLD_BAT.read_text()
CODE = [
    line.strip()
    for line in TEXT.splitlines()
    if line.strip() and not line.lstrip().lower().startswith("rem")
]
#: The one status check after a program, a `call` or `pushd` (a crash's negative status too).
ERRORLEVEL_CHECK = "if !errorlevel! neq 0 exit /b !errorlevel!"


def section(label: str) -> str:
    """The lines from `:label` up to the next label."""
    start = TEXT.index(f"\n:{label}\n")
    end = TEXT.find("\n:", start + 1)
    return TEXT[start : end if end != -1 else len(TEXT)]


def phase(label: str) -> str:
    """A phase with its own sub-labels: from `:label` up to the next label not `label_*`."""
    start = TEXT.index(f"\n:{label}\n")
    ends = [
        match.start()
        for match in re.finditer(r"^:(\w+)$", TEXT[start + 2 :], flags=re.MULTILINE)
        if not match.group(1).startswith(f"{label}_")
    ]
    return TEXT[start : start + 2 + ends[0] if ends else len(TEXT)]


def preamble() -> str:
    """Everything before the dispatch: what every phase runs."""
    return TEXT[: TEXT.index('if "%STAGE%"==')]


def python_one_liner(marker: str) -> str:
    """The code of the `"%PYTHON%" -c "..."` line containing marker."""
    (line,) = [line for line in CODE if line.startswith('"%PYTHON%" -c') and marker in line]
    return re.match(r'"%PYTHON%" -c "([^"]*)"', line).group(1)


def next_code_line(index: int) -> str:
    return CODE[index + 1]


def test_cmake_install_always_is_set_before_any_build_step() -> None:
    assert 'set "CMAKE_INSTALL_ALWAYS=1"' in preamble()
    position = TEXT.index('set "CMAKE_INSTALL_ALWAYS=1"')
    assert position < TEXT.index("-m pip wheel")
    assert position < TEXT.index("-m pip install")


def test_cmake_prefix_path_extends_the_value_conda_set() -> None:
    assignments = [line for line in CODE if 'set "CMAKE_PREFIX_PATH=' in line]
    assert assignments == [
        'if defined CMAKE_PREFIX_PATH set "CMAKE_PREFIX_PATH=%LIBRARY_PREFIX%;!CMAKE_PREFIX_PATH!"',
        'if not defined CMAKE_PREFIX_PATH set "CMAKE_PREFIX_PATH=%LIBRARY_PREFIX%"',
    ]


def test_no_install_prefix_is_appended_to_cmake_args() -> None:
    assert not [line for line in CODE if "CMAKE_ARGS=" in line and "CMAKE_INSTALL_PREFIX" in line]


@pytest.mark.parametrize(
    ("cmake_args", "kept"),
    [
        (
            (
                "-GNinja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=C:/bld/_h_env/Library "
                "-DCMAKE_PROGRAM_PATH=C:/a;C:/b"
            ),
            "-GNinja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PROGRAM_PATH=C:/a;C:/b",
        ),
        ("-DCMAKE_INSTALL_PREFIX:PATH=C:/x -DFOO=1", "-DFOO=1"),
        ("-DCMAKE_INSTALL_PREFIX_EXTRA=1", "-DCMAKE_INSTALL_PREFIX_EXTRA=1"),
        ("", ""),
    ],
    ids=["conda-default", "typed", "longer-name-kept", "empty"],
)
def test_cmake_args_filter_drops_only_condas_install_prefix(cmake_args: str, kept: str) -> None:
    code = python_one_liner("CMAKE_ARGS")
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "CMAKE_ARGS": cmake_args},
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == kept


def test_filtered_cmake_args_replace_condas_before_the_dispatch() -> None:
    head = preamble()
    filtered = head.index('> "%SRC_DIR%\\_cmake_args.txt"')
    cleared = head.index('set "CMAKE_ARGS="')
    read_back = head.index('in ("%SRC_DIR%\\_cmake_args.txt") do set "CMAKE_ARGS=%%a"')
    assert filtered < cleared < read_back


def test_unset_megabuild_python_is_reported_with_the_file_that_sets_it() -> None:
    libtorch = section("libtorch")
    check = libtorch.index("if not defined CF_TORCH_MEGABUILD_PYTHON (")
    message = libtorch[check:].splitlines()[1]
    assert "CF_TORCH_MEGABUILD_PYTHON is not set" in message
    assert "script_env" in message and "recipe\\meta.yaml" in message
    assert (
        check
        < libtorch.index("call :python_is CF_TORCH_MEGABUILD_PYTHON")
        < libtorch.index("-m pip wheel")
    )


def test_pytorch_phase_requires_sp_dir_and_checks_py_ver_before_installing() -> None:
    pytorch = section("pytorch")
    install = pytorch.index("-m pip install")
    assert pytorch.index("if not defined SP_DIR (") < install
    assert pytorch.index('call :python_is CF_TORCH_PYTHON "%CF_TORCH_PYTHON%"') < install


def run_as(code: str, gil_disabled: bool) -> str:
    """A one-liner's output under this interpreter, its sysconfig answering
    ``Py_GIL_DISABLED`` as a free-threaded (``--disable-gil``) build's does when asked to."""
    shim = (
        "import sysconfig; get = sysconfig.get_config_var; "
        "sysconfig.get_config_var = lambda n: 1 if n == 'Py_GIL_DISABLED' else get(n); "
    )
    return subprocess.run(
        [sys.executable, "-c", (shim if gil_disabled else "") + code],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


@pytest.mark.parametrize(("gil_disabled", "suffix"), [(False, ""), (True, "t")])
def test_python_version_probe_prints_major_dot_minor_and_t_when_free_threaded(
    gil_disabled: bool, suffix: str
) -> None:
    code = python_one_liner("_python_version.txt")
    assert run_as(code, gil_disabled) == "{}.{}".format(*sys.version_info[:2]) + suffix


def test_python_is_names_variable_value_and_file_on_mismatch() -> None:
    python_is = section("python_is")
    message = next(line for line in python_is.splitlines() if "bld.bat: error:" in line)
    assert "%~1='%~2'" in message and "PYTHON='!PYTHON!'" in message
    assert "recipe\\meta.yaml" in message


def test_bytecode_is_checked_against_this_pythons_cache_tag_after_pip_install() -> None:
    pytorch = phase("pytorch")
    installs = [match.start() for match in re.finditer("-m pip install", pytorch)]
    assert len(installs) == 2  # the kept tree, or the megabuild Python's wheel
    assert max(installs) < pytorch.index("call :check_bytecode_matches_python")
    check = section("check_bytecode_matches_python")
    # Run by this output's own Python, which knows its cache tag (tests/test_foreign_bytecode.py).
    assert '"%PYTHON%" -B "%RECIPE_DIR%\\foreign_bytecode.py" "%SP_DIR%"' in check


def test_every_error_message_is_one_line_followed_by_exit_2() -> None:
    errors = [i for i, line in enumerate(CODE) if line.startswith("echo bld.bat: error:")]
    assert len(errors) >= 9
    for index in errors:
        assert CODE[index].endswith("1>&2"), CODE[index]
        assert next_code_line(index) == "exit /b 2", CODE[index]


def test_every_error_message_names_what_to_edit_or_run() -> None:
    for line in CODE:
        if line.startswith("echo bld.bat: error:"):
            assert "recipe\\" in line or "%RECIPE_FILE%" in line, line


def test_every_exit_is_batch_local_and_nonzero_outside_success_paths() -> None:
    exits = [line for line in CODE if re.search(r"\bexit\b", line)]
    assert all("exit /b " in line for line in exits), [
        line for line in exits if "exit /b " not in line
    ]
    zero = [line for line in exits if line.endswith("exit /b 0")]
    # the success ends: the compile stage (recipe-v1.yaml's staging output), the phases,
    # the CPU-only libtorch shortcut, the backend detection, the two checks, the wheel
    # lookup (none kept, or found) and the unset-variable note
    assert zero == [
        "if defined COMPILE_ONLY exit /b 0",
        'if "%cuda_compiler_version%"=="None" exit /b 0',
        "exit /b 0",
        "exit /b 0",
        "exit /b 0",
        "exit /b 0",
        "exit /b 0",
        'if not exist "%MEGABUILD_WHEELS%" exit /b 0',
        "exit /b 0",
        "exit /b 0",
    ]


@pytest.mark.parametrize(
    "command",
    ['"%PYTHON%"', "call :", "move ", "copy ", "pushd "],
)
def test_every_command_that_can_fail_is_followed_by_an_errorlevel_check(command: str) -> None:
    calls = [i for i, line in enumerate(CODE) if line.startswith(command)]
    assert calls or command in ("move ", "copy ")
    for index in calls:
        following = next_code_line(index)
        if following == "exit /b %ERRORLEVEL%":
            continue  # a subroutine handing its last status back
        assert following == ERRORLEVEL_CHECK, f"{CODE[index]!r} is followed by {following!r}"


def test_every_jump_target_exists() -> None:
    labels = set(re.findall(r"^:(\w+)$", TEXT, flags=re.MULTILINE))
    targets = set(re.findall(r"\b(?:goto|call) :(\w+)", TEXT))
    assert targets <= labels, targets - labels


def test_variable_values_inside_blocks_that_hold_paths_use_delayed_expansion() -> None:
    # %VAR% inside ( ... ) is expanded when the block is parsed; a path with ")" such as
    # "Program Files (x86)" would end the block early. !VAR! is expanded afterwards.
    for line in CODE:
        if line.startswith("echo bld.bat: error:"):
            for name in ("PYTHON", "SP_DIR", "CMAKE_CACHE", "TORCH_RECORD"):
                assert f"%{name}%" not in line, line


def test_every_phase_asks_the_source_for_its_backend_before_building() -> None:
    compile_ = section("libtorch")
    detect = compile_.index("call :detect_build_backend")
    assert detect < compile_.index("-m pip wheel")
    install = section("libtorch_install")
    assert install.index("call :detect_build_backend") < install.index("TORCH_TREE")
    pytorch = section("pytorch")
    detect = pytorch.index("call :detect_build_backend")
    assert detect < pytorch.index("retarget-python") < pytorch.index("-m pip install")


def test_scikit_build_core_builds_every_python_in_the_same_kept_build_dir() -> None:
    # The compile stage's wheel and every pytorch output's install name one build-dir.
    build_dirs = re.findall(r"--config-settings=build-dir=\"?([^\" ]+)", TEXT)
    assert build_dirs == ["!BUILD_DIR!"]
    assert "BACKEND_ARGS" in section("detect_build_backend")
    (wheel,) = [line for line in CODE if "-m pip wheel ." in line]
    (install,) = [line for line in CODE if "-m pip install ." in line]
    assert "%BACKEND_ARGS%" in wheel and "%BACKEND_ARGS%" in install


def test_the_compile_stage_keeps_the_megabuild_pythons_wheel_and_only_its_own() -> None:
    # The megabuild Python's output installs it (issue 38 item 9); a wheel an earlier
    # compile left there would be installed in its place.
    compile_ = section("libtorch")
    build = compile_.index('--wheel-dir "%MEGABUILD_WHEELS%"')
    assert compile_.index('rmdir /s /q "%MEGABUILD_WHEELS%"') < build
    assert "MEGABUILD_WHEELS" not in compile_[build:].split("\n", 1)[1]
    assert 'set "MEGABUILD_WHEELS=%SRC_DIR%\\_stage\\megabuild-wheel"' in preamble()


def test_the_megabuild_pythons_output_installs_the_kept_wheel_without_retargeting() -> None:
    pytorch = section("pytorch")
    shortcut = pytorch.index("if defined MEGABUILD_WHEEL goto :pytorch_from_megabuild_wheel")
    assert pytorch.index('call :python_is CF_TORCH_PYTHON "%CF_TORCH_PYTHON%"') < shortcut
    assert shortcut < pytorch.index("retarget-python") < pytorch.index("goto :pytorch_installed")
    from_wheel = section("pytorch_from_megabuild_wheel")
    assert '-m pip install "%MEGABUILD_WHEEL%" --no-deps --no-build-isolation' in from_wheel
    assert "retarget-python" not in from_wheel and "goto" not in from_wheel
    assert (
        section("pytorch_installed")
        .lstrip("\n")
        .startswith(":pytorch_installed\ncall :check_bytecode_matches_python")
    )


def test_the_compile_stage_records_the_forwarded_environment_before_configuring() -> None:
    compile_ = section("libtorch")
    record = compile_.index('stage_environment.py" record "%STAGE_ENVIRONMENT%"')
    assert compile_.index("call :detect_build_backend") < record < compile_.index("-m pip wheel")
    assert 'set "STAGE_ENVIRONMENT=%SRC_DIR%\\_stage\\forwarded-environment.json"' in preamble()


def test_every_pytorch_output_compares_its_environment_before_any_install() -> None:
    pytorch = section("pytorch")
    (compare,) = [line for line in CODE if 'stage_environment.py" compare' in line]
    assert '"%STAGE_ENVIRONMENT%" --stage "%STAGE%" --fix "' in compare
    assert "%RECIPE_FILE%" in compare.split("--fix", 1)[1]
    position = pytorch.index('stage_environment.py" compare')
    assert pytorch.index("call :detect_build_backend") < position
    assert position < pytorch.index("if defined MEGABUILD_WHEEL goto")
    assert position < pytorch.index("retarget-python")


def test_the_kept_wheel_is_found_by_this_pythons_wheel_tag_only() -> None:
    # The one-liner is run, and the script's pattern is matched against upstream's
    # Windows wheel names (PyPI, torch 2.13.0 and 2.15.0).
    here = "cp{}{}".format(*sys.version_info[:2])
    assert run_as(python_one_liner("'cp{}{}'"), gil_disabled=False) == f"{here}-{here}"
    cp312 = _wheel_pattern("cp312-cp312")
    assert fnmatch.fnmatchcase("torch-2.15.0-cp312-cp312-win_amd64.whl", cp312)
    assert fnmatch.fnmatchcase("torch-2.13.0+cpu-cp312-cp312-win_amd64.whl", cp312)
    assert not fnmatch.fnmatchcase("torch-2.15.0-cp313-cp313-win_amd64.whl", cp312)


def _wheel_pattern(tag: str) -> str:
    (loop,) = [line for line in CODE if line.startswith("for %%w in (")]
    pattern = re.search(r"\((torch-[^)]+\.whl)\)", loop).group(1)
    return pattern.replace("%PY_WHEEL_TAG%", tag)


def test_a_free_threaded_python_and_one_with_the_gil_never_take_each_others_wheel() -> None:
    # Upstream tags its free-threaded wheels cp314-cp314t (torch 2.15.0 on PyPI).
    here = "cp{}{}".format(*sys.version_info[:2])
    assert run_as(python_one_liner("'cp{}{}'"), gil_disabled=True) == f"{here}-{here}t"
    gil, free = _wheel_pattern("cp314-cp314"), _wheel_pattern("cp314-cp314t")
    assert fnmatch.fnmatchcase("torch-2.15.0-cp314-cp314t-win_amd64.whl", free)
    assert not fnmatch.fnmatchcase("torch-2.15.0-cp314-cp314t-win_amd64.whl", gil)
    assert not fnmatch.fnmatchcase("torch-2.15.0-cp314-cp314-win_amd64.whl", free)


def test_the_compile_stage_checks_a_kept_trees_abi_before_compiling() -> None:
    compile_ = section("libtorch")
    check = compile_.index('cmake_cache" check-abi "!CMAKE_CACHE!" --python "!PYTHON!"')
    assert compile_.index("call :python_is CF_TORCH_MEGABUILD_PYTHON") < check
    assert check < compile_.index("-m pip wheel")


def test_a_pytorch_output_needs_its_python_named_by_the_recipes() -> None:
    pytorch = section("pytorch")
    check = pytorch.index("if not defined CF_TORCH_PYTHON (")
    message = pytorch[check:].splitlines()[1]
    assert "CF_TORCH_PYTHON is not set" in message and "recipe\\meta.yaml" in message
    assert check < pytorch.index('call :python_is CF_TORCH_PYTHON "%CF_TORCH_PYTHON%"')


ARCH_LIST_HELPER = BLD_BAT.parent / "cuda_arch_list.py"
ARCH_LISTS = BLD_BAT.parent / "cuda_arch_lists.txt"


def test_cuda_arch_list_is_the_win_64_row_read_by_the_helper() -> None:
    (call,) = [line for line in CODE if "cuda_arch_list.py" in line]
    assert call.startswith(
        '"%PYTHON%" "%RECIPE_DIR%\\cuda_arch_list.py" "%RECIPE_DIR%\\cuda_arch_lists.txt" '
        '"%cuda_compiler_version%" win-64 > "%SRC_DIR%\\_cuda_arch_list.txt"'
    ), call
    # the only values it takes: cleared, then the helper's output read back
    values = re.findall(r'set "TORCH_CUDA_ARCH_LIST=([^"]*)"', TEXT)
    assert values == ["", "%%a"], values
    read_back = CODE.index(call) + 2
    assert CODE[read_back].startswith('for /f "usebackq delims=" %%a in ("%SRC_DIR%\\_cuda_arch')


def test_the_helper_prints_every_win_64_row_of_the_recipes_file() -> None:
    from tools.cuda_archs import read_rows

    rows = read_rows(ARCH_LISTS)
    win = sorted(cuda for cuda, platform in rows if platform == "win-64")
    if not win:
        pytest.skip(f"{ARCH_LISTS} has no win-64 row (the feedstock builds no Windows CUDA)")
    for cuda in win:
        result = subprocess.run(
            [sys.executable, str(ARCH_LIST_HELPER), str(ARCH_LISTS), cuda, "win-64"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert result.stdout == rows[(cuda, "win-64")] + "\n", cuda


def test_the_helper_stops_the_build_with_one_error_line_when_no_row_exists() -> None:
    # 0.0: a CUDA version no row can name
    result = subprocess.run(
        [sys.executable, str(ARCH_LIST_HELPER), str(ARCH_LISTS), "0.0", "win-64"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ") and str(ARCH_LISTS) in line and "0.0 win-64" in line


# Forms Windows' cmd and Wine 8's cmd run differently (issue 42; tests/test_bld_bat_wine.py
# runs the script under Wine). Each: a pattern over bld.bat's code lines, and why it is avoided.
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


@pytest.mark.parametrize("construct", list(CMD_DIFFERENCES))
def test_bld_bat_avoids_forms_wine_and_windows_cmd_run_differently(construct: str) -> None:
    pattern, reason = CMD_DIFFERENCES[construct]
    found = [line for line in CODE if pattern.search(line)]
    assert found == [], f"{construct}: {reason}"


def test_every_exist_test_of_a_variable_first_tests_that_it_is_defined() -> None:
    # `if exist ""` is a syntax error to Wine's cmd: a variable that may be empty (one the
    # script sets empty) is tested with `if defined` on the same line first.
    emptied = {match.group(1) for line in CODE if (match := re.match(r'^set "(\w+)="$', line))}
    unguarded = [
        line
        for line in CODE
        for name in re.findall(r'exist "[!%](\w+)[!%]"', line)
        if name in emptied and f"if defined {name} if exist" not in line
    ]
    assert unguarded == []


@pytest.mark.parametrize("script", ["recipe/bld.bat", ".scripts/run_win_build.bat"])
def test_no_conditional_command_operators(script: str) -> None:
    # Wine 8's cmd runs what follows `||` and `&&` whatever the status (it treats both as
    # `&`): a status is checked with `if errorlevel` on the next line instead.
    lines = (BLD_BAT.parents[1] / script).read_text().splitlines()
    code = [line for line in lines if not line.lstrip().lower().startswith("rem")]
    assert [line for line in code if "||" in line or "&&" in line] == []


# Microsoft's cmd where it differs from Wine's, which the Wine tests cannot show (issue 49;
# docs/testing.md, "Wine's cmd and Microsoft's"). One rule per construct, over both scripts.
SCRIPTS = {
    "recipe/bld.bat": BLD_BAT,
    ".scripts/run_win_build.bat": ROOT / ".scripts" / "run_win_build.bat",
}
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
    text = SCRIPTS[script].read_text()
    return [
        line.strip() for line in text.splitlines() if not line.strip().lower().startswith("rem")
    ]


def path_variables(lines: list[str]) -> set[str]:
    """PATH_VARIABLES and every variable the script sets from one of them or to a path."""
    found = set(PATH_VARIABLES)
    for line in lines:
        for name, value in re.findall(r'set "(\w+)=([^"]*)"', line):
            used = set(re.findall(r"[%!](\w+)[%!]", value))
            if used & found or re.search(r"\w:\\|%~[a-z]*[dfp]", value):
                found.add(name)
    return found


def test_the_copy_conda_build_inlines_looks_up_no_label_before_handing_over() -> None:
    # conda-build writes the top-level build's conda_build.bat with LF line ends only; Microsoft's
    # cmd can miss a label straddling a 512-byte read in such a file. The copy hands over to
    # the recipe's CRLF file (read from disk) before any goto or call :label.
    hand_over = next(i for i, line in enumerate(CODE) if "!RECIPE_DIR!\\bld.bat" in line)
    assert CODE[hand_over] == 'cmd /d /s /c ""!RECIPE_DIR!\\bld.bat""'
    assert CODE[hand_over + 1] == "exit /b !errorlevel!"
    before = CODE[:hand_over]
    assert not [line for line in before if re.search(r"\bgoto\b|\bcall\s+:|^:", line)], before


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


@pytest.mark.parametrize("script", list(SCRIPTS))
def test_no_path_is_expanded_unquoted_while_a_block_is_read(script: str) -> None:
    # %VAR% inside ( ... ) is expanded when cmd reads the block: a ")" in the value
    # ("C:\Program Files (x86)\...") ends the block there. Quoted, or !VAR!, it is safe.
    lines = code_lines(script)
    paths = path_variables(lines)
    depth, found = 0, []
    for line in lines:
        if depth:
            unquoted = re.sub(r'"[^"]*"', "", line)
            found += [line for name in re.findall(r"%(\w+)%", unquoted) if name in paths]
        depth += line.endswith("(") - line.startswith(")")
    assert found == []
