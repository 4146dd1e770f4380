# shellcheck shell=bash disable=SC2034,SC2153
# Linted alone by shellcheck: the stage files read the variables assigned here, and
# build.sh sets STAGE.
# What every stage of recipe/build.sh shares: the work directory's paths, the Python
# helpers' wrappers, the build backend, the interpreter checks and the rules of which file
# goes to which package. build.sh sources it after its own checks: it defines the
# variables and functions below and runs nothing.

SHLIB_EXT="${SHLIB_EXT:-$([[ "${target_platform}" == osx-* ]] && echo .dylib || echo .so)}"
BUILD_DIR="${SRC_DIR}/build"
CMAKE_CACHE="${BUILD_DIR}/CMakeCache.txt"
STAGE_DIR="${SRC_DIR}/_stage"
# The install tree of a scikit-build-core build (setuptools installs into the source).
INSTALL_STAGE="${STAGE_DIR}/install"
COMPILED_MARKER="${STAGE_DIR}/compiled"
# The forwarded environment the compile stage configured the tree with.
STAGE_ENVIRONMENT="${STAGE_DIR}/forwarded-environment.json"
# The megabuild Python's wheel, built by the compile stage (see compile_tree).
MEGABUILD_WHEELS="${STAGE_DIR}/megabuild-wheel"
CUDA_VERSION_VARIANT="${cuda_compiler_version:-None}"

# The languages a compiler cache launches (build_compile.sh sets them, build_pytorch.sh
# checks what the compile stage recorded).
LAUNCHER_LANGUAGES=(C CXX CUDA)

cmake_cache() {
    "${PYTHON}" -B "${RECIPE_DIR}/cmake_cache" "$@"
}

detect_build_backend() {
    # setuptools or scikit-build-core, from the source's declaration; anything else stops
    # the build with the helper's one line (it names the file and what it found). The
    # backend's file defines the steps that differ between the two (the same functions in
    # both: INSTALL_STRIP, backend_settings, backend_compile, backend_install_tree and
    # backend_install).
    local answer
    answer="$("${PYTHON}" -B "${RECIPE_DIR}/build_backend.py" "${SRC_DIR}" 2>&1)" \
        || die "${answer#build_backend.py: error: }"
    BUILD_BACKEND="${answer}"
    case "${BUILD_BACKEND}" in
        setuptools)
            # shellcheck source=SCRIPTDIR/build_setuptools.sh
            source "${RECIPE_DIR}/build_setuptools.sh"
            ;;
        scikit-build-core)
            # shellcheck source=SCRIPTDIR/build_skbuild.sh
            source "${RECIPE_DIR}/build_skbuild.sh"
            ;;
        *) die "recipe/build_backend.py answered '${BUILD_BACKEND}', which ${RECIPE_FILE} does not build" ;;
    esac
    echo "build.sh: ${SRC_DIR} builds with ${BUILD_BACKEND}"
}

is_linux_cuda() {
    [[ "${CUDA_VERSION_VARIANT}" != "None" && "${target_platform}" == linux-* ]]
}

python_abi() {
    # X.Y for $PYTHON, with a t after it when it is free-threaded (Py_GIL_DISABLED in its
    # pyconfig.h): 3.14 and 3.14t are two ABIs, neither loads the other's extensions.
    "${PYTHON}" -c 'import sys, sysconfig; print("%d.%d%s" % (sys.version_info[0], sys.version_info[1], "t" if sysconfig.get_config_var("Py_GIL_DISABLED") else ""))'
}

python_label() {
    # X.Y, or X.Yt for a free-threaded Python, from the python variant as both recipes pass it
    # in $2 ("3.14.* *_cp314t" -> 3.14t, "3.14.* *_cp314" and "3.12.* *_cpython" -> 3.14 and
    # 3.12: conda-forge's free-threaded pythons are the builds *_cp313t and *_cp314t), or from
    # X.Y or X.Yt as it is. The recipes hand the variant over untouched and the t is decided
    # here rather than in a template: conda-smithy's linter renders meta.yaml without variants
    # and its v1 path renders recipe.yaml with only its context, where no method, split or
    # jinja test may touch python (issues 58 and 60). $PYTHON's own Py_GIL_DISABLED would
    # answer too, but then nothing would check the host Python against the variant
    # (python_is). bld_pytorch.bat reads it the same way.
    local variable="$1" spec="$2" version build=""
    version="${spec%% *}"
    [[ "${spec}" == *" "* ]] && build="${spec#* }"
    version="${version%.\*}"
    [[ "${build}" =~ _cp[0-9]+t$ ]] && version="${version}t"
    [[ "${version}" =~ ^[0-9]+\.[0-9]+t?$ ]] \
        || die "${variable}='${spec}' names no Python; give the python variant (3.14.* *_cp314t) or X.Y (X.Yt free-threaded)"
    printf '%s\n' "${version}"
}

python_is() {
    # Fail unless $PYTHON is Python $2 (as the variable $1 says it must be): X.Y for one with
    # the GIL, X.Yt for a free-threaded one, so a 3.14 stage never runs a 3.14t interpreter.
    local variable="$1" wanted="$2" actual
    [[ -n "${wanted}" ]] || return 0
    actual="$(python_abi)"
    [[ "${actual}" == "${wanted}" ]] \
        || die "PYTHON='${PYTHON}' is Python ${actual} but ${variable}='${wanted}'; the host python of the ${STAGE} stage in recipe/meta.yaml and recipe/recipe-v1.yaml must match it (X.Yt: free-threaded)"
}

package_files() {
    # The rules of which file goes to which package live in package_files.py (bld.bat and
    # `python -m tools layout` run the same); its one error line becomes ours.
    local stage="$1" listing
    shift
    listing="$("${PYTHON}" -B "${RECIPE_DIR}/package_files.py" "${stage}" --platform "${target_platform}" \
        --prefix "${PREFIX}" "$@" 2>"${STAGE_DIR}/package_files.err")" \
        || die "$(sed 's/^package_files.py: error: //' "${STAGE_DIR}/package_files.err")"
    printf '%s\n' "${listing}"
}

linkage_tool() {
    # What lists a library's dependencies on the target platform. The compilers' activation
    # names the (possibly target-prefixed) binutils/cctools in READELF and OTOOL.
    case "${target_platform}" in
        linux-*) echo "${READELF:-readelf}" ;;
        osx-*) echo "${OTOOL:-otool}" ;;
        *) die "target_platform='${target_platform}' has no linkage tool in ${RECIPE_FILE}" ;;
    esac
}

require_linkage_tool() {
    # Checked before the hours of compiling: without it the libtorch stage's
    # Python-independence check (check_python_independent) could not run.
    local tool
    tool="$(linkage_tool)"
    command -v "${tool%% *}" >/dev/null 2>&1 \
        || die "${tool} is not on PATH; ${RECIPE_FILE} needs it to check that libtorch links no Python library: add the compiler (binutils/cctools) to the build requirements of the top-level build and the libtorch output in recipe/meta.yaml, or set READELF/OTOOL"
}
