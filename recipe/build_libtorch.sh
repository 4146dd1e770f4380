# shellcheck shell=bash disable=SC2154
# Linted alone by shellcheck: target_platform is conda-build's, checked by build.sh.
# The libtorch stage: installs the Python-independent files of the compiled tree into
# $PREFIX (compiling first, with build_compile.sh, when the compile stage has not run in
# this work directory), and checks that none of them needs a Python library.

build_libtorch() {
    if [[ -f "${COMPILED_MARKER}" ]]; then
        echo "build.sh: ${BUILD_DIR} was compiled by the compile stage; installing only"
        require_linkage_tool
        [[ -f "${CMAKE_CACHE}" ]] \
            || die "${COMPILED_MARKER} exists but ${CMAKE_CACHE} does not; the staging output of recipe/recipe-v1.yaml must leave its build tree in the work directory"
        detect_build_backend
        [[ -d "$(backend_install_tree)" ]] \
            || die "${COMPILED_MARKER} exists but the install tree $(backend_install_tree) does not; the staging output of recipe/recipe-v1.yaml must leave the work directory as the compile stage left it"
    else
        compile_libtorch
    fi
    if is_linux_cuda; then
        install_activation_scripts
    fi
    install_libtorch_files
}

install_libtorch_files() {
    local listing line files=()
    mkdir -p "${STAGE_DIR}"
    listing="$(package_files libtorch --tree "$(backend_install_tree)")"
    # One path per line (no `mapfile`: macOS's /bin/bash is 3.2, tests/unit/test_bash32_static.py).
    while IFS= read -r line; do
        if [[ -n "${line}" ]]; then files+=("${line}"); fi
    done <<< "${listing}"
    check_python_independent ${files[@]+"${files[@]}"}
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
