# shellcheck shell=bash disable=SC2154
# Linted alone by shellcheck: target_platform is conda-build's, checked by build.sh.
# The build environment of every stage that configures (compile, libtorch, pytorch):
# configure_build exports it. Build options reach CMake from the environment: PyTorch's
# cmake/EnvVarForwarding.cmake writes every BUILD_*, USE_* and CMAKE_* variable (and a few
# named ones) into the cache on every configure, overwriting it. Every stage runs the same
# configure_build, and each pytorch output checks that it would write nothing the compile
# stage did not (check_stage_environment, recipe/stage_environment.py). The miniature
# (tests/fixtures/minitorch) forwards BUILD_*/USE_*/CMAKE_* the way PyTorch 2.15 does, and
# reads MAGMA_HOME, BLAS, OpenBLAS_*, TORCH_CUDA_ARCH_LIST, TORCH_NVCC_FLAGS, CMAKE_ARGS,
# MAX_JOBS, PYTORCH_BUILD_VERSION/NUMBER and LDFLAGS as PyTorch does, and CF_TORCH_RELEASE_COMMIT
# through patch 0013 as PyTorch does with it; the other PyTorch options exported here reach its
# cache and change nothing there.

export_build_env() {
    # What every platform's build sets alike lives in one table, which bld.bat reads too:
    # NAME=VALUE lines, "#" comments and empty lines skipped, nothing expanded.
    local table="${RECIPE_DIR}/build_env.txt" line name value number=0
    [[ -f "${table}" ]] || die "${table} is missing; it comes with ${RECIPE_FILE}"
    while IFS= read -r line || [[ -n "${line}" ]]; do
        number=$((number + 1))
        # A checkout that gave the file CRLF line ends (cmd reads either).
        line="${line%$'\r'}"
        case "${line}" in
            ''|'#'*) continue ;;
            *=*) ;;
            *) die "${table}:${number}: '${line}' is not NAME=VALUE; fix that line" ;;
        esac
        name="${line%%=*}"
        value="${line#*=}"
        [[ "${name}" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] \
            || die "${table}:${number}: '${name}' is not a variable name; fix that line"
        case "${value}" in
            *[[:space:]\"\'\$%]*) die "${table}:${number}: the value of ${name} holds a space, quote, \$ or %, which bld.bat would read otherwise; fix that line" ;;
            *) ;;
        esac
        export "${name}=${value}"
    done < "${table}"
}

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
    # torch.version.git_version: the release archive has no .git, so PyTorch's
    # tools/generate_torch_version.py would write "Unknown"; patch 0013 has it take the
    # release's commit, which both recipes record (recipe/README.md, "torch.version.git_version").
    [[ "${CF_TORCH_RELEASE_COMMIT:-}" =~ ^[0-9a-f]{40}$ ]] \
        || die "CF_TORCH_RELEASE_COMMIT='${CF_TORCH_RELEASE_COMMIT:-}' is not a commit; pass CF_TORCH_RELEASE_COMMIT={{ git_version }} in script_env of the top-level build, libtorch and pytorch in recipe/meta.yaml (their script env in recipe/recipe-v1.yaml)"
    export CF_TORCH_RELEASE_COMMIT
    export USE_NUMA=0
    export USE_ITT=0

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

configure_build() {
    export_build_env
    configure_flags
    configure_cmake_args
    configure_pytorch
}
