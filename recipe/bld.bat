@echo on
rem Build script for the Windows outputs of this recipe (Linux and macOS: build.sh), the one
rem script every output names. It picks the stage, then runs the settings every stage shares
rem (recipe\bld_common.bat), which runs that stage's own file, all kept beside it in recipe\.
rem
rem Both recipes run the compile stage once (meta.yaml's top-level build, recipe-v1.yaml's
rem staging output, both named libtorch-build), then one stage per output in the same work
rem directory: conda-build shares it, rattler-build restores the staging output's. Like
rem build.sh it dispatches on CF_TORCH_BUILD_STAGE, which both recipes set, else on PKG_NAME:
rem   compile   (PKG_NAME libtorch-build) bld_compile.bat: configures and compiles everything
rem             once against the megabuild Python the recipes name; installs nothing.
rem   libtorch  bld_libtorch.bat: installs the Python-independent files into %LIBRARY_PREFIX%
rem             (after bld_compile.bat, when the compile stage has not run in this work
rem             directory).
rem   pytorch   bld_pytorch.bat, once per Python: installs the compile stage's wheel for the
rem             megabuild Python; any other Python retargets the configured tree with
rem             cmake_cache.py (only Python-bound targets rebuild) and pip-installs torch; then
rem             moves torch_python next to libtorch's DLLs.
rem libtorch-cuda-linalg is Linux-only: PyTorch loads the CUDA linear algebra library
rem lazily only on Linux, so on Windows it stays inside torch_cuda.dll.
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

rem ######################################################################
rem #### DISPATCH: the stage's file, run by bld_common.bat
rem ######################################################################
set "STAGE_FILE="
if "%STAGE%"=="compile" set "STAGE_FILE=bld_compile.bat"
rem conda-build's PKG_NAME for meta.yaml's top-level build, which runs the compile stage
if "%STAGE%"=="libtorch-build" set "STAGE_FILE=bld_compile.bat"
if "%STAGE%"=="libtorch" set "STAGE_FILE=bld_libtorch.bat"
if "%STAGE%"=="pytorch" set "STAGE_FILE=bld_pytorch.bat"
if not defined STAGE_FILE (
    echo bld.bat: error: !STAGE_VARIABLE!='!STAGE!' is not a stage %RECIPE_FILE% builds ^(compile or libtorch-build, libtorch, pytorch^); add a branch to the dispatch in %RECIPE_FILE% 1>&2
    exit /b 2
)

rem ######################################################################
rem #### VARIANT CHECKS
rem ######################################################################
rem conda-build learns which variant keys a script uses by reading the file the recipe names,
rem this one, and not the files it runs: every key the stage files read is named here.
if not "%blas_impl%"=="mkl" (
    echo bld.bat: error: blas_impl='%blas_impl%' is not built on Windows ^(mkl only^); fix the blas_impl selector in recipe\conda_build_config.yaml 1>&2
    exit /b 2
)
if "%cuda_compiler_version%"=="" set "cuda_compiler_version=None"

rem The shared settings, which end by running the stage's file. A second cmd, not `call`, for
rem each file: Wine's cmd sets ERRORLEVEL 1 after `call` of a batch file that exits with any
rem other failing status, a crash's negative one too. The second cmd inherits every variable
rem set above; its status is the stage's.
cmd /d /s /c ""!RECIPE_DIR!\bld_common.bat""
exit /b !errorlevel!

:note_if_unset
rem %1 names a variable the script needs; the first one unset is reported after the loop.
if not defined UNSET_VARIABLE if not defined %1 set "UNSET_VARIABLE=%1"
exit /b 0
