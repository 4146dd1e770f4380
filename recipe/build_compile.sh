# shellcheck shell=bash
# The compile stage (meta.yaml's top-level build, recipe-v1.yaml's staging output, both
# named libtorch-build): configures and compiles everything once against the megabuild
# Python, stashes both flavours of libtorch_cuda_linalg on Linux CUDA and keeps the
# megabuild Python's wheel, all under $SRC_DIR/_stage/; installs nothing into $PREFIX.
# The libtorch stage runs it too when no compile stage ran in its work directory.

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
    backend_settings
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
    backend_compile
}

stash_cuda_linalg_flavours() {
    local name="libtorch_cuda_linalg${SHLIB_EXT}" magma_dir nomagma_dir
    magma_dir="${STAGE_DIR}/cuda-linalg-magma/lib"
    nomagma_dir="${STAGE_DIR}/cuda-linalg-nomagma/lib"
    # magma: the library PyTorch installs into its own tree.
    [[ -f "$(backend_install_tree)/lib/${name}" ]] \
        || die "the build produced no $(backend_install_tree)/lib/${name} (USE_CUDA=${USE_CUDA:-})"
    mkdir -p "${magma_dir}"
    cp -p "$(backend_install_tree)/lib/${name}" "${magma_dir}/"
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
