@echo on
rem Build script for the Windows outputs of this recipe (Linux and macOS: build.sh).
rem
rem Both recipes run the compile stage once (meta.yaml's top-level build, recipe-v1.yaml's
rem staging output, both named libtorch-build), then one stage per output in the same work
rem directory: conda-build shares it, rattler-build restores the staging output's. Like
rem build.sh it dispatches on CF_TORCH_BUILD_STAGE, which both recipes set, else on PKG_NAME:
rem   compile   (PKG_NAME libtorch-build) configures and compiles everything once against
rem             the megabuild Python the recipes name; installs nothing.
rem   libtorch  installs the Python-independent files into %LIBRARY_PREFIX% (after the
rem             compile stage, when it has not run in this work directory).
rem   pytorch   once per Python: installs the compile stage's wheel for the megabuild
rem             Python; any other Python retargets the configured tree with cmake_cache
rem             (only Python-bound targets rebuild) and pip-installs torch; then moves
rem             torch_python next to libtorch's DLLs.
rem libtorch-cuda-linalg is Linux-only: PyTorch loads the CUDA linear algebra library
rem lazily only on Linux, so on Windows it stays inside torch_cuda.dll.
rem As in build.sh, the source's declared build backend (recipe\build_backend.py) picks the
rem commands: setuptools (PyTorch ^<= 2.13) builds with setup.py and installs into the
rem source's torch\; scikit-build-core (^>= 2.14) builds in a kept build-dir, its install tree
rem is laid out under _stage\install, and cmake_cache retargets .skbuild-info.json too.
rem Both compile through pip wheel, and the megabuild Python's wheel is kept in
rem _stage\megabuild-wheel: conda-build orders the pytorch outputs as it likes
rem (PYTHONHASHSEED decides), and once another Python's output has retargeted the tree, the
rem megabuild Python's bindings would compile a second time for its own output. Installing
rem the wheel built while the tree was that Python's compiles every Python's bindings once.
setlocal EnableExtensions EnableDelayedExpansion

rem conda-build reads this file in text mode and writes it, after its header, into
rem work\conda_build.bat in binary mode (conda_build\windows.py, write_build_scripts): the
rem compile stage's script has LF line ends only. Microsoft's cmd can miss a goto or call
rem label in an LF-only file where the label straddles one of its 512-byte reads ("cannot
rem find the batch label specified"), and the header's work path moves the offsets. So the
rem copy conda-build runs only calls the recipe's own bld.bat, which cmd reads from disk with
rem the CRLF line ends .gitattributes gives it, and no label is looked up in the copy:
rem nothing above this block may goto or call a label. Every stage takes the same way. A
rem second cmd, not `call`: Wine's cmd sets ERRORLEVEL 1 after `call` of a batch file that
rem exits with any other failing status. /s and the doubled quotes keep the path's quotes, !!
rem expands it after the block is read (a ")" in it would end the block).
if not defined RECIPE_DIR (
    echo bld.bat: error: RECIPE_DIR is not set; run recipe\bld.bat through conda-build or rattler-build, which set it 1>&2
    exit /b 2
)
if not defined CF_TORCH_BLD_BAT_FROM_RECIPE (
    set "CF_TORCH_BLD_BAT_FROM_RECIPE=1"
    cmd /d /s /c ""!RECIPE_DIR!\bld.bat""
    exit /b !errorlevel!
)

set "RECIPE_FILE=recipe\bld.bat"

rem A for loop's variable inside `do if ... ( block )` is left unexpanded by Wine's cmd: the
rem loop calls a label instead (tests\test_bld_bat_static.py lists the forms both cmds run).
set "UNSET_VARIABLE="
for %%v in (PKG_VERSION SRC_DIR PREFIX LIBRARY_PREFIX LIBRARY_BIN LIBRARY_LIB LIBRARY_INC RECIPE_DIR PYTHON) do call :note_if_unset %%v
if defined UNSET_VARIABLE (
    echo bld.bat: error: !UNSET_VARIABLE! is not set; run %RECIPE_FILE% through conda-build or rattler-build, which set it 1>&2
    exit /b 2
)
rem rattler-build names no package in a staging output: the recipes name the stage.
set "STAGE_VARIABLE=CF_TORCH_BUILD_STAGE"
if not defined CF_TORCH_BUILD_STAGE set "STAGE_VARIABLE=PKG_NAME"
set "STAGE=!%STAGE_VARIABLE%!"
if not defined STAGE (
    echo bld.bat: error: neither CF_TORCH_BUILD_STAGE nor PKG_NAME is set; recipe\meta.yaml and recipe\recipe-v1.yaml set CF_TORCH_BUILD_STAGE for every output 1>&2
    exit /b 2
)
set "BUILD_DIR=%SRC_DIR%\build"
set "CMAKE_CACHE=%BUILD_DIR%\CMakeCache.txt"
set "COMPILED_MARKER=%SRC_DIR%\_stage\compiled"
set "INSTALL_STAGE=%SRC_DIR%\_stage\install"
set "MEGABUILD_WHEELS=%SRC_DIR%\_stage\megabuild-wheel"
set "STAGE_ENVIRONMENT=%SRC_DIR%\_stage\forwarded-environment.json"
set "COMPILE_ONLY="

rem ######################################################################
rem #### VARIANT CHECKS
rem ######################################################################
if not "%blas_impl%"=="mkl" (
    echo bld.bat: error: blas_impl='%blas_impl%' is not built on Windows ^(mkl only^); fix the blas_impl selector in recipe\conda_build_config.yaml 1>&2
    exit /b 2
)

if "%cuda_compiler_version%"=="" set "cuda_compiler_version=None"
rem TORCH_CUDA_ARCH_LIST is the win-64 row of recipe\cuda_arch_lists.txt for this CUDA version,
rem the file build.sh, tools check and the tests read too (the one place the lists live).
rem recipe\cuda_arch_list.py reads it, since batch cannot parse that table robustly; with
rem no row it prints one error line and exits 2, which stops the build here. Through a
rem file, as CMAKE_ARGS below: for /f mangles a quoted command's quotes. Only win-64 is
rem built on Windows, so the platform is named here rather than read. Outside a ( ) block,
rem as a path with ")" in it would end one early.
set "TORCH_CUDA_ARCH_LIST="
if "%cuda_compiler_version%"=="None" set "USE_CUDA=0"
if "%cuda_compiler_version%"=="None" goto :cuda_arch_list_done
"%PYTHON%" "%RECIPE_DIR%\cuda_arch_list.py" "%RECIPE_DIR%\cuda_arch_lists.txt" "%cuda_compiler_version%" win-64 > "%SRC_DIR%\_cuda_arch_list.txt"
if !errorlevel! neq 0 exit /b !errorlevel!
for /f "usebackq delims=" %%a in ("%SRC_DIR%\_cuda_arch_list.txt") do set "TORCH_CUDA_ARCH_LIST=%%a"
rem conda-forge's cuda-nvcc activation sets CUDAARCHS (every GPU generation) where it is unset,
rem and CMake would add those GPUs to the row's: the row is the one list, as in build.sh.
rem https://github.com/rapidsai/rmm/issues/2238 (the same interference)
set "CUDAARCHS="
:cuda_arch_list_done

rem ######################################################################
rem #### PYTORCH BUILD OPTIONS
rem ######################################################################
set "CMAKE_GENERATOR=Ninja"
rem vs20xx's activation sets these for the Visual Studio generators; CMake refuses either with
rem Ninja ("Ninja does not support platform specification") when it takes the generator from
rem CMAKE_GENERATOR, as scikit-build-core has it do (conda-build#5391). conda-forge's clears both.
set "CMAKE_GENERATOR_PLATFORM="
set "CMAKE_GENERATOR_TOOLSET="
set "CMAKE_BUILD_TYPE=Release"
rem Keep what the compiler activation put there.
if defined CMAKE_PREFIX_PATH set "CMAKE_PREFIX_PATH=%LIBRARY_PREFIX%;!CMAKE_PREFIX_PATH!"
if not defined CMAKE_PREFIX_PATH set "CMAKE_PREFIX_PATH=%LIBRARY_PREFIX%"
rem CMake's install step skips a file whose time stamp lies within a second of the installed
rem copy's, whatever its content; each Python's torch_python replaces a file an install wrote
rem moments earlier, so every install must copy. (cmFileInstaller reads the variable.)
rem https://github.com/Kitware/CMake/blob/master/Source/cmFileInstaller.cxx
set "CMAKE_INSTALL_ALWAYS=1"
rem setup.py hands CMAKE_ARGS to the first cmake run, after its own arguments
rem (recipe\patches\0003); scikit-build-core reads CMAKE_ARGS itself, so a scikit-build-core
rem source needs nothing from that patch. conda's CMAKE_INSTALL_PREFIX=%%LIBRARY_PREFIX%% must
rem go: this script picks the files up from an install tree of its own. Python
rem filters the words, since cmd's for splits on = and ; too; for /f reads the result back
rem without set /p's 1023-character limit.
"%PYTHON%" -c "import os; print(' '.join(a for a in os.environ.get('CMAKE_ARGS', '').split() if not a.startswith(('-DCMAKE_INSTALL_PREFIX=', '-DCMAKE_INSTALL_PREFIX:'))))" > "%SRC_DIR%\_cmake_args.txt"
if !errorlevel! neq 0 exit /b !errorlevel!
set "CMAKE_ARGS="
for /f "usebackq delims=" %%a in ("%SRC_DIR%\_cmake_args.txt") do set "CMAKE_ARGS=%%a"
rem CPU_COUNT jobs run out of memory (conda-forge's Windows builds were OOM-killed and build
rem with 4 jobs on 58 GB): at most one job per 14 GB here (JOB_MEMORY_GB overrides;
rem recipe\build_jobs.py reads the machine's memory).
rem (Through a file, as CMAKE_ARGS above: for /f mangles a quoted command's quotes.)
"%PYTHON%" "%RECIPE_DIR%\build_jobs.py" --per-job-gb 14 > "%SRC_DIR%\_max_jobs.txt"
if !errorlevel! neq 0 exit /b !errorlevel!
set "MAX_JOBS="
for /f "usebackq delims=" %%j in ("%SRC_DIR%\_max_jobs.txt") do set "MAX_JOBS=%%j"
if not defined MAX_JOBS (
    echo bld.bat: error: recipe\build_jobs.py chose no MAX_JOBS ^(its error is above^); check CPU_COUNT and JOB_MEMORY_GB 1>&2
    exit /b 2
)
echo MAX_JOBS=%MAX_JOBS%
rem setup.py passes MAX_JOBS to its cmake --build itself; from 2.14 on pyproject.toml's
rem [tool.scikit-build.env] table makes it CMAKE_BUILD_PARALLEL_LEVEL (pytorch#180247).
set "PYTORCH_BUILD_VERSION=%PKG_VERSION%"
rem Any build number above 1 becomes a .postN suffix in torch.__version__.
rem https://github.com/conda-forge/pytorch-cpu-feedstock/issues/315
set "PYTORCH_BUILD_NUMBER=0"
set "BUILD_TEST=0"
set "INSTALL_TEST=0"
set "USE_SYSTEM_SLEEF=1"
set "USE_SYSTEM_PYBIND11=1"
set "USE_SYSTEM_EIGEN_INSTALL=1"
rem An option of patch 0005 (2.13.0 has none): fmt from the host, no include\fmt of its own.
set "USE_SYSTEM_FMT=1"
set "BUILD_CUSTOM_PROTOBUF=OFF"
set "BLAS=MKL"
set "USE_MKLDNN=1"
set "USE_DISTRIBUTED=1"
rem Upstream's default, named as build.sh names it (check_torch.py --expect openmp).
set "USE_OPENMP=1"

rem Forward slashes for CMake (below), made outside the block: Wine's cmd does not substitute
rem in !VAR:\=/!, and %%VAR%% inside a block would end it at a ")" in the path.
set "LIBRARY_PREFIX_SLASHED=%LIBRARY_PREFIX:\=/%"
set "BUILD_PREFIX_SLASHED="
if defined BUILD_PREFIX set "BUILD_PREFIX_SLASHED=%BUILD_PREFIX:\=/%"
if not "%cuda_compiler_version%"=="None" (
    set "USE_CUDA=1"
    set "USE_STATIC_CUDNN=0"
    rem MAGMA is linked into torch_cuda.dll: Windows has no lazily loaded linalg library,
    rem so no nomagma flavour either (patch 0004 stays inert without BUILD_LAZY_CUDA_LINALG).
    set "USE_MAGMA=1"
    set "MAGMA_HOME=%LIBRARY_PREFIX%"
    set "CUDAToolkit_ROOT=%LIBRARY_PREFIX%"
    rem nvcc lives in the build environment, the CUDA headers and libraries (cublas_v2.h ...)
    rem in the host one; PyTorch's FindCUDAToolkit takes the toolkit root from nvcc's prefix
    rem unless a CUDAToolkit_ROOT_DIR cache entry names it (patch 0011). CUDA_TOOLKIT_ROOT_DIR
    rem is where the CUPTI lookup looks. Forward slashes: CMake reads backslashes as escapes.
    set "CMAKE_ARGS=!CMAKE_ARGS! -DCUDAToolkit_ROOT_DIR=!LIBRARY_PREFIX_SLASHED! -DCUDAToolkit_BIN_DIR=!BUILD_PREFIX_SLASHED!/Library/bin -DCUDA_TOOLKIT_ROOT_DIR=!LIBRARY_PREFIX_SLASHED!"
    set "TORCH_NVCC_FLAGS=-Xfatbin -compress-all"
    rem No native-AOT stage 2 (pytorch#194242, #194243): recipe\README.md, "Native AOT kernels".
    set "TORCH_NATIVE_AOT=0"
)

rem ######################################################################
rem #### DISPATCH
rem ######################################################################
if "%STAGE%"=="compile" goto :compile
rem conda-build's PKG_NAME for meta.yaml's top-level build, which runs the compile stage
if "%STAGE%"=="libtorch-build" goto :compile
if "%STAGE%"=="libtorch" goto :libtorch
if "%STAGE%"=="pytorch" goto :pytorch
echo bld.bat: error: %STAGE_VARIABLE%='%STAGE%' is not a stage %RECIPE_FILE% builds (compile or libtorch-build, libtorch, pytorch); add a branch to the dispatch in %RECIPE_FILE% 1>&2
exit /b 2

:compile
rem meta.yaml's top-level build, recipe-v1.yaml's staging output: compile only; the libtorch
rem output installs.
set "COMPILE_ONLY=1"
rem A work directory compiled before (a rebuild in a kept one): compile again, incrementally;
rem the marker comes back when this compile has finished.
if exist "%COMPILED_MARKER%" del "%COMPILED_MARKER%"
:libtorch
if not defined COMPILE_ONLY if exist "%COMPILED_MARKER%" goto :libtorch_install
rem The recipes name the megabuild Python once and hand it over in the script's env.
if not defined CF_TORCH_MEGABUILD_PYTHON (
    echo bld.bat: error: CF_TORCH_MEGABUILD_PYTHON is not set; pass it in script_env of the top-level build in recipe\meta.yaml ^(the staging output's script env in recipe\recipe-v1.yaml^) 1>&2
    exit /b 2
)
rem A GIL X.Y: the core never compiles against a free-threaded Python (:python_is tells X.Yt
rem from X.Y), nor in a kept tree that a free-threaded output retargeted: cmake_cache
rem check-abi refuses that one in one line, before anything compiles.
call :python_is CF_TORCH_MEGABUILD_PYTHON "%CF_TORCH_MEGABUILD_PYTHON%"
if !errorlevel! neq 0 exit /b !errorlevel!
if exist "%CMAKE_CACHE%" (
    "!PYTHON!" -B "!RECIPE_DIR!\cmake_cache" check-abi "!CMAKE_CACHE!" --python "!PYTHON!"
    if !errorlevel! neq 0 exit /b !errorlevel!
)
call :detect_build_backend
if !errorlevel! neq 0 exit /b !errorlevel!
rem What every later configure of this tree must see again (compared in :pytorch).
"%PYTHON%" "%RECIPE_DIR%\stage_environment.py" record "%STAGE_ENVIRONMENT%"
if !errorlevel! neq 0 exit /b !errorlevel!
if exist "%MEGABUILD_WHEELS%" rmdir /s /q "%MEGABUILD_WHEELS%"
pushd "%SRC_DIR%"
if !errorlevel! neq 0 exit /b !errorlevel!
rem setuptools' build installs into the source's torch\ on the way. The wheel is the one the
rem megabuild Python's pytorch output installs (see the top of this file); the work
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
if defined COMPILE_ONLY exit /b 0

:libtorch_install

rem Everything but the Python-bound torch_python goes to the Library tree.
call :detect_build_backend
if !errorlevel! neq 0 exit /b !errorlevel!
set "TORCH_TREE=%INSTALL_STAGE%"
if "%BUILD_BACKEND%"=="setuptools" (
    "%PYTHON%" -B "%RECIPE_DIR%\cmake_cache" get "%CMAKE_CACHE%" CMAKE_INSTALL_PREFIX > "%SRC_DIR%\_torch_tree.txt"
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

:pytorch
if not exist "%CMAKE_CACHE%" (
    echo bld.bat: error: !CMAKE_CACHE! does not exist; the top-level libtorch build configures it before any pytorch output; check the outputs in recipe\meta.yaml 1>&2
    exit /b 2
)
if not defined SP_DIR (
    echo bld.bat: error: SP_DIR is not set; run %RECIPE_FILE% through conda-build, which sets it 1>&2
    exit /b 2
)
rem This output's Python as the recipes' script env names it: X.Y, or X.Yt for a free-threaded
rem one, which conda-build's PY_VER (X.Y for both) cannot tell apart.
if not defined CF_TORCH_PYTHON (
    echo bld.bat: error: CF_TORCH_PYTHON is not set; pass it in script_env of the pytorch output in recipe\meta.yaml ^(its script env in recipe\recipe-v1.yaml^) 1>&2
    exit /b 2
)
if defined PY_VER if not "%CF_TORCH_PYTHON%"=="%PY_VER%" if not "%CF_TORCH_PYTHON%"=="%PY_VER%t" (
    echo bld.bat: error: CF_TORCH_PYTHON='!CF_TORCH_PYTHON!' but PY_VER='!PY_VER!'; the pytorch output's script_env in recipe\meta.yaml must name its own Python 1>&2
    exit /b 2
)
call :python_is CF_TORCH_PYTHON "%CF_TORCH_PYTHON%"
if !errorlevel! neq 0 exit /b !errorlevel!
call :detect_build_backend
if !errorlevel! neq 0 exit /b !errorlevel!
rem Every configure copies the BUILD_*, USE_* and CMAKE_* variables (and a few more) into the
rem cache, overwriting it (cmake\EnvVarForwarding.cmake); one that differs from the compile
rem stage's would recompile libtorch for this Python only, silently. Before the wheel
rem shortcut: a stage environment that differs is a recipe error either way.
"%PYTHON%" "%RECIPE_DIR%\stage_environment.py" compare "%STAGE_ENVIRONMENT%" --stage "%STAGE%" --fix "set the same in every stage (the preamble of %RECIPE_FILE%)"
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

:detect_build_backend
rem setuptools or scikit-build-core, from what the source declares; anything else stops the
rem build with build_backend.py's one line naming the file and what it found.
"%PYTHON%" "%RECIPE_DIR%\build_backend.py" "%SRC_DIR%" > "%SRC_DIR%\_build_backend.txt"
if !errorlevel! neq 0 exit /b !errorlevel!
set "BUILD_BACKEND="
set /p BUILD_BACKEND=<"%SRC_DIR%\_build_backend.txt"
if not "%BUILD_BACKEND%"=="setuptools" if not "%BUILD_BACKEND%"=="scikit-build-core" (
    echo bld.bat: error: recipe\build_backend.py answered '!BUILD_BACKEND!', which %RECIPE_FILE% does not build 1>&2
    exit /b 2
)
rem What pip wheel and pip install hand the backend: setuptools builds in the source tree,
rem kept for the next output (--no-clean); scikit-build-core in the one kept build-dir.
set "BACKEND_ARGS=--no-clean"
rem The path quoted whole and expanded after parsing: an ampersand or parenthesis in it
rem stays text.
if "%BUILD_BACKEND%"=="scikit-build-core" set "BACKEND_ARGS="--config-settings=build-dir=!BUILD_DIR!""
rem Settings only setup.py's build (PyTorch <= 2.13) reads; nothing from 2.14 on does. Its
rem setuptools compiles with the MSVC the environment activated instead of looking for
rem another Visual Studio, and PACKAGE_TYPE=conda links conda's libraries instead of copying
rem them into torch\lib (https://github.com/conda-forge/pytorch-cpu-feedstock/issues/243).
if "%BUILD_BACKEND%"=="setuptools" (
    set "DISTUTILS_USE_SDK=1"
    set "PACKAGE_TYPE=conda"
)
exit /b 0

:install_activation_script
rem %1 is activate or deactivate: the template with the architecture list filled in.
if not exist "%PREFIX%\etc\conda\%1.d" mkdir "%PREFIX%\etc\conda\%1.d"
"%PYTHON%" -c "import sys; src, dst, archs = sys.argv[1:]; open(dst, 'w').write(open(src).read().replace('@CF_TORCH_CUDA_ARCH_LIST@', archs))" "%RECIPE_DIR%\%1-libtorch.bat" "%PREFIX%\etc\conda\%1.d\libtorch_%1.bat" "%TORCH_CUDA_ARCH_LIST%"
exit /b %ERRORLEVEL%

:note_if_unset
rem %1 names a variable the script needs; the first one unset is reported after the loop.
if not defined UNSET_VARIABLE if not defined %1 set "UNSET_VARIABLE=%1"
exit /b 0

:python_is
rem Fails unless PYTHON is Python %2, as the variable %1 says it must be: X.Y for one with the
rem GIL, X.Yt for a free-threaded one (Py_GIL_DISABLED in its sysconfig: two ABIs, neither
rem loads the other's extensions).
"%PYTHON%" -c "import sys, sysconfig; print('{}.{}{}'.format(*sys.version_info[:2], 't' if sysconfig.get_config_var('Py_GIL_DISABLED') else ''))" > "%SRC_DIR%\_python_version.txt"
if !errorlevel! neq 0 exit /b !errorlevel!
set "PY_ACTUAL="
set /p PY_ACTUAL=<"%SRC_DIR%\_python_version.txt"
if not "%PY_ACTUAL%"=="%~2" (
    echo bld.bat: error: PYTHON='!PYTHON!' is Python !PY_ACTUAL! but %~1='%~2'; the host python of the %STAGE% stage in recipe\meta.yaml and recipe\recipe-v1.yaml must match it ^(X.Yt: free-threaded^) 1>&2
    exit /b 2
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
"%PYTHON%" -B "%RECIPE_DIR%\foreign_bytecode.py" "%SP_DIR%" --fix "remove it before pip install in %RECIPE_FILE%"
if !errorlevel! neq 0 exit /b !errorlevel!
exit /b 0
