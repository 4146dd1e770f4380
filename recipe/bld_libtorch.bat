@echo on
rem The libtorch stage of recipe\bld.bat: installs the Python-independent files into
rem %LIBRARY_PREFIX%. Run by bld_common.bat, whose settings it inherits.
setlocal EnableExtensions EnableDelayedExpansion

rem In a work directory no compile stage has compiled, compile first (bld_compile.bat, in a
rem second cmd as bld.bat runs each file: its status is the compile's).
if exist "%COMPILED_MARKER%" goto :libtorch_install
cmd /d /s /c ""!RECIPE_DIR!\bld_compile.bat""
if !errorlevel! neq 0 exit /b !errorlevel!

:libtorch_install
rem Everything but the Python-bound torch_python goes to the Library tree.
set "TORCH_TREE=%INSTALL_STAGE%"
if "%BUILD_BACKEND%"=="setuptools" (
    "%PYTHON%" -B "%RECIPE_DIR%\cmake_cache.py" get "%CMAKE_CACHE%" CMAKE_INSTALL_PREFIX > "%SRC_DIR%\_torch_tree.txt"
    if !errorlevel! neq 0 exit /b !errorlevel!
    set /p TORCH_TREE=<"%SRC_DIR%\_torch_tree.txt"
)
set "TORCH_TREE=%TORCH_TREE:/=\%"
rem Which file goes where is recipe\package_files.py's, the rules build.sh runs too: torch's
rem own DLLs to %%LIBRARY_BIN%% (an allow-list: upstream's lib\ also holds OpenMP's, libuv's,
rem the CUDA toolkit's DLLs and zlibwapi.dll), their import libraries to %%LIBRARY_LIB%%,
rem PyTorch's own headers (the rest of include\ is vendored libraries' copies, whose paths
rem conda-forge packages own), share\. A file a host package installed stops the build.
"%PYTHON%" "%RECIPE_DIR%\package_files.py" libtorch --platform win-64 --tree "%TORCH_TREE%" --prefix "%PREFIX%"
if !errorlevel! neq 0 exit /b !errorlevel!
rem Upstream installs every exported library to lib\ (install(TARGETS ... DESTINATION lib)), so
rem Caffe2Targets-release.cmake names lib\c10.dll ...; the DLLs are in %%LIBRARY_BIN%% now and
rem find_package(Torch) would stop at a missing file. Point the exports at them (issue 30
rem item 8; conda-forge drops DESTINATION from the install() calls instead, patch 0008).
"%PYTHON%" "%RECIPE_DIR%\cmake_export_paths.py" "%LIBRARY_PREFIX%\share\cmake" --moved-to "%LIBRARY_BIN%" --moved-to "%LIBRARY_LIB%"
if !errorlevel! neq 0 exit /b !errorlevel!

if "%cuda_compiler_version%"=="None" exit /b 0
rem Downstream CUDA extension builds can use the architectures libtorch was built for.
rem https://github.com/conda-forge/pytorch-cpu-feedstock/issues/423
call :install_activation_script activate
if !errorlevel! neq 0 exit /b !errorlevel!
call :install_activation_script deactivate
if !errorlevel! neq 0 exit /b !errorlevel!
exit /b 0

:install_activation_script
rem %1 is activate or deactivate: the template with the architecture list filled in.
if not exist "%PREFIX%\etc\conda\%1.d" mkdir "%PREFIX%\etc\conda\%1.d"
"%PYTHON%" -c "import sys; src, dst, archs = sys.argv[1:]; open(dst, 'w').write(open(src).read().replace('@CF_TORCH_CUDA_ARCH_LIST@', archs))" "%RECIPE_DIR%\%1-libtorch.bat" "%PREFIX%\etc\conda\%1.d\libtorch_%1.bat" "%TORCH_CUDA_ARCH_LIST%"
exit /b %ERRORLEVEL%
