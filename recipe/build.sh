#!/usr/bin/env bash
# Build script for every output of this recipe on Linux and macOS (Windows: bld.bat).
#
# Both recipes run the `compile` stage once (meta.yaml's top-level build, recipe-v1.yaml's
# staging output, both named libtorch-build), then one stage per output in the same work
# directory ($SRC_DIR): conda-build shares it between the top-level build and the outputs,
# rattler-build restores the staging output's for every output that inherits it. Every
# output installs its own files into a $PREFIX holding only its host requirements (conda-build
# builds the outputs in dependency order and recreates the prefix for each). The script
# dispatches on the stage, which both recipes set in CF_TORCH_BUILD_STAGE (rattler-build
# names no package in a staging output); without it, on PKG_NAME, which conda-build sets to
# the same names (libtorch-build for the compile stage):
#
#   compile               Configures and compiles everything once against the single
#                         Python the recipes name ($PYTHON). On Linux CUDA the tree is
#                         configured with MAGMA, and patch 0004 adds the nomagma build of
#                         libtorch_cuda_linalg to the same build; both flavours are stashed
#                         under $SRC_DIR/_stage/, as is the megabuild Python's wheel.
#                         Installs nothing into $PREFIX.
#   libtorch              Installs the Python-independent files into $PREFIX (after the
#                         `compile` stage, when it has not run in this work directory).
#   libtorch-cuda-linalg  Installs the stashed library CF_TORCH_LINALG_FLAVOR names.
#   pytorch               Once per Python: points the configured tree at $PYTHON with
#                         cmake_cache (only Python-bound targets rebuild), pip-installs
#                         torch into $SP_DIR (for the megabuild Python, the compile stage's
#                         wheel: nothing compiles again, whatever output came before),
#                         moves libtorch_python to $PREFIX/lib, and turns torch/{lib,bin,share}
#                         files libtorch already ships into symlinks.
#
# Two build systems, chosen by what the source declares (recipe/build_backend.py reads its
# [build-system] backend; never the version number):
#
#   setuptools (PyTorch <= 2.13): `setup.py build` configures and compiles build/ and
#       installs into the source's torch/ (the cache's CMAKE_INSTALL_PREFIX); each pytorch
#       output runs `pip install .`, which reuses build/.
#   scikit-build-core (PyTorch >= 2.14, pytorch/pytorch#180247): the backend configures and
#       compiles build/ (its build-dir setting, kept between builds) while building the
#       megabuild Python's wheel; `cmake --install build` then lays out the install tree
#       under $SRC_DIR/_stage/install. Each pytorch output runs `pip install .` with the
#       same build-dir, after cmake_cache has pointed both the cache and the backend's
#       .skbuild-info.json at its Python: otherwise scikit-build-core, which every host
#       environment holds its own copy of, deletes the top-level CMakeCache.txt and
#       CMakeFiles/ (the configuration, not PyTorch's objects, which live in per-directory
#       CMakeFiles/; a configure from an empty cache decides everything anew), and
#       FindPython's internal entries contradict the new interpreter.
#
# Build options reach CMake from the environment: PyTorch's cmake/EnvVarForwarding.cmake
# writes every BUILD_*, USE_* and CMAKE_* variable (and a few named ones) into the cache on
# every configure, overwriting it. Every stage runs the same configure_build below, and each
# pytorch output checks that it would write nothing the compile stage did not
# (check_stage_environment, recipe/stage_environment.py).
#
# The seam: the script drives the source tree only through those commands and
# build/CMakeCache.txt (+ .skbuild-info.json), the install tree, and the install component
# patch 0004 defines (`cmake --install build --component cuda_linalg_nomagma`). It needs
# no knowledge of PyTorch's internal files. tests/e2e/test_build_sh.py runs this very script
# against a miniature torch-shaped project (tests/fixtures/minitorch, both layouts) in a
# faked conda-build environment. The miniature forwards BUILD_*/USE_*/CMAKE_* the way
# PyTorch 2.15 does, and reads MAGMA_HOME, BLAS, OpenBLAS_*, TORCH_CUDA_ARCH_LIST,
# TORCH_NVCC_FLAGS, CMAKE_ARGS, MAX_JOBS, PYTORCH_BUILD_VERSION/NUMBER and LDFLAGS as PyTorch
# does; the other PyTorch options exported below reach its cache and change nothing there.
set -euo pipefail

RECIPE_FILE="recipe/build.sh"

die() {
    echo "build.sh: error: $*" >&2
    exit 2
}

for required in PKG_VERSION SRC_DIR PREFIX RECIPE_DIR target_platform; do
    [[ -n "${!required:-}" ]] \
        || die "${required} is not set; run ${RECIPE_FILE} through conda-build or rattler-build (they set ${required})"
done
if [[ -n "${CF_TORCH_BUILD_STAGE:-}" ]]; then
    STAGE_VARIABLE=CF_TORCH_BUILD_STAGE
elif [[ -n "${PKG_NAME:-}" ]]; then
    STAGE_VARIABLE=PKG_NAME
else
    die "neither CF_TORCH_BUILD_STAGE nor PKG_NAME is set; recipe/meta.yaml and recipe/recipe-v1.yaml set CF_TORCH_BUILD_STAGE for every output"
fi
STAGE="${!STAGE_VARIABLE}"
# conda-build sets PYTHON only for outputs with python in their requirements: not for
# libtorch-cuda-linalg, whose stage copies a stashed file and runs no Python (found by
# building meta.yaml with the real conda-build; rattler-build sets it for every output).
if [[ "${STAGE}" != libtorch-cuda-linalg && -z "${PYTHON:-}" ]]; then
    die "PYTHON is not set; run ${RECIPE_FILE} through conda-build or rattler-build (they set PYTHON)"
fi

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

cmake_cache() {
    "${PYTHON}" -B "${RECIPE_DIR}/cmake_cache" "$@"
}

detect_build_backend() {
    # setuptools or scikit-build-core, from the source's declaration; anything else stops
    # the build with the helper's one line (it names the file and what it found).
    local answer
    answer="$("${PYTHON}" -B "${RECIPE_DIR}/build_backend.py" "${SRC_DIR}" 2>&1)" \
        || die "${answer#build_backend.py: error: }"
    BUILD_BACKEND="${answer}"
    # The recipe's own `cmake --install` strips exactly when the backend's install does, so
    # that libtorch's files and each pytorch output's match: setup.py's `install` target does
    # not strip, scikit-build-core's install step does (install.strip, true for Release).
    case "${BUILD_BACKEND}" in
        setuptools) INSTALL_STRIP=() ;;
        scikit-build-core) INSTALL_STRIP=(--strip) ;;
        *) die "recipe/build_backend.py answered '${BUILD_BACKEND}', which ${RECIPE_FILE} does not build" ;;
    esac
    echo "build.sh: ${SRC_DIR} builds with ${BUILD_BACKEND}"
}

# Relative path from directory $2 to file $1 (both absolute): conda keeps relative
# symlinks valid wherever the environment is installed.
relative_path() {
    local target="$1" base="$2" up=""
    while [[ "${target#"${base}"/}" == "${target}" ]]; do
        base="${base%/*}"
        up="../${up}"
    done
    printf '%s\n' "${up}${target#"${base}"/}"
}

is_linux_cuda() {
    [[ "${CUDA_VERSION_VARIANT}" != "None" && "${target_platform}" == linux-* ]]
}

########################################################################
#### COMPILER AND LINKER FLAGS
########################################################################
configure_flags() {
    CFLAGS="${CFLAGS:-}"
    CXXFLAGS="${CXXFLAGS:-}"
    LDFLAGS="${LDFLAGS:-}"
    # Templates instantiated in headers are called across libtorch's shared libraries;
    # hidden inline symbols break those links.
    CXXFLAGS="${CXXFLAGS//-fvisibility-inlines-hidden/}"
    # libtorch_global_deps exists only for its NEEDED entries, which --as-needed drops;
    # -dead_strip_dylibs does the same on macOS.
    LDFLAGS="${LDFLAGS//-Wl,--as-needed/}"
    LDFLAGS="${LDFLAGS//-Wl,-dead_strip_dylibs/}"
    if [[ "${target_platform}" == linux-* ]]; then
        # Lazy binding: libtorch_cuda references libcuda, which only a GPU driver provides;
        # with -z,now `import torch` would fail on every machine without one.
        LDFLAGS="${LDFLAGS//-Wl,-z,now/}"
        LDFLAGS="${LDFLAGS} -Wl,-z,lazy"
        # An assembler object without a .note.GNU-stack section makes the whole library ask
        # for an executable stack, which glibc 2.41 refuses to dlopen.
        # https://sourceware.org/git/?p=glibc.git;a=blob;f=NEWS;hb=glibc-2.41 (dlopen, execstack)
        LDFLAGS="${LDFLAGS} -Wl,-z,noexecstack"
    fi
    if [[ "${target_platform}" == osx-64 ]]; then
        CFLAGS="${CFLAGS} -DTARGET_OS_OSX=1"
        CXXFLAGS="${CXXFLAGS} -DTARGET_OS_OSX=1"
    fi
    export CFLAGS CXXFLAGS LDFLAGS
}

LAUNCHER_LANGUAGES=(C CXX CUDA)

use_compiler_cache() {
    # A compiler cache when the build environment has one (ccache or sccache in the
    # build requirements, or a developer's local build); CMake takes
    # CMAKE_<LANG>_COMPILER_LAUNCHER from the environment on the first configure and the
    # forwarding writes it into the cache on every configure that sees it (later stages
    # unset it: check_cached_compiler_cache). A launcher the user exported already is kept.
    local launcher language variable
    for launcher in sccache ccache; do
        command -v "${launcher}" >/dev/null 2>&1 || continue
        for language in "${LAUNCHER_LANGUAGES[@]}"; do
            variable="CMAKE_${language}_COMPILER_LAUNCHER"
            export "${variable}=${!variable:-${launcher}}"
        done
        echo "build.sh: compiling through ${launcher}"
        return 0
    done
}

check_cached_compiler_cache() {
    # The shared tree compiles through whatever launcher the top-level build recorded.
    # Nothing is exported here: a launcher in the environment would override the cache
    # (cmake/EnvVarForwarding.cmake) and change every compile command, which recompiles
    # all of libtorch.
    local language variable launcher
    for language in "${LAUNCHER_LANGUAGES[@]}"; do
        variable="CMAKE_${language}_COMPILER_LAUNCHER"
        unset "${variable}"
        launcher="$(cmake_cache get "${CMAKE_CACHE}" "${variable}" --default "")"
        if [[ -n "${launcher}" ]] && ! command -v "${launcher%%;*}" >/dev/null 2>&1; then
            die "the configured tree compiles through ${variable}='${launcher}', which this output's build environment lacks; give the ${STAGE} output the same build requirements as the top-level build in recipe/meta.yaml (the staging output in recipe/recipe-v1.yaml)"
        fi
    done
}

########################################################################
#### CMAKE ARGUMENTS FROM CONDA-BUILD
########################################################################
configure_cmake_args() {
    # conda-build's CMAKE_ARGS carry the cross-compilation toolchain. setup.py hands them
    # to the first cmake run only with patch 0003; scikit-build-core reads CMAKE_ARGS
    # itself on every configure (its documented mechanism), so a scikit-build-core source
    # needs nothing from that patch, which patches setup.py's helpers and stops applying
    # once they are gone (tools bump names it). Two arguments need adjusting: this script
    # picks the installed files up from an install tree of its own (setuptools: the
    # source's torch/; scikit-build-core: the wheel's), so CMAKE_INSTALL_PREFIX=$PREFIX
    # must go; and the find root must include $SRC_DIR so that cross builds find the
    # vendored third_party/ sources.
    local arg words=() kept=()
    read -r -a words <<< "${CMAKE_ARGS:-}"
    # An empty array expanded bare is an unbound variable under `set -u` in bash < 4.4
    # (macOS's /bin/bash is 3.2): hence ${a[@]+"${a[@]}"} wherever an array can be empty.
    for arg in ${words[@]+"${words[@]}"}; do
        case "${arg}" in
            -DCMAKE_INSTALL_PREFIX=*|-DCMAKE_INSTALL_PREFIX:*=*) ;;
            -DCMAKE_FIND_ROOT_PATH=*) kept+=("${arg};${SRC_DIR}") ;;
            *) kept+=("${arg}") ;;
        esac
    done
    if [[ -x "${BUILD_PREFIX:-/nonexistent}/bin/protoc" ]]; then
        # The host's protoc cannot run when cross-compiling; the build machine's can. The
        # code generation runs the protobuf::protoc target the host's protobuf-config.cmake
        # imports, which Protobuf_PROTOC_EXECUTABLE does not change; cmake/ProtoBuf.cmake
        # runs CAFFE2_CUSTOM_PROTOC_EXECUTABLE instead when it exists (and hands it to ONNX).
        kept+=("-DProtobuf_PROTOC_EXECUTABLE=${BUILD_PREFIX}/bin/protoc")
        kept+=("-DCAFFE2_CUSTOM_PROTOC_EXECUTABLE=${BUILD_PREFIX}/bin/protoc")
    fi
    if [[ "${build_platform:-${target_platform}}" != "${target_platform}" ]]; then
        # Cross-compiling, FindPython asks the interpreter nothing and torch._C would be
        # named _C.so, which setup.py does not package (pytorch#189388). Patch 0007 takes
        # the target's SOABI from here; cross-python's interpreter answers for the target.
        kept+=("-DTORCH_PYTHON_SOABI=$(target_soabi)")
        # Cross-compiling, FindPython takes only the version from the interpreter and
        # looks for the headers through whichever pythonX.Y-config PATH offers first
        # (the build machine's, or another Python's), so name the target's. cmake_cache
        # retarget-python moves this entry to each pytorch output's Python.
        # https://gitlab.kitware.com/cmake/cmake/-/blob/v4.4.5/Modules/FindPython/Support.cmake
        kept+=("-DPython_INCLUDE_DIR=$(target_include_dir)")
    fi
    CMAKE_ARGS="${kept[*]:-}"
    export CMAKE_ARGS
    # CMake's install step skips a file whose time stamp lies within a second of the
    # installed copy's, whatever its content. Each Python's libtorch_python replaces a file
    # an install wrote moments earlier, so every install must copy. (The variable is read
    # by cmFileInstaller.)
    # https://github.com/Kitware/CMake/blob/master/Source/cmFileInstaller.cxx
    export CMAKE_INSTALL_ALWAYS=1
    export CMAKE_GENERATOR=Ninja
    export CMAKE_BUILD_TYPE=Release
    # scikit-build-core keeps its build tree here between builds (build-dir); setuptools
    # builds in the same place by itself.
    SKBUILD_ARGS=(--config-settings=build-dir="${BUILD_DIR}")
    # Keep what the compiler activation put there (the cross sysroot, for one).
    export CMAKE_PREFIX_PATH="${PREFIX}${CMAKE_PREFIX_PATH:+:${CMAKE_PREFIX_PATH}}"
}

target_soabi() {
    local soabi
    soabi="$("${PYTHON}" -c 'import sysconfig; print(sysconfig.get_config_var("SOABI") or "")')"
    [[ -n "${soabi}" ]] \
        || die "PYTHON='${PYTHON}' reports no SOABI; a cross build needs the target's (cross-python_${target_platform} in the build requirements of recipe/meta.yaml)"
    echo "${soabi}"
}

target_include_dir() {
    local include
    include="$("${PYTHON}" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
    [[ -f "${include}/Python.h" ]] \
        || die "PYTHON='${PYTHON}' names '${include}' as its include directory, which has no Python.h; a cross build needs the target's headers (python in the host requirements of recipe/meta.yaml)"
    echo "${include}"
}

########################################################################
#### PYTORCH BUILD OPTIONS
########################################################################
configure_pytorch() {
    # CPU_COUNT jobs run out of memory (conda-forge's builds were OOM-killed at 16): at most
    # one job per 8 GB of this machine's memory (JOB_MEMORY_GB overrides; build_jobs.py).
    MAX_JOBS="$("${PYTHON}" -B "${RECIPE_DIR}/build_jobs.py" --per-job-gb 8)" \
        || die "recipe/build_jobs.py could not choose MAX_JOBS (its error is above)"
    # setup.py passes MAX_JOBS to its `cmake --build` itself; from 2.14 on pyproject.toml's
    # [tool.scikit-build.env] table hands it to CMake as CMAKE_BUILD_PARALLEL_LEVEL
    # (pytorch/pytorch#180247), unless that is set already: so it is not set here.
    export MAX_JOBS
    echo "MAX_JOBS=${MAX_JOBS} (CPU_COUNT=${CPU_COUNT:-unset}, JOB_MEMORY_GB=${JOB_MEMORY_GB:-8})"
    # The wheel version: setup.py reads these, and from 2.14 on tools/metadata/version.py
    # (the version provider of pyproject.toml's dynamic metadata).
    export PYTORCH_BUILD_VERSION="${PKG_VERSION}"
    # Any build number above 1 becomes a .postN suffix in torch.__version__.
    # https://github.com/conda-forge/pytorch-cpu-feedstock/issues/315
    export PYTORCH_BUILD_NUMBER=0
    export BUILD_TEST=0
    export INSTALL_TEST=0
    export USE_NUMA=0
    export USE_ITT=0

    # System libraries from the host environment instead of the copies in third_party/.
    export USE_SYSTEM_SLEEF=1
    export USE_SYSTEM_PYBIND11=1
    export USE_SYSTEM_EIGEN_INSTALL=1
    # An option of patch 0005 (2.13.0 has none): without it torch installs its own include/fmt,
    # which the host fmt package owns.
    export USE_SYSTEM_FMT=1
    export BUILD_CUSTOM_PROTOBUF=OFF

    case "${blas_impl:-}" in
        mkl)
            case "${target_platform}" in
                linux-64|osx-64) ;;
                *) die "blas_impl='mkl' on target_platform='${target_platform}': MKL exists for x86_64 only; fix the blas_impl selector in recipe/conda_build_config.yaml" ;;
            esac
            export BLAS=MKL
            ;;
        generic)
            # PyTorch's OpenBLAS support, pointed at conda-forge's switchable reference
            # interfaces instead of one implementation: patch 0002 links every library
            # OpenBLAS_LIB_NAME lists (and routes complex dot products through CBLAS).
            export BLAS=OpenBLAS
            export OpenBLAS_HOME="${PREFIX}"
            export OpenBLAS_LIB_NAME="cblas;blas;lapack"
            ;;
        *)
            die "blas_impl='${blas_impl:-}' is not known (mkl, generic); fix recipe/conda_build_config.yaml or teach ${RECIPE_FILE} the new BLAS"
            ;;
    esac

    # Upstream's default, named so that the recipe's own check (check_torch.py --expect
    # openmp) and a bump's list of unnamed CMake knobs both see it chosen.
    export USE_OPENMP=1
    case "${target_platform}" in
        osx-*)
            # libuv from the host environment makes torch.distributed buildable on macOS.
            export USE_DISTRIBUTED=1
            if [[ "${target_platform}" == osx-arm64 ]]; then
                export USE_MKLDNN=0
            fi
            ;;
        linux-*)
            export USE_MKLDNN=1
            ;;
        *)
            die "target_platform='${target_platform}' is not built by ${RECIPE_FILE} (linux-*, osx-*; Windows uses recipe/bld.bat)"
            ;;
    esac

    if [[ "${CUDA_VERSION_VARIANT}" == "None" ]]; then
        export USE_CUDA=0
    else
        configure_cuda
    fi
}

configure_cuda() {
    local arch_list target_dir
    case "${target_platform}" in
        linux-64) target_dir="targets/x86_64-linux" ;;
        linux-aarch64) target_dir="targets/sbsa-linux" ;;
        *) die "cuda_compiler_version='${CUDA_VERSION_VARIANT}' on target_platform='${target_platform}': ${RECIPE_FILE} builds CUDA on Linux only; fix recipe/conda_build_config.yaml" ;;
    esac
    # The GPU generations each CUDA version can target: one row per CUDA version and
    # platform in cuda_arch_lists.txt, read by the one helper bld.bat uses too (tools check
    # and the tests read the same file). A missing row is the helper's one error line.
    arch_list="$("${PYTHON}" -B "${RECIPE_DIR}/cuda_arch_list.py" "${RECIPE_DIR}/cuda_arch_lists.txt" \
        "${CUDA_VERSION_VARIANT}" "${target_platform}" 2>&1)" || die "${arch_list#error: }"
    export TORCH_CUDA_ARCH_LIST="${arch_list}"
    # conda-forge's cuda-nvcc activation exports CUDAARCHS (every GPU generation its CUDA
    # supports) where a build left it unset, and CMake takes that for CMAKE_CUDA_ARCHITECTURES:
    # the fatbins would hold those GPUs besides the row above (the miniature's did). The row
    # is the one list. https://github.com/rapidsai/rmm/issues/2238 (the same interference)
    unset CUDAARCHS
    export USE_CUDA=1
    # Both flavours of libtorch_cuda_linalg from one build. Switching USE_MAGMA between
    # two builds would rewrite the generated ATen/cuda/CUDAConfig.h and recompile every
    # CUDA source that reaches it (recipe/README.md, "MAGMA or not"). Instead the tree is
    # configured with MAGMA once, and patch 0004 compiles the linalg sources a second time
    # with AT_MAGMA_ENABLED() false and no magma. Both are exported in every stage: the
    # forwarding writes them into the cache on every configure (see check_stage_environment).
    export USE_MAGMA=1
    export BUILD_CUDA_LINALG_NOMAGMA=1
    # No native-AOT stage 2 (pytorch#194242, #194243): nothing here runs it (only upstream's
    # CI and spin invoke tools/native_aot/build_stage2.py after installing torch), so a fresh
    # tree embeds nothing anyway; the opt-out keeps a tree where someone ran it by hand from
    # embedding kernels at the next configure. recipe/README.md, "Native AOT kernels".
    export TORCH_NATIVE_AOT=0
    export USE_CUFILE=1
    export USE_STATIC_CUDNN=0
    export USE_SYSTEM_NCCL=1
    export USE_STATIC_NCCL=0
    export NCCL_ROOT_DIR="${PREFIX}"
    export NCCL_INCLUDE_DIR="${PREFIX}/include"
    export USE_SYSTEM_NVTX=1
    export MAGMA_HOME="${PREFIX}"
    export CUDAToolkit_ROOT="${PREFIX}"
    export CUDAToolkit_BIN_DIR="${BUILD_PREFIX:-${PREFIX}}/bin"
    export CUDAToolkit_TARGET_DIR="${PREFIX}/${target_dir}"
    export TORCH_NVCC_FLAGS="-Xfatbin -compress-all"
    if [[ "${CUDA_VERSION_VARIANT}" == 13.* ]]; then
        TORCH_NVCC_FLAGS="${TORCH_NVCC_FLAGS} -compress-mode=size"
    fi
    if [[ "${target_platform}" == linux-aarch64 ]]; then
        # Duplicate linker script with CUDA on aarch64.
        # https://github.com/conda-forge/pytorch-cpu-feedstock/issues/264
        # https://github.com/pytorch/pytorch/pull/121975
        export USE_PRIORITIZED_TEXT_FOR_LD=1
    fi
}

########################################################################
#### BUILD STEPS
########################################################################
compile_tree() {
    # Configure and compile build/ for the megabuild Python, lay out the install tree, and
    # keep the megabuild Python's wheel. conda-build orders the pytorch outputs as it likes
    # (PYTHONHASHSEED decides) in this one work directory: once another Python's output has
    # retargeted the tree, the megabuild Python's bindings would compile a second time for
    # its own output. Built here, while the tree is that Python's, its wheel is what that
    # output installs (build_pytorch), so every Python's bindings compile exactly once.
    # rattler-build carries the wheel from the staging output to every output.
    echo "build.sh: compiling with ${BUILD_BACKEND} for ${PYTHON} (USE_CUDA=${USE_CUDA:-} USE_MAGMA=${USE_MAGMA:-unset})"
    rm -rf "${MEGABUILD_WHEELS}"
    case "${BUILD_BACKEND}" in
        setuptools)
            # setup.py's build installs into its own torch/ on the way.
            (cd "${SRC_DIR}" && "${PYTHON}" -m pip wheel . --no-deps --no-build-isolation \
                --no-clean --wheel-dir "${MEGABUILD_WHEELS}" -v)
            ;;
        scikit-build-core)
            (cd "${SRC_DIR}" && "${PYTHON}" -m pip wheel . --no-deps --no-build-isolation \
                "${SKBUILD_ARGS[@]}" --wheel-dir "${MEGABUILD_WHEELS}" -v)
            rm -rf "${INSTALL_STAGE}"
            # Stripped as the backend's own install is (detect_build_backend).
            cmake --install "${BUILD_DIR}" --prefix "${INSTALL_STAGE}" ${INSTALL_STRIP[@]+"${INSTALL_STRIP[@]}"}
            ;;
        *) die "BUILD_BACKEND='${BUILD_BACKEND}' has no compile step in ${RECIPE_FILE}" ;;
    esac
}

megabuild_wheel_for() {
    # The compile stage's wheel when it was built for Python $1 (X.Y, or X.Yt for a
    # free-threaded one), else nothing. Its interpreter and ABI tags both: 3.14's is
    # cp314-cp314, 3.14t's cp314-cp314t, and neither output may take the other's.
    local version="${1%t}" flag="" tags
    [[ "$1" == *t ]] && flag=t
    tags="cp${version/./}-cp${version/./}${flag}"
    local wheels=("${MEGABUILD_WHEELS}"/torch-*-"${tags}"-*.whl)
    [[ -f "${wheels[0]}" ]] && echo "${wheels[0]}"
    return 0
}

install_tree() {
    # Where the configured tree's install rules put their files.
    case "${BUILD_BACKEND}" in
        # PyTorch's setup.py installs into its own source tree, $SRC_DIR/torch.
        setuptools) cmake_cache get "${CMAKE_CACHE}" CMAKE_INSTALL_PREFIX ;;
        scikit-build-core) echo "${INSTALL_STAGE}" ;;
        *) die "BUILD_BACKEND='${BUILD_BACKEND}' has no install tree in ${RECIPE_FILE}" ;;
    esac
}

stash_cuda_linalg_flavours() {
    local name="libtorch_cuda_linalg${SHLIB_EXT}" magma_dir nomagma_dir
    magma_dir="${STAGE_DIR}/cuda-linalg-magma/lib"
    nomagma_dir="${STAGE_DIR}/cuda-linalg-nomagma/lib"
    # magma: the library PyTorch installs into its own tree.
    [[ -f "$(install_tree)/lib/${name}" ]] \
        || die "the build produced no $(install_tree)/lib/${name} (USE_CUDA=${USE_CUDA:-})"
    mkdir -p "${magma_dir}"
    cp -p "$(install_tree)/lib/${name}" "${magma_dir}/"
    # nomagma: patch 0004 builds it in the same tree and installs it only on request, so
    # that it never lands in torch/lib next to the magma one.
    cmake --install "${BUILD_DIR}" --component cuda_linalg_nomagma --prefix "${nomagma_dir%/lib}" \
        ${INSTALL_STRIP[@]+"${INSTALL_STRIP[@]}"}
    # PyTorch turns USE_MAGMA off in the cache when it cannot find magma.
    [[ -f "${nomagma_dir}/${name}" ]] \
        || die "the build installed no ${nomagma_dir}/${name} (component cuda_linalg_nomagma, USE_MAGMA=$(cmake_cache get "${CMAKE_CACHE}" USE_MAGMA --default unset) in the tree): check that recipe/meta.yaml lists patches/0004-cmake-build-the-nomagma-cuda-linalg-library-in-the-same-tree.patch and libmagma-devel in the top-level host requirements"
    if cmp -s "${magma_dir}/${name}" "${nomagma_dir}/${name}"; then
        die "the magma and nomagma builds of ${name} are identical (USE_MAGMA lost on configure, or magma not found); fix build_libtorch in ${RECIPE_FILE}"
    fi
}

python_abi() {
    # X.Y for $PYTHON, with a t after it when it is free-threaded (Py_GIL_DISABLED in its
    # pyconfig.h): 3.14 and 3.14t are two ABIs, neither loads the other's extensions.
    "${PYTHON}" -c 'import sys, sysconfig; print("%d.%d%s" % (sys.version_info[0], sys.version_info[1], "t" if sysconfig.get_config_var("Py_GIL_DISABLED") else ""))'
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

install_libtorch_files() {
    local listing line files=()
    mkdir -p "${STAGE_DIR}"
    listing="$(package_files libtorch --tree "$(install_tree)")"
    # One path per line (no `mapfile`: macOS's /bin/bash is 3.2, tests/unit/test_bash32_static.py).
    while IFS= read -r line; do
        if [[ -n "${line}" ]]; then files+=("${line}"); fi
    done <<< "${listing}"
    check_python_independent ${files[@]+"${files[@]}"}
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
    # Checked before the hours of compiling: without it the Python-independence check
    # below could not run.
    local tool
    tool="$(linkage_tool)"
    command -v "${tool%% *}" >/dev/null 2>&1 \
        || die "${tool} is not on PATH; ${RECIPE_FILE} needs it to check that libtorch links no Python library: add the compiler (binutils/cctools) to the build requirements of the top-level build and the libtorch output in recipe/meta.yaml, or set READELF/OTOOL"
}

linked_libraries() {
    # The libraries $1 links, one per line: ELF NEEDED entries or Mach-O load commands.
    local tool
    tool="$(linkage_tool)"
    case "${target_platform}" in
        linux-*) "${tool}" -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' ;;
        osx-*) "${tool}" -L "$1" | tail -n +2 | awk '{ print $1 }' ;;
        *) die "target_platform='${target_platform}' has no linkage tool in ${RECIPE_FILE}" ;;
    esac
}

check_python_independent() {
    # libtorch must not need libtorch_python or libpython: it serves every Python.
    local rel linked
    for rel in "$@"; do
        [[ "${rel}" == lib/*"${SHLIB_EXT}"* && ! -L "${PREFIX}/${rel}" ]] || continue
        linked="$(linked_libraries "${PREFIX}/${rel}")" \
            || die "$(linkage_tool) could not read ${PREFIX}/${rel}"
        if grep -Eq '(^|/)lib(torch_python|python[0-9])' <<< "${linked}"; then
            die "${PREFIX}/${rel} needs a Python library, but libtorch must be Python-independent; exclude it in libtorch_path in recipe/package_files.py"
        fi
    done
}

install_activation_scripts() {
    # Downstream CUDA extension builds can use the architectures libtorch was built for:
    #   export TORCH_CUDA_ARCH_LIST="${CF_TORCH_CUDA_ARCH_LIST}"
    # https://github.com/conda-forge/pytorch-cpu-feedstock/issues/423
    local phase template text
    for phase in activate deactivate; do
        template="${RECIPE_DIR}/${phase}-libtorch.sh"
        [[ -f "${template}" ]] || die "${template} is missing"
        text="$(<"${template}")"
        mkdir -p "${PREFIX}/etc/conda/${phase}.d"
        printf '%s\n' "${text//@CF_TORCH_CUDA_ARCH_LIST@/${TORCH_CUDA_ARCH_LIST}}" \
            > "${PREFIX}/etc/conda/${phase}.d/libtorch_${phase}.sh"
    done
}

compile_libtorch() {
    # meta.yaml and recipe-v1.yaml name the megabuild Python once and hand it over in
    # script_env / the script's env.
    [[ -n "${CF_TORCH_MEGABUILD_PYTHON:-}" ]] \
        || die "CF_TORCH_MEGABUILD_PYTHON is not set; pass it in script_env of the top-level build in recipe/meta.yaml (the staging output's script env in recipe/recipe-v1.yaml)"
    # A GIL X.Y: the core never compiles against a free-threaded Python (python_is).
    python_is CF_TORCH_MEGABUILD_PYTHON "${CF_TORCH_MEGABUILD_PYTHON}"
    if [[ -f "${CMAKE_CACHE}" ]]; then
        # A kept tree that a free-threaded output retargeted: refused in one line, before
        # anything compiles against that Python.
        local refused
        refused="$(cmake_cache check-abi "${CMAKE_CACHE}" --python "${PYTHON}" 2>&1 >/dev/null)" \
            || die "${refused#cmake_cache.py: error: }; the compile stage builds the core for the megabuild Python (${CF_TORCH_MEGABUILD_PYTHON}) only"
    fi
    require_linkage_tool
    detect_build_backend
    use_compiler_cache
    setuptools_only_settings
    # A work directory compiled before (a rebuild in a kept one) compiles again,
    # incrementally; until this compile has finished, no libtorch stage may take the tree
    # for complete (bld.bat does the same; tests/e2e/test_bld_bat_wine_failures.py). After the
    # checks above, which change nothing on the machine they refuse.
    rm -f "${COMPILED_MARKER}"
    # What every later configure of this tree must see again (check_stage_environment).
    "${PYTHON}" -B "${RECIPE_DIR}/stage_environment.py" record "${STAGE_ENVIRONMENT}" \
        || die "recipe/stage_environment.py could not record the compile stage's environment (its error is above)"
    compile_tree
    if is_linux_cuda; then
        stash_cuda_linalg_flavours
    fi
    # For the libtorch stage that follows in the same work directory (rattler-build
    # restores it from the staging output): the tree is complete, nothing to compile.
    mkdir -p "${STAGE_DIR}"
    printf '%s\n' "${CF_TORCH_MEGABUILD_PYTHON}" > "${COMPILED_MARKER}"
}

build_libtorch() {
    if [[ -f "${COMPILED_MARKER}" ]]; then
        echo "build.sh: ${BUILD_DIR} was compiled by the compile stage; installing only"
        require_linkage_tool
        [[ -f "${CMAKE_CACHE}" ]] \
            || die "${COMPILED_MARKER} exists but ${CMAKE_CACHE} does not; the staging output of recipe/recipe-v1.yaml must leave its build tree in the work directory"
        detect_build_backend
        [[ -d "$(install_tree)" ]] \
            || die "${COMPILED_MARKER} exists but the install tree $(install_tree) does not; the staging output of recipe/recipe-v1.yaml must leave the work directory as the compile stage left it"
    else
        compile_libtorch
    fi
    if is_linux_cuda; then
        install_activation_scripts
    fi
    install_libtorch_files
}

install_cuda_linalg() {
    local flavour="${CF_TORCH_LINALG_FLAVOR:-}" stash
    case "${flavour}" in
        magma|nomagma) ;;
        *) die "CF_TORCH_LINALG_FLAVOR='${flavour}' is neither magma nor nomagma; check script_env of the libtorch-cuda-linalg output in recipe/meta.yaml" ;;
    esac
    stash="${STAGE_DIR}/cuda-linalg-${flavour}/lib"
    [[ -d "${stash}" ]] \
        || die "${stash} does not exist: the compile stage (the top-level build of recipe/meta.yaml) stashes it (cuda_compiler_version='${CUDA_VERSION_VARIANT}')"
    mkdir -p "${PREFIX}/lib"
    cp -pPR "${stash}/." "${PREFIX}/lib/"
}

build_pytorch() {
    [[ -f "${CMAKE_CACHE}" ]] \
        || die "${CMAKE_CACHE} does not exist; the compile stage (the top-level build of recipe/meta.yaml) configures it before any pytorch output"
    [[ -n "${SP_DIR:-}" ]] || die "SP_DIR is not set; run ${RECIPE_FILE} through conda-build (it sets SP_DIR)"
    [[ -n "${CF_TORCH_PYTHON:-}" ]] \
        || die "CF_TORCH_PYTHON is not set; pass it in script_env of the pytorch output in recipe/meta.yaml (its script env in recipe/recipe-v1.yaml)"
    [[ -z "${PY_VER:-}" || "${CF_TORCH_PYTHON%t}" == "${PY_VER}" || "${CF_TORCH_PYTHON}" == "${PY_VER}" ]] \
        || die "CF_TORCH_PYTHON='${CF_TORCH_PYTHON}' but PY_VER='${PY_VER:-}'; the pytorch output's script_env in recipe/meta.yaml must name its own Python"
    python_is CF_TORCH_PYTHON "${CF_TORCH_PYTHON}"
    check_cached_compiler_cache
    detect_build_backend
    setuptools_only_settings
    # Before any shortcut: a stage environment that differs is a recipe error either way.
    check_stage_environment
    local wheel
    wheel="$(megabuild_wheel_for "${CF_TORCH_PYTHON}")"
    if [[ -n "${wheel}" ]]; then
        # The megabuild Python: its bindings compiled in the compile stage (compile_tree).
        echo "build.sh: installing the compile stage's ${wheel##*/}"
        (cd "${SRC_DIR}" && "${PYTHON}" -m pip install "${wheel}" --no-deps --no-build-isolation -v)
        finish_pytorch
        return 0
    fi
    # Point the shared tree at this output's Python; only Python-bound targets rebuild.
    # For scikit-build-core this rewrites .skbuild-info.json too (see the top of this file).
    cmake_cache retarget-python "${CMAKE_CACHE}" --python "${PYTHON}"
    drop_stale_bytecode
    case "${BUILD_BACKEND}" in
        setuptools)
            (cd "${SRC_DIR}" && "${PYTHON}" -m pip install . --no-deps --no-build-isolation --no-clean -v) ;;
        scikit-build-core)
            (cd "${SRC_DIR}" && "${PYTHON}" -m pip install . --no-deps --no-build-isolation "${SKBUILD_ARGS[@]}" -v) ;;
        *) die "BUILD_BACKEND='${BUILD_BACKEND}' has no install step in ${RECIPE_FILE}" ;;
    esac
    finish_pytorch
}

finish_pytorch() {
    # What every pytorch output does to the torch pip installed into $SP_DIR.
    # The build backend imported the source's tools/metadata while installing: its bytecode
    # would ship in the tests' source_files (etc/conda/test-files/pytorch/.../tools),
    # holding this machine's work path.
    drop_stale_bytecode
    drop_direct_url
    check_bytecode_matches_python
    check_extension_suffix
    place_torch_libraries
}

setuptools_only_settings() {
    # Settings only the setup.py build (PyTorch <= 2.13) reads; from 2.14 on nothing does
    # (EnvVarForwarding.cmake's aliases and PostBuildSteps.cmake name neither), so the
    # scikit-build-core build does not get them. Both were in this recipe before the switch:
    # PACKAGE_TYPE=conda for https://github.com/conda-forge/pytorch-cpu-feedstock/issues/243
    # (link conda's libraries instead of copying them into torch/lib), and the libstdc++ ABI.
    case "${BUILD_BACKEND}" in
        setuptools)
            export PACKAGE_TYPE=conda
            export _GLIBCXX_USE_CXX11_ABI=1
            ;;
        scikit-build-core) ;;
        *) die "BUILD_BACKEND='${BUILD_BACKEND}' has no settings branch in ${RECIPE_FILE}" ;;
    esac
}

check_stage_environment() {
    # Every configure copies the BUILD_*, USE_* and CMAKE_* variables (and a few more)
    # into the cache, overwriting it (cmake/EnvVarForwarding.cmake), and each pytorch output
    # configures the compile stage's tree again: one that differs would rewrite the cache
    # and recompile libtorch for this Python only, silently. Stop instead.
    local answer
    answer="$("${PYTHON}" -B "${RECIPE_DIR}/stage_environment.py" compare "${STAGE_ENVIRONMENT}" \
              --stage "${STAGE}" 2>&1)" \
        || die "${answer#stage_environment.py: error: }; export the same in every stage (configure_pytorch in ${RECIPE_FILE})"
}

check_extension_suffix() {
    # setup.py packages torch._C under this Python's extension suffix only: an untagged
    # _C.so (a cross build without the target's SOABI, pytorch#189388) never arrives and
    # `import torch` fails on the target, whose tests may not run (osx-64).
    local suffix
    suffix="$("${PYTHON}" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
    [[ -f "${SP_DIR}/torch/_C${suffix}" ]] \
        || die "pip install left no ${SP_DIR}/torch/_C${suffix}; a cross build names it with the SOABI configure_cmake_args passes (TORCH_PYTHON_SOABI, patch 0007) in ${RECIPE_FILE}"
}

drop_stale_bytecode() {
    # Every phase runs Python code from the shared tree (code generators, setup.py's
    # helpers), and bytecode written next to files setup.py packages as data (as
    # torchgen/packaged/ is) would ship in this output, compiled for another Python.
    find "${SRC_DIR}" -name __pycache__ -type d -prune -exec rm -rf {} +
}

drop_direct_url() {
    # pip records where it installed from (PEP 610): file://<the build machine's work folder>,
    # meaningless on a user's machine (python -m tools check: layout.build-prefix). Found by
    # the real-engine test (tests/e2e/test_e2e_real_engine.py).
    local info
    for info in "${SP_DIR}"/torch-*.dist-info; do
        rm -f "${info}/direct_url.json"
        sed -i.bak '/\/direct_url\.json,/d' "${info}/RECORD" && rm -f "${info}/RECORD.bak"
    done
}

check_bytecode_matches_python() {
    # Only what pip installed for this output (its RECORD): host packages are not ours.
    local tag records foreign
    tag="$("${PYTHON}" -c 'import sys; print(sys.implementation.cache_tag)')"
    records=("${SP_DIR}"/torch-*.dist-info/RECORD)
    [[ -f "${records[0]}" ]] || die "pip install left no ${SP_DIR}/torch-*.dist-info/RECORD"
    foreign="$(cut -d, -f1 "${records[@]}" | grep '__pycache__/.*\.pyc$' \
               | grep -Ev "\.${tag}(\.opt-[12])?\.pyc$" | head -n 1 || true)"
    [[ -z "${foreign}" ]] \
        || die "${SP_DIR}/${foreign} is bytecode for another Python than PYTHON='${PYTHON}' (${tag}); a build step left it in the shared tree: remove it in drop_stale_bytecode in ${RECIPE_FILE}"
}

place_torch_libraries() {
    # torch_python to $PREFIX/lib, torch/{lib,bin,share} files libtorch already ships
    # become links to them (each file in exactly one package), a new library stops the
    # build: package_files.py's pytorch stage.
    mkdir -p "${STAGE_DIR}"
    package_files pytorch --site-packages "${SP_DIR}"
    link_system_pybind11 "${SP_DIR}/torch/include"
}

link_system_pybind11() {
    # torch.utils.cpp_extension compiles extensions with -isystem torch/include only, where
    # upstream's wheels carry pybind11; with USE_SYSTEM_PYBIND11 the build copies none. A
    # relative link to the pybind11 package's headers (a run requirement of pytorch in
    # meta.yaml) restores the layout; check_cpp_extension.py in the recipe's tests guards it.
    # https://github.com/conda-forge/pytorch-cpu-feedstock/issues/212 (why not a copy in $PREFIX)
    local torch_include="$1"
    if [[ ! -d "${torch_include}" || ! -d "${PREFIX}/include/pybind11" ]] \
        || [[ -e "${torch_include}/pybind11" || -L "${torch_include}/pybind11" ]]; then
        return 0
    fi
    ln -s "$(relative_path "${PREFIX}/include/pybind11" "${torch_include}")" "${torch_include}/pybind11"
}

########################################################################
#### DISPATCH
########################################################################
configure_build() {
    configure_flags
    configure_cmake_args
    configure_pytorch
}

# Sourced (tests/e2e/test_build_sh_functions.py), the script only defines its functions.
if [[ "${BASH_SOURCE[0]}" != "${0}" ]]; then
    return 0
fi

case "${STAGE}" in
    compile|libtorch-build) configure_build; compile_libtorch ;;
    libtorch) configure_build; build_libtorch ;;
    # Only copies a stashed file: needs none of the build configuration.
    libtorch-cuda-linalg) install_cuda_linalg ;;
    pytorch) configure_build; build_pytorch ;;
    *) die "${STAGE_VARIABLE}='${STAGE}' is not a stage ${RECIPE_FILE} builds (compile or libtorch-build, libtorch, libtorch-cuda-linalg, pytorch); add a branch to the dispatch in ${RECIPE_FILE}" ;;
esac
