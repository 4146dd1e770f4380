# shellcheck shell=bash
# The libtorch-cuda-linalg stage (Linux CUDA): installs the flavour of libtorch_cuda_linalg
# CF_TORCH_LINALG_FLAVOR names, from the compile stage's stash (stash_cuda_linalg_flavours
# in build_compile.sh). It copies a file and runs no Python: conda-build sets no PYTHON for
# this output.

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
