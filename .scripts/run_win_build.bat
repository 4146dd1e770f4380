@echo off
rem Build one config on Windows: micromamba into %MINIFORGE_HOME%, the build tools
rem into it, then conda-build for .ci_support\%CONFIG%.yaml.  Same environment as
rem conda-smithy's script: CONFIG, UPLOAD_PACKAGES, IS_PR_BUILD, MINIFORGE_HOME, CPU_COUNT.
rem Settings (conda_build_tool, conda_build.pkg_format) are read from conda-forge.yml.
setlocal EnableExtensions EnableDelayedExpansion
rem A status is checked with `if !errorlevel! neq 0` on the next line, as conda-smithy's
rem template checks it: `if errorlevel 1` is false for a crash (a negative NTSTATUS such as
rem -1073741819), and Wine's cmd runs what follows `||` or `&&` whatever the status
rem (tests/e2e/test_run_win_build_wine.py runs this script under Wine). Inside a ( ) block a path
rem is expanded late (!VAR!) or quoted: %VAR% is expanded when the block is read, and a ")"
rem in it ("C:\Program Files (x86)\...") would end the block there.

if "%CONFIG%"=="" (
    echo error: CONFIG must name a .ci_support config 1>&2
    exit /b 1
)
for %%I in ("%~dp0..") do (
    set "FEEDSTOCK_ROOT=%%~fI"
    if "%FEEDSTOCK_NAME%"=="" set "FEEDSTOCK_NAME=%%~nxI"
)
set "RECIPE_ROOT=%FEEDSTOCK_ROOT%\recipe"
set "CONFIG_FILE=%FEEDSTOCK_ROOT%\.ci_support\%CONFIG%.yaml"
set "ARTIFACTS=%FEEDSTOCK_ROOT%\build_artifacts"
set "DONE_MARKER=%ARTIFACTS%\conda-forge-build-done-%CONFIG%"
if not exist "%CONFIG_FILE%" (
    echo error: !CONFIG_FILE! does not exist 1>&2
    exit /b 1
)
rem run_conda_forge_build_setup reads .ci_support\%CONFIG%.yaml and conda-forge.yml from the
rem current directory, as conda-smithy's template runs it: from the feedstock's root, wherever
rem this script was started.
pushd "%FEEDSTOCK_ROOT%"
if !errorlevel! neq 0 exit /b !errorlevel!
if "%MINIFORGE_HOME%"=="" set "MINIFORGE_HOME=%USERPROFILE%\Miniforge3"
if "%UPLOAD_PACKAGES%"=="" set "UPLOAD_PACKAGES=True"
if "%IS_PR_BUILD%"=="" set "IS_PR_BUILD=False"
if not exist "%ARTIFACTS%" mkdir "%ARTIFACTS%"
if exist "%DONE_MARKER%" del /q "%DONE_MARKER%"

echo ==^> Provisioning micromamba in %MINIFORGE_HOME%
set "MICROMAMBA_DIR=%MINIFORGE_HOME%-micromamba"
set "MICROMAMBA=%MICROMAMBA_DIR%\micromamba.exe"
if not exist "%MICROMAMBA%" (
    if not exist "%MICROMAMBA_DIR%" mkdir "%MICROMAMBA_DIR%"
    powershell -NoProfile -Command "Invoke-WebRequest -Uri https://github.com/mamba-org/micromamba-releases/releases/latest/download/micromamba-win-64 -OutFile '%MICROMAMBA%'"
    if !errorlevel! neq 0 exit /b !errorlevel!
)
set "MAMBA_ROOT_PREFIX=%MICROMAMBA_DIR%\root"

rem The tool follows conda-forge.yml; a plain `findstr` is enough for its flat top-level key.
set "BUILD_TOOL=conda-build"
for /f "tokens=2 delims=: " %%t in ('findstr /b /c:"conda_build_tool:" "%FEEDSTOCK_ROOT%\conda-forge.yml"') do set "BUILD_TOOL=%%t"
if not "%CONDA_BUILD_TOOL%"=="" set "BUILD_TOOL=%CONDA_BUILD_TOOL%"
set "TOOL_PACKAGES="
set "BUILD_CMD=conda-build"
if "%BUILD_TOOL%"=="conda-build" (
    rem nothing extra
) else if "%BUILD_TOOL%"=="conda-build+libmamba" (
    set "TOOL_PACKAGES=conda-libmamba-solver" & set "CONDA_SOLVER=libmamba"
) else if "%BUILD_TOOL%"=="conda-build+conda-libmamba-solver" (
    set "TOOL_PACKAGES=conda-libmamba-solver" & set "CONDA_SOLVER=libmamba"
) else if "%BUILD_TOOL%"=="conda-build+classic" (
    set "CONDA_SOLVER=classic"
) else if "%BUILD_TOOL%"=="mambabuild" (
    set "TOOL_PACKAGES=boa" & set "BUILD_CMD=conda-mambabuild"
) else (
    echo error: conda-forge.yml conda_build_tool !BUILD_TOOL! is not supported by these scripts 1>&2
    exit /b 1
)

"%MICROMAMBA%" create --yes --quiet --prefix "%MINIFORGE_HOME%" --override-channels --channel conda-forge ^
    pip python=3.12 "conda-build>=25.1" conda-forge-ci-setup=4 %TOOL_PACKAGES%
if !errorlevel! neq 0 exit /b !errorlevel!
rem Activated, as conda-smithy's template does: run_conda_forge_build_setup writes into
rem %CONDA_PREFIX%\etc\conda\activate.d and runs `conda config --env`, both the active
rem environment's.
call "%MINIFORGE_HOME%\Scripts\activate.bat"
if !errorlevel! neq 0 exit /b !errorlevel!

echo ==^> Configuring conda
(
    echo conda-build:
    echo   root-dir: !ARTIFACTS!
    echo   pkg_format: '2'
    echo channel_priority: strict
    echo channels:
    echo   - conda-forge
) > "%MINIFORGE_HOME%\.condarc"
rem run_conda_forge_build_setup sets CONDA_BLD_PATH=C:\bld\ where it is unset, and conda-build
rem prefers the variable to the condarc's root-dir: set here, the packages land in
rem build_artifacts\win-*, where the done marker, build-locally and the workflow look.
set "CONDA_BLD_PATH=%ARTIFACTS%"
call run_conda_forge_build_setup
if !errorlevel! neq 0 exit /b !errorlevel!

rem Cross-compiled configs cannot run their tests without an emulator.
set "EXTRA_CB_OPTIONS="
findstr /c:"win-arm64" "%CONFIG_FILE%" >nul
rem findstr exits 0 when it finds the line; a crash (a negative status) is not a find.
if !errorlevel! equ 0 if "%CROSSCOMPILING_EMULATOR%"=="" set "EXTRA_CB_OPTIONS=--no-test"
if exist "%FEEDSTOCK_ROOT%\.ci_support\clobber_%CONFIG%.yaml" (
    set "EXTRA_CB_OPTIONS=!EXTRA_CB_OPTIONS! --clobber-file ".ci_support\clobber_!CONFIG!.yaml""
)
copy /y "%FEEDSTOCK_ROOT%\LICENSE.txt" "%RECIPE_ROOT%\recipe-scripts-license.txt" >nul
if !errorlevel! neq 0 exit /b !errorlevel!

echo ==^> Running %BUILD_CMD% for %CONFIG%
call %BUILD_CMD% "%RECIPE_ROOT%" -m "%CONFIG_FILE%" %EXTRA_CB_OPTIONS% --suppress-variables
if !errorlevel! neq 0 exit /b !errorlevel!

if /i not "%UPLOAD_PACKAGES%"=="False" if /i "%IS_PR_BUILD%"=="False" (
    echo ==^> Uploading packages
    call upload_package --validate --feedstock-name="%FEEDSTOCK_NAME%" "%FEEDSTOCK_ROOT%" "%RECIPE_ROOT%" "%CONFIG_FILE%"
    if !errorlevel! neq 0 exit /b !errorlevel!
)

echo ==^> Final checks
type nul > "%DONE_MARKER%"
popd
exit /b 0
