# shellcheck shell=bash
# The pytorch stage, once per Python: installs torch into $SP_DIR (for the megabuild Python,
# the compile stage's wheel: nothing compiles again, whatever output came before; for any
# other, the configured tree pointed at $PYTHON with cmake_cache, so that only
# Python-bound targets rebuild), moves libtorch_python to $PREFIX/lib, and turns
# torch/{lib,bin,share} files libtorch already ships into symlinks.

build_pytorch() {
    [[ -f "${CMAKE_CACHE}" ]] \
        || die "${CMAKE_CACHE} does not exist; the compile stage (the top-level build of recipe/meta.yaml) configures it before any pytorch output"
    [[ -n "${SP_DIR:-}" ]] || die "SP_DIR is not set; run ${RECIPE_FILE} through conda-build (it sets SP_DIR)"
    [[ -n "${CF_TORCH_PYTHON:-}" ]] \
        || die "CF_TORCH_PYTHON is not set; pass it in script_env of the pytorch output in recipe/meta.yaml (its script env in recipe/recipe-v1.yaml)"
    # From here on X.Y or X.Yt: the recipes pass the python variant ("3.14.* *_cp314t").
    CF_TORCH_PYTHON="$(python_label CF_TORCH_PYTHON "${CF_TORCH_PYTHON}")"
    [[ -z "${PY_VER:-}" || "${CF_TORCH_PYTHON%t}" == "${PY_VER}" || "${CF_TORCH_PYTHON}" == "${PY_VER}" ]] \
        || die "CF_TORCH_PYTHON='${CF_TORCH_PYTHON}' but PY_VER='${PY_VER:-}'; the pytorch output's script_env in recipe/meta.yaml must name its own Python"
    python_is CF_TORCH_PYTHON "${CF_TORCH_PYTHON}"
    check_cached_compiler_cache
    detect_build_backend
    backend_settings
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
    # For scikit-build-core this rewrites .skbuild-info.json too (see build_skbuild.sh).
    cmake_cache retarget-python "${CMAKE_CACHE}" --python "${PYTHON}"
    drop_stale_bytecode
    backend_install
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
