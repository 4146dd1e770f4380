@echo on
rem The compile stage of recipe\bld.bat (meta.yaml's top-level build, recipe-v1.yaml's staging
rem output): configures and compiles everything once against the megabuild Python, installs
rem nothing. bld_libtorch.bat runs it too, in a work directory no compile stage has compiled.
rem Run by bld_common.bat, whose settings it inherits.
setlocal EnableExtensions EnableDelayedExpansion

rem A work directory compiled before (a rebuild in a kept one): compile again, incrementally;
rem the marker comes back when this compile has finished.
if exist "%COMPILED_MARKER%" del "%COMPILED_MARKER%"
rem The recipes name the megabuild Python once and hand it over in the script's env.
if not defined CF_TORCH_MEGABUILD_PYTHON (
    echo bld.bat: error: CF_TORCH_MEGABUILD_PYTHON is not set; pass it in script_env of the top-level build in recipe\meta.yaml ^(the staging output's script env in recipe\recipe-v1.yaml^) 1>&2
    exit /b 2
)
rem A GIL X.Y: the core never compiles against a free-threaded Python (bld_python_is.bat tells
rem X.Yt from X.Y), nor in a kept tree that a free-threaded output retargeted: cmake_cache.py
rem check-abi refuses that one in one line, before anything compiles. A second cmd, as
rem bld.bat runs each file: its status is the check's.
cmd /d /s /c ""!RECIPE_DIR!\bld_python_is.bat" CF_TORCH_MEGABUILD_PYTHON"
if !errorlevel! neq 0 exit /b !errorlevel!
if exist "%CMAKE_CACHE%" (
    "!PYTHON!" -B "!RECIPE_DIR!\cmake_cache.py" check-abi "!CMAKE_CACHE!" --python "!PYTHON!"
    if !errorlevel! neq 0 exit /b !errorlevel!
)
rem What every later configure of this tree must see again (compared in bld_pytorch.bat).
"%PYTHON%" "%RECIPE_DIR%\stage_environment.py" record "%STAGE_ENVIRONMENT%"
if !errorlevel! neq 0 exit /b !errorlevel!
if exist "%MEGABUILD_WHEELS%" rmdir /s /q "%MEGABUILD_WHEELS%"
pushd "%SRC_DIR%"
if !errorlevel! neq 0 exit /b !errorlevel!
rem setuptools' build installs into the source's torch\ on the way. The wheel is the one the
rem megabuild Python's pytorch output installs (see the top of bld_common.bat); the work
rem directory, not a package, carries it there (rattler-build: from the staging output).
"%PYTHON%" -m pip wheel . --no-deps --no-build-isolation %BACKEND_ARGS% --wheel-dir "%MEGABUILD_WHEELS%" -v
if !errorlevel! neq 0 exit /b !errorlevel!
if "%BUILD_BACKEND%"=="scikit-build-core" (
    if exist "%INSTALL_STAGE%" rmdir /s /q "%INSTALL_STAGE%"
    rem Stripped as scikit-build-core's own install is (install.strip, true for Release).
    cmake --install "%BUILD_DIR%" --prefix "%INSTALL_STAGE%" --strip
    if !errorlevel! neq 0 exit /b !errorlevel!
)
popd
rem For the libtorch stage that follows in the same work directory: nothing to compile.
if not exist "%SRC_DIR%\_stage" mkdir "%SRC_DIR%\_stage"
echo %CF_TORCH_MEGABUILD_PYTHON%> "%COMPILED_MARKER%"
exit /b 0
