"""recipe/bld.bat's stages held to build.sh's contract (recipe/README.md) by reading them.

No cmd.exe runs here (neither Windows nor Wine), so these tests read the batch files a
Windows build runs (tests/fixtures/bld_bat.py): the steps each stage takes and their order.
tests/test_bld_bat_cmd_rules.py holds them to what Microsoft's cmd and Wine's run alike;
tests/test_bld_bat_one_liners.py runs the Python they embed.
"""

from __future__ import annotations

import re

from fixtures.bld_bat import (
    DISPATCHER,
    build_env,
    build_files,
    code,
    section,
    stage_files,
    text,
)

COMMON = text("bld_common.bat")
COMPILE = text("bld_compile.bat")
LIBTORCH = text("bld_libtorch.bat")
PYTORCH = text("bld_pytorch.bat")
#: bld_common.bat's last step: the stage's file, which inherits what it set.
RUN_STAGE = 'cmd /d /s /c ""!RECIPE_DIR!\\!STAGE_FILE!""'


def before_the_stage() -> str:
    """What bld_common.bat does before it runs the stage's file: every stage gets it."""
    return COMMON[: COMMON.index(RUN_STAGE)]


def test_every_stage_runs_its_own_file() -> None:
    assert stage_files() == {
        "compile": "bld_compile.bat",
        "libtorch-build": "bld_compile.bat",
        "libtorch": "bld_libtorch.bat",
        "pytorch": "bld_pytorch.bat",
    }


def test_the_shared_table_is_read_before_any_stage_runs() -> None:
    # CMAKE_INSTALL_ALWAYS among them: each Python's torch_python replaces a file an install
    # wrote moments earlier, so every install must copy.
    assert build_env()["CMAKE_INSTALL_ALWAYS"] == "1"
    read = 'for /f "usebackq eol=# tokens=1,* delims==" %%a in ("%RECIPE_DIR%\\build_env.txt")'
    assert f'{read} do set "%%a=%%b"' in code(before_the_stage())


def test_no_batch_file_sets_a_variable_the_shared_table_holds() -> None:
    # One value in one place: build.sh reads the same table.
    for name in build_files():
        sets = set(re.findall(r'\bset "(\w+)=', text(name)))
        assert not sets & set(build_env()), name


def test_cmake_prefix_path_extends_the_value_conda_set() -> None:
    assignments = [line for line in code(COMMON) if 'set "CMAKE_PREFIX_PATH=' in line]
    assert assignments == [
        'if defined CMAKE_PREFIX_PATH set "CMAKE_PREFIX_PATH=%LIBRARY_PREFIX%;!CMAKE_PREFIX_PATH!"',
        'if not defined CMAKE_PREFIX_PATH set "CMAKE_PREFIX_PATH=%LIBRARY_PREFIX%"',
    ]


def test_no_install_prefix_is_appended_to_cmake_args() -> None:
    for name in ("bld_common.bat", "bld_compile.bat", "bld_pytorch.bat"):
        lines = code(text(name))
        assert not [line for line in lines if "CMAKE_ARGS=" in line and "INSTALL_PREFIX" in line]


def test_filtered_cmake_args_replace_condas_before_any_stage_runs() -> None:
    head = before_the_stage()
    filtered = head.index('> "%SRC_DIR%\\_cmake_args.txt"')
    cleared = head.index('set "CMAKE_ARGS="')
    read_back = head.index('in ("%SRC_DIR%\\_cmake_args.txt") do set "CMAKE_ARGS=%%a"')
    assert filtered < cleared < read_back


def test_unset_megabuild_python_is_reported_with_the_file_that_sets_it() -> None:
    check = COMPILE.index("if not defined CF_TORCH_MEGABUILD_PYTHON (")
    message = COMPILE[check:].splitlines()[1]
    assert "CF_TORCH_MEGABUILD_PYTHON is not set" in message
    assert "script_env" in message and "recipe\\meta.yaml" in message
    python_is = COMPILE.index('bld_python_is.bat" CF_TORCH_MEGABUILD_PYTHON"')
    assert check < python_is < COMPILE.index("-m pip wheel")


def test_pytorch_stage_requires_sp_dir_and_checks_its_python_before_installing() -> None:
    install = PYTORCH.index("-m pip install")
    assert PYTORCH.index("if not defined SP_DIR (") < install
    assert PYTORCH.index('bld_python_is.bat" CF_TORCH_PYTHON"') < install


def test_python_is_names_variable_value_and_file_on_mismatch() -> None:
    lines = code(text("bld_python_is.bat"))
    message = next(line for line in lines if "bld.bat: error:" in line)
    assert "%~1='!PY_EXPECTED!'" in message and "PYTHON='!PYTHON!'" in message
    assert "recipe\\meta.yaml" in message
    assert 'set "PY_EXPECTED=!%~1!"' in lines


def test_bytecode_is_checked_against_this_pythons_cache_tag_after_pip_install() -> None:
    installs = [match.start() for match in re.finditer("-m pip install", PYTORCH)]
    assert len(installs) == 2  # the kept tree, or the megabuild Python's wheel
    assert max(installs) < PYTORCH.index("call :check_bytecode_matches_python")
    check = section(PYTORCH, "check_bytecode_matches_python")
    # Run by this output's own Python, which knows its cache tag (tests/test_foreign_bytecode.py).
    assert '"%PYTHON%" -B "%RECIPE_DIR%\\foreign_bytecode.py" "%SP_DIR%"' in check


def test_every_stage_knows_the_sources_backend_before_building() -> None:
    # bld_common.bat asks before it runs any stage's file.
    assert "call :detect_build_backend" in code(before_the_stage())
    assert "BACKEND_ARGS" in section(COMMON, "detect_build_backend")
    assert "%BACKEND_ARGS%" in COMPILE and "%BACKEND_ARGS%" in PYTORCH


def test_scikit_build_core_builds_every_python_in_the_same_kept_build_dir() -> None:
    # The compile stage's wheel and every pytorch output's install name one build-dir.
    build_dirs = re.findall(r"--config-settings=build-dir=\"?([^\" ]+)", COMMON)
    assert build_dirs == ["!BUILD_DIR!"]
    (wheel,) = [line for line in code(COMPILE) if "-m pip wheel ." in line]
    (install,) = [line for line in code(PYTORCH) if "-m pip install ." in line]
    assert "%BACKEND_ARGS%" in wheel and "%BACKEND_ARGS%" in install


def test_the_compile_stage_keeps_the_megabuild_pythons_wheel_and_only_its_own() -> None:
    # The megabuild Python's output installs it (issue 38 item 9); a wheel an earlier
    # compile left there would be installed in its place.
    build = COMPILE.index('--wheel-dir "%MEGABUILD_WHEELS%"')
    assert COMPILE.index('rmdir /s /q "%MEGABUILD_WHEELS%"') < build
    assert "MEGABUILD_WHEELS" not in COMPILE[build:].split("\n", 1)[1]
    assert 'set "MEGABUILD_WHEELS=%SRC_DIR%\\_stage\\megabuild-wheel"' in before_the_stage()


def test_the_compile_stage_stops_before_installing_and_writes_its_marker_last() -> None:
    steps = [
        'if exist "%COMPILED_MARKER%" del "%COMPILED_MARKER%"',
        "-m pip wheel . --no-deps",
        '> "%COMPILED_MARKER%"',
    ]
    positions = [COMPILE.index(step) for step in steps]
    assert positions == sorted(positions)
    assert code(COMPILE)[-1] == "exit /b 0"
    assert "package_files.py" not in COMPILE


def test_libtorch_compiles_only_in_a_work_directory_no_compile_stage_compiled() -> None:
    steps = [
        'if exist "%COMPILED_MARKER%" goto :libtorch_install',
        'cmd /d /s /c ""!RECIPE_DIR!\\bld_compile.bat""',
        "\n:libtorch_install\n",
        'package_files.py" libtorch --platform win-64 --tree "%TORCH_TREE%"',
    ]
    positions = [LIBTORCH.index(step) for step in steps]
    assert positions == sorted(positions)


def test_the_megabuild_pythons_output_installs_the_kept_wheel_without_retargeting() -> None:
    shortcut = PYTORCH.index("if defined MEGABUILD_WHEEL goto :pytorch_from_megabuild_wheel")
    assert PYTORCH.index('bld_python_is.bat" CF_TORCH_PYTHON"') < shortcut
    assert shortcut < PYTORCH.index("retarget-python") < PYTORCH.index("goto :pytorch_installed")
    from_wheel = section(PYTORCH, "pytorch_from_megabuild_wheel")
    assert '-m pip install "%MEGABUILD_WHEEL%" --no-deps --no-build-isolation' in from_wheel
    assert "retarget-python" not in from_wheel and "goto" not in from_wheel
    assert (
        section(PYTORCH, "pytorch_installed")
        .lstrip("\n")
        .startswith(":pytorch_installed\ncall :check_bytecode_matches_python")
    )


def test_the_compile_stage_records_the_forwarded_environment_before_configuring() -> None:
    record = COMPILE.index('stage_environment.py" record "%STAGE_ENVIRONMENT%"')
    assert record < COMPILE.index("-m pip wheel")
    environment = 'set "STAGE_ENVIRONMENT=%SRC_DIR%\\_stage\\forwarded-environment.json"'
    assert environment in before_the_stage()


def test_every_pytorch_output_compares_its_environment_before_any_install() -> None:
    (compare,) = [line for line in code(PYTORCH) if 'stage_environment.py" compare' in line]
    assert '"%STAGE_ENVIRONMENT%" --stage "%STAGE%" --fix "' in compare
    assert "recipe\\bld_common.bat" in compare.split("--fix", 1)[1]
    position = PYTORCH.index('stage_environment.py" compare')
    assert position < PYTORCH.index("if defined MEGABUILD_WHEEL goto")
    assert position < PYTORCH.index("retarget-python")


def test_the_compile_stage_checks_a_kept_trees_abi_before_compiling() -> None:
    check = COMPILE.index('cmake_cache.py" check-abi "!CMAKE_CACHE!" --python "!PYTHON!"')
    assert COMPILE.index('bld_python_is.bat" CF_TORCH_MEGABUILD_PYTHON"') < check
    assert check < COMPILE.index("-m pip wheel")


def test_a_pytorch_output_needs_its_python_named_by_the_recipes() -> None:
    check = PYTORCH.index("if not defined CF_TORCH_PYTHON (")
    message = PYTORCH[check:].splitlines()[1]
    assert "CF_TORCH_PYTHON is not set" in message and "recipe\\meta.yaml" in message
    assert check < PYTORCH.index('bld_python_is.bat" CF_TORCH_PYTHON"')


def test_cuda_arch_list_is_the_win_64_row_read_by_the_helper() -> None:
    lines = code(before_the_stage())
    (call,) = [line for line in lines if "cuda_arch_list.py" in line]
    assert call.startswith(
        '"%PYTHON%" "%RECIPE_DIR%\\cuda_arch_list.py" "%RECIPE_DIR%\\cuda_arch_lists.txt" '
        '"%cuda_compiler_version%" win-64 > "%SRC_DIR%\\_cuda_arch_list.txt"'
    ), call
    # the only values it takes: cleared, then the helper's output read back
    for name in stage_files().values():
        assert 'set "TORCH_CUDA_ARCH_LIST=' not in text(name), name
    values = re.findall(r'set "TORCH_CUDA_ARCH_LIST=([^"]*)"', COMMON)
    assert values == ["", "%%a"], values
    read_back = lines.index(call) + 2
    assert lines[read_back].startswith('for /f "usebackq delims=" %%a in ("%SRC_DIR%\\_cuda_arch')


def test_the_dispatcher_names_every_variant_key_the_stage_files_read() -> None:
    # conda-build finds the variant keys a script uses by reading the file the recipe names
    # (bld.bat), not the files it runs: a key read only there would not count as used.
    dispatcher = DISPATCHER.read_text()
    for name in ("bld_common.bat", *stage_files().values()):
        for key in set(re.findall(r"%([a-z][a-z0-9_]*)%", text(name))):
            assert f"%{key}%" in dispatcher, f"{name} reads %{key}%, which bld.bat never names"


def test_each_file_succeeds_only_at_its_success_ends() -> None:
    # Every other exit is a failure's: its status, or 2 after an error line.
    zero = {
        # the unset-variable note
        "bld.bat": ["exit /b 0"],
        # the backend detection
        "bld_common.bat": ["exit /b 0"],
        "bld_compile.bat": ["exit /b 0"],
        # a CPU-only libtorch needs no activation scripts; the activation's end
        "bld_libtorch.bat": ['if "%cuda_compiler_version%"=="None" exit /b 0', "exit /b 0"],
        # the stage's end, the wheel lookup (none kept, or found), the bytecode check
        "bld_pytorch.bat": [
            "exit /b 0",
            'if not exist "%MEGABUILD_WHEELS%" exit /b 0',
            "exit /b 0",
            "exit /b 0",
        ],
        "bld_python_is.bat": ["exit /b 0"],
    }
    found = {
        name: [line for line in code(text(name)) if line.endswith("exit /b 0")]
        for name in build_files()
    }
    assert found == zero
