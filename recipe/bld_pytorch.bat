@echo on
rem The pytorch stage of recipe\bld.bat, once per Python: installs the compile stage's wheel
rem for the megabuild Python; any other Python retargets the configured tree with
rem cmake_cache (only Python-bound targets rebuild) and pip-installs torch; then moves
rem torch_python next to libtorch's DLLs. Run by bld_common.bat, whose settings it inherits.
setlocal EnableExtensions EnableDelayedExpansion

if not exist "%CMAKE_CACHE%" (
    echo bld.bat: error: !CMAKE_CACHE! does not exist; the top-level libtorch build configures it before any pytorch output; check the outputs in recipe\meta.yaml 1>&2
    exit /b 2
)
if not defined SP_DIR (
    echo bld.bat: error: SP_DIR is not set; run %RECIPE_FILE% through conda-build, which sets it 1>&2
    exit /b 2
)
rem This output's Python as the recipes' script env names it: the python variant as it is
rem ("3.14.* *_cp314t"), made X.Y, or X.Yt for a free-threaded one, which conda-build's PY_VER
rem (X.Y for both) cannot tell apart, as build_common.sh's python_label makes it (which says why
rem the recipes leave it to the scripts). Read from the environment: no argument to expand.
if not defined CF_TORCH_PYTHON (
    echo bld.bat: error: CF_TORCH_PYTHON is not set; pass it in script_env of the pytorch output in recipe\meta.yaml ^(its script env in recipe\recipe-v1.yaml^) 1>&2
    exit /b 2
)
"%PYTHON%" -c "import os, re, sys; s = os.environ['CF_TORCH_PYTHON']; v, _, b = s.partition(' '); v = v[:-2] if v.endswith('.*') else v; v += 't' if re.search(r'_cp\d+t$', b) else ''; ok = re.fullmatch(r'\d+\.\d+t?', v); print(v if ok else 'bld.bat: error: CF_TORCH_PYTHON=' + repr(s) + ' names no Python; give the python variant (3.14.* *_cp314t) or X.Y (X.Yt free-threaded)', file=sys.stdout if ok else sys.stderr); raise SystemExit(0 if ok else 2)" > "%SRC_DIR%\_python_label.txt"
if !errorlevel! neq 0 exit /b !errorlevel!
set /p CF_TORCH_PYTHON=<"%SRC_DIR%\_python_label.txt"
if defined PY_VER if not "%CF_TORCH_PYTHON%"=="%PY_VER%" if not "%CF_TORCH_PYTHON%"=="%PY_VER%t" (
    echo bld.bat: error: CF_TORCH_PYTHON='!CF_TORCH_PYTHON!' but PY_VER='!PY_VER!'; the pytorch output's script_env in recipe\meta.yaml must name its own Python 1>&2
    exit /b 2
)
rem In a cmd of its own, as bld.bat runs each file: its status is the check's.
cmd /d /s /c ""!RECIPE_DIR!\bld_python_is.bat" CF_TORCH_PYTHON"
if !errorlevel! neq 0 exit /b !errorlevel!
rem Every configure copies the BUILD_*, USE_* and CMAKE_* variables (and a few more) into the
rem cache, overwriting it (cmake\EnvVarForwarding.cmake); one that differs from the compile
rem stage's would recompile libtorch for this Python only, silently. Before the wheel
rem shortcut: a stage environment that differs is a recipe error either way.
"%PYTHON%" "%RECIPE_DIR%\stage_environment.py" compare "%STAGE_ENVIRONMENT%" --stage "%STAGE%" --fix "set the same in every stage (recipe\bld_common.bat, recipe\build_env.txt)"
if !errorlevel! neq 0 exit /b !errorlevel!
rem The compile stage's wheel, when it was built for this Python (the megabuild Python): by
rem its interpreter and ABI tags both, cp314-cp314 for 3.14 and cp314-cp314t for the
rem free-threaded 3.14t, so neither output takes the other's wheel.
"%PYTHON%" -c "import sys, sysconfig; v = 'cp{}{}'.format(*sys.version_info[:2]); print(v + '-' + v + ('t' if sysconfig.get_config_var('Py_GIL_DISABLED') else ''))" > "%SRC_DIR%\_python_wheel_tag.txt"
if !errorlevel! neq 0 exit /b !errorlevel!
set "PY_WHEEL_TAG="
set /p PY_WHEEL_TAG=<"%SRC_DIR%\_python_wheel_tag.txt"
call :find_megabuild_wheel
if !errorlevel! neq 0 exit /b !errorlevel!
if defined MEGABUILD_WHEEL goto :pytorch_from_megabuild_wheel
rem For scikit-build-core this rewrites .skbuild-info.json too: with another environment's
rem scikit-build-core recorded there, the backend would delete the compiled tree.
"%PYTHON%" -B "%RECIPE_DIR%\cmake_cache" retarget-python "%CMAKE_CACHE%" --python "%PYTHON%"
if !errorlevel! neq 0 exit /b !errorlevel!
rem Bytecode earlier phases wrote into the shared tree (code generators import modules
rem that setup.py packages as data, as torchgen\packaged is) would ship in this output,
rem compiled for another Python. for /d /r lists every directory with the name appended;
rem `do @if`: under echo on each directory's command would be echoed (thousands of lines).
for /d /r "%SRC_DIR%" %%d in (__pycache__) do @if exist "%%d" rmdir /s /q "%%d"
pushd "%SRC_DIR%"
if !errorlevel! neq 0 exit /b !errorlevel!
"%PYTHON%" -m pip install . --no-deps --no-build-isolation %BACKEND_ARGS% -v
if !errorlevel! neq 0 exit /b !errorlevel!
popd
goto :pytorch_installed

:pytorch_from_megabuild_wheel
rem Its bindings compiled in the compile stage, while the tree was this Python's.
echo bld.bat: installing the compile stage's %MEGABUILD_WHEEL%
"%PYTHON%" -m pip install "%MEGABUILD_WHEEL%" --no-deps --no-build-isolation -v
if !errorlevel! neq 0 exit /b !errorlevel!

:pytorch_installed
call :check_bytecode_matches_python
if !errorlevel! neq 0 exit /b !errorlevel!
rem The build backend imported tools\metadata from the source: its bytecode would ship in the
rem test files (source_files: tools), holding this machine's work path.
for /d /r "%SRC_DIR%" %%d in (__pycache__) do @if exist "%%d" rmdir /s /q "%%d"

rem torch_python.dll next to libtorch's DLLs for find_package(Torch) users, its import library
rem copied beside libtorch's (and kept in torch\lib, where torch.utils.cpp_extension links it
rem from); DLLs libtorch already ships are deleted here (torch\__init__.py adds %%LIBRARY_BIN%%
rem to the DLL search path), so each file belongs to one package; runtime DLLs a host package
rem provides are dropped; any other DLL left stops the build (recipe\package_files.py).
"%PYTHON%" "%RECIPE_DIR%\package_files.py" pytorch --platform win-64 --site-packages "%SP_DIR%" --prefix "%PREFIX%"
if !errorlevel! neq 0 exit /b !errorlevel!
rem site-packages' torch\share is gone with it (a copy of libtorch's Library\share, deleted as
rem conda-forge's bld.bat deletes it): find_package(Torch) finds Library\share\cmake.

rem torch.utils.cpp_extension compiles with torch\include only, where upstream's wheels carry
rem pybind11; USE_SYSTEM_PYBIND11 copies none. build.sh links the pybind11 package's headers
rem there; conda packages hold no symlinks on Windows, so this is a copy of the headers this
rem torch was compiled with (pybind11 stays a run requirement for its ABI pin).
set "PYBIND11_INC="
if not exist "%SP_DIR%\torch\include\pybind11" (
    for %%d in ("%LIBRARY_INC%\pybind11" "%PREFIX%\include\pybind11") do (
        if not defined PYBIND11_INC if exist "%%~d\pybind11.h" set "PYBIND11_INC=%%~d"
    )
    if not defined PYBIND11_INC (
        echo bld.bat: error: no pybind11\pybind11.h in !LIBRARY_INC! or !PREFIX!\include; keep pybind11 in the host requirements of the pytorch output in recipe\meta.yaml 1>&2
        exit /b 2
    )
    rem robocopy retries a file it cannot copy 1,000,000 times, 30 s apart, by default: one
    rem locked file would hold the job until its timeout. Its status 0 to 7 is success, 8 and
    rem up a failure, below 0 a crash.
    robocopy "!PYBIND11_INC!" "%SP_DIR%\torch\include\pybind11" /E /R:2 /W:5 /NFL /NDL /NJH /NJS
    if !errorlevel! lss 0 exit /b !errorlevel!
    if !errorlevel! geq 8 exit /b 1
)
exit /b 0

:find_megabuild_wheel
rem MEGABUILD_WHEEL: the compile stage's wheel for this Python (PY_WHEEL_TAG: its interpreter
rem and ABI tags), if it kept one.
rem A wildcard in a quoted path is expanded by Windows' cmd only (Wine's takes it literally):
rem the loop looks in the current directory, unquoted.
set "MEGABUILD_WHEEL="
if not exist "%MEGABUILD_WHEELS%" exit /b 0
pushd "%MEGABUILD_WHEELS%"
if !errorlevel! neq 0 exit /b !errorlevel!
for %%w in (torch-*-%PY_WHEEL_TAG%-*.whl) do set "MEGABUILD_WHEEL=%MEGABUILD_WHEELS%\%%w"
popd
exit /b 0

:check_bytecode_matches_python
rem Only what pip installed for this output (its RECORD): host packages are not ours. In
rem Python, with this output's interpreter and its cache tag: FINDSTR with several /c:
rem literals of different lengths can miss the shorter one (a documented FINDSTR bug), and
rem /v would then report this Python's own bytecode as another's.
"%PYTHON%" -B "%RECIPE_DIR%\foreign_bytecode.py" "%SP_DIR%" --fix "remove it before pip install in recipe\bld_pytorch.bat"
if !errorlevel! neq 0 exit /b !errorlevel!
exit /b 0
