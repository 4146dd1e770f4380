@echo on
rem The settings every stage of recipe\bld.bat shares, run by bld.bat (which chose the stage
rem and checked the variant) in a cmd of its own; it ends by running the stage's file,
rem STAGE_FILE, in another cmd, which inherits them.
rem
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

set "BUILD_DIR=%SRC_DIR%\build"
set "CMAKE_CACHE=%BUILD_DIR%\CMakeCache.txt"
set "COMPILED_MARKER=%SRC_DIR%\_stage\compiled"
set "INSTALL_STAGE=%SRC_DIR%\_stage\install"
set "MEGABUILD_WHEELS=%SRC_DIR%\_stage\megabuild-wheel"
set "STAGE_ENVIRONMENT=%SRC_DIR%\_stage\forwarded-environment.json"

rem ######################################################################
rem #### CUDA ARCHITECTURES
rem ######################################################################
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
rem What build.sh sets to the same value, CMAKE_GENERATOR=Ninja among them: one table for
rem both scripts (recipe\build_env.txt: NAME=VALUE lines, "#" starts a comment).
for /f "usebackq eol=# tokens=1,* delims==" %%a in ("%RECIPE_DIR%\build_env.txt") do set "%%a=%%b"
rem vs20xx's activation sets these for the Visual Studio generators; CMake refuses either with
rem Ninja ("Ninja does not support platform specification") when it takes the generator from
rem CMAKE_GENERATOR, as scikit-build-core has it do (conda-build#5391). conda-forge's clears both.
set "CMAKE_GENERATOR_PLATFORM="
set "CMAKE_GENERATOR_TOOLSET="
rem Keep what the compiler activation put there.
if defined CMAKE_PREFIX_PATH set "CMAKE_PREFIX_PATH=%LIBRARY_PREFIX%;!CMAKE_PREFIX_PATH!"
if not defined CMAKE_PREFIX_PATH set "CMAKE_PREFIX_PATH=%LIBRARY_PREFIX%"
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
rem torch.version.git_version: the release archive has no .git, so PyTorch's
rem tools\generate_torch_version.py would write "Unknown"; patch 0013 has it take the
rem release's commit, which both recipes record (recipe\README.md, "torch.version.git_version").
if not defined CF_TORCH_RELEASE_COMMIT (
    echo bld.bat: error: CF_TORCH_RELEASE_COMMIT is not set; pass CF_TORCH_RELEASE_COMMIT={{ git_version }} in script_env of the top-level build, libtorch and pytorch in recipe\meta.yaml ^(their script env in recipe\recipe-v1.yaml^) 1>&2
    exit /b 2
)
set "BLAS=MKL"
set "USE_MKLDNN=1"
set "USE_DISTRIBUTED=1"

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

call :detect_build_backend
if !errorlevel! neq 0 exit /b !errorlevel!

rem The stage, in a second cmd that inherits every variable set here: Wine's cmd sets
rem ERRORLEVEL 1 after `call` of a batch file that fails, whatever its status.
cmd /d /s /c ""!RECIPE_DIR!\!STAGE_FILE!""
exit /b !errorlevel!

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
