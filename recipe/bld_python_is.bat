@echo on
rem Fails unless PYTHON is the Python the variable %1 names, as the recipes say it must be:
rem X.Y for one with the GIL, X.Yt for a free-threaded one (Py_GIL_DISABLED in its
rem sysconfig: two ABIs, neither loads the other's extensions). Run by bld_compile.bat and
rem bld_pytorch.bat in a cmd of its own, so that its status reaches them as it is.
setlocal EnableExtensions EnableDelayedExpansion
set "PY_EXPECTED=!%~1!"
"%PYTHON%" -c "import sys, sysconfig; print('{}.{}{}'.format(*sys.version_info[:2], 't' if sysconfig.get_config_var('Py_GIL_DISABLED') else ''))" > "%SRC_DIR%\_python_version.txt"
if !errorlevel! neq 0 exit /b !errorlevel!
set "PY_ACTUAL="
set /p PY_ACTUAL=<"%SRC_DIR%\_python_version.txt"
if not "!PY_ACTUAL!"=="!PY_EXPECTED!" (
    echo bld.bat: error: PYTHON='!PYTHON!' is Python !PY_ACTUAL! but %~1='!PY_EXPECTED!'; the host python of the %STAGE% stage in recipe\meta.yaml and recipe\recipe-v1.yaml must match it ^(X.Yt: free-threaded^) 1>&2
    exit /b 2
)
exit /b 0
