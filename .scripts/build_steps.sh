#!/usr/bin/env bash
# Build one .ci_support config with conda-build (or rattler-build) and leave the done marker.
#
# Runs inside the conda-forge container (started by run_docker_build.sh), on macOS
# (run_osx_build.sh, TOOLS_PREFIX=$MINIFORGE_HOME) or natively with the caller's
# conda-build (CF_BUILD_NATIVE=1, `build-locally.py --native`).  Same environment
# interface as conda-smithy's generated script: CONFIG, UPLOAD_PACKAGES, IS_PR_BUILD,
# BUILD_WITH_CONDA_DEBUG, BUILD_OUTPUT_ID, CPU_COUNT, FEEDSTOCK_NAME, sha, ...
# Settings come from conda-forge.yml at run time (conda_build_tool, conda_build.*,
# test), so this file needs no rerender when they change.
set -euo pipefail

FEEDSTOCK_ROOT="${FEEDSTOCK_ROOT:-/home/conda/feedstock_root}"
RECIPE_ROOT="${RECIPE_ROOT:-/home/conda/recipe_root}"
# shellcheck source=SCRIPTDIR/logging_utils.sh
source "${FEEDSTOCK_ROOT}/.scripts/logging_utils.sh"

: "${CONFIG:?CONFIG must name a .ci_support config}"
SOURCE_CONFIG="${FEEDSTOCK_ROOT}/.ci_support/${CONFIG}.yaml"
ARTIFACTS="${FEEDSTOCK_ROOT}/build_artifacts"
# conda-forge-ci-setup appends to the config it is given (CI:, build_platform:) and writes
# the clobber file next to it.  A copy under build_artifacts/ keeps the checkout clean and
# a retried build from appending the same keys twice.
CI_SUPPORT="${ARTIFACTS}/.ci_support"
CONFIG_FILE="${CI_SUPPORT}/${CONFIG}.yaml"
DONE_MARKER="${ARTIFACTS}/conda-forge-build-done-${CONFIG}"
TOOLS_PREFIX="${TOOLS_PREFIX:-/opt/conda}"
NATIVE="${CF_BUILD_NATIVE:-0}"
# The compiler cache is wired up for container and macOS builds; natively, ccache is the
# caller's own business (recipe/README explains a setup).
USE_CCACHE=0
if [[ -n "${CCACHE_DIR:-}" && "${NATIVE}" != 1 ]]; then USE_CCACHE=1; fi
export PYTHONUNBUFFERED=1 CI_SUPPORT CONFIG_FILE RECIPE_ROOT FEEDSTOCK_ROOT

########################################################################
# Readers for the two YAML files (first list item of a config key; a
# scalar of conda-forge.yml).  No YAML parser exists before tools are
# installed, and both files are machine-written in a flat shape.
########################################################################
config_value() {
    awk -v key="$1" '$0 == key ":" { getline; sub(/^- */, ""); gsub(/^["'\'']|["'\'']$/, ""); print; exit }' \
        "${CONFIG_FILE}"
}

forge_value() {  # forge_value KEY [SUBKEY]
    awk -v key="$1" -v sub_key="${2:-}" '
        /^[^ #]/ { section = $0; sub(/:.*/, "", section) }
        {
            line = $0
            if (sub_key == "" && section == key && line ~ "^" key ":") { sub("^" key ":[ \t]*", "", line) }
            else if (sub_key != "" && section == key && line ~ "^[ \t]+" sub_key ":") { sub("^[ \t]+" sub_key ":[ \t]*", "", line) }
            else next
            sub(/[ \t]+#.*$/, "", line); gsub(/^["'\'']|["'\'']$/, "", line)
            if (line != "") { print line }
            exit
        }' "${FEEDSTOCK_ROOT}/conda-forge.yml"
}

host_subdir() {
    local os arch
    os="$(uname -s)"
    arch="$(uname -m)"
    case "${os}/${arch}" in
        Linux/x86_64) echo linux-64 ;;
        Linux/aarch64) echo linux-aarch64 ;;
        Linux/ppc64le) echo linux-ppc64le ;;
        Darwin/x86_64) echo osx-64 ;;
        Darwin/arm64) echo osx-arm64 ;;
        *) echo "error: no conda subdir known for ${os}/${arch}" >&2; return 1 ;;
    esac
}

startgroup "Configuring conda"
if [[ ! -f "${SOURCE_CONFIG}" ]]; then
    echo "error: ${SOURCE_CONFIG} does not exist; CONFIG must be a file name from .ci_support/ without .yaml" >&2
    exit 1
fi
mkdir -p "${ARTIFACTS}" "${CI_SUPPORT}"
rm -f "${DONE_MARKER}" "${CI_SUPPORT}/clobber_${CONFIG}.yaml"
cp "${SOURCE_CONFIG}" "${CONFIG_FILE}"

########################################################################
# Build tool, as conda-forge.yml's conda_build_tool names it
# (CONDA_BUILD_TOOL overrides it for a one-off local experiment).
########################################################################
BUILD_TOOL="${CONDA_BUILD_TOOL:-$(forge_value conda_build_tool)}"
BUILD_TOOL="${BUILD_TOOL:-conda-build}"
TOOL_PACKAGES=()
case "${BUILD_TOOL}" in
    conda-build)
        BUILD_CMD=(conda-build) ;;
    conda-build+libmamba|conda-build+conda-libmamba-solver)
        BUILD_CMD=(conda-build); export CONDA_SOLVER=libmamba; TOOL_PACKAGES=(conda-libmamba-solver) ;;
    conda-build+classic)
        BUILD_CMD=(conda-build); export CONDA_SOLVER=classic ;;
    mambabuild)
        BUILD_CMD=(conda-mambabuild); TOOL_PACKAGES=(boa) ;;
    rattler-build)
        # The v1 recipe: recipe/recipe.yaml once the feedstock is switched (docs/rattler-build.md,
        # "Building with rattler-build"), recipe/recipe-v1.yaml beside meta.yaml before.
        BUILD_CMD=(rattler-build build); TOOL_PACKAGES=(rattler-build)
        if [[ -f "${RECIPE_ROOT}/recipe.yaml" ]]; then
            V1_RECIPE="${RECIPE_ROOT}/recipe.yaml"
        elif [[ -f "${RECIPE_ROOT}/recipe-v1.yaml" ]]; then
            V1_RECIPE="${RECIPE_ROOT}/recipe-v1.yaml"
        else
            echo "error: conda_build_tool is rattler-build but ${RECIPE_ROOT} holds neither" \
                 "recipe.yaml nor recipe-v1.yaml" >&2
            exit 1
        fi
        # rattler-build's package cache, beside the packages (as conda-smithy's script does).
        export RATTLER_CACHE_DIR="${ARTIFACTS}/pkg_cache" ;;
    *)
        echo "error: conda-forge.yml conda_build_tool '${BUILD_TOOL}' is not supported by these scripts;" \
             "use conda-build, conda-build+libmamba, conda-build+classic, mambabuild or rattler-build" >&2
        exit 1 ;;
esac
if [[ "${USE_CCACHE}" == 1 ]]; then
    TOOL_PACKAGES+=(ccache)
fi

if [[ "${NATIVE}" == 1 ]]; then
    # The caller's environment provides the tools; its own ~/.condarc stays untouched.
    export CONDARC="${ARTIFACTS}/.condarc-native"
    command -v "${BUILD_CMD[0]}" >/dev/null || {
        echo "error: ${BUILD_CMD[0]} is not on PATH; activate the environment from environment.yml" >&2
        exit 1
    }
else
    CONDARC="${TOOLS_PREFIX}/.condarc"
    # Start from an empty request history: the image's own recorded specs must not pin
    # what the build tools need.
    if [[ -f "${TOOLS_PREFIX}/conda-meta/history" ]]; then
        mv "${TOOLS_PREFIX}/conda-meta/history" "${TOOLS_PREFIX}/conda-meta/history.$(date +%Y%m%d%H%M%S)"
        : > "${TOOLS_PREFIX}/conda-meta/history"
    fi
    BASE_PACKAGES=(pip "python=3.12" "conda-forge-ci-setup=4")
    if [[ "${BUILD_TOOL}" != rattler-build ]]; then BASE_PACKAGES+=("conda-build>=25.1"); fi
    micromamba install --yes --quiet --root-prefix "${MAMBA_ROOT_PREFIX:-${HOME}/.conda}" \
        --prefix "${TOOLS_PREFIX}" \
        --override-channels --channel conda-forge --strict-channel-priority \
        "${BASE_PACKAGES[@]}" ${TOOL_PACKAGES[@]+"${TOOL_PACKAGES[@]}"}
    export PATH="${TOOLS_PREFIX}/bin:${PATH}"
fi

########################################################################
# conda configuration: conda-build writes into build_artifacts/, which
# the host sees, and channels come from the config's channel_sources.
########################################################################
CHANNELS="$(config_value channel_sources)"
PKG_FORMAT="$(forge_value conda_build pkg_format)"
ZSTD_LEVEL="$(forge_value conda_build zstd_compression_level)"
{
    echo "conda-build:"
    echo "  root-dir: ${ARTIFACTS}"
    echo "  pkg_format: '${PKG_FORMAT:-2}'"
    echo "  zstd_compression_level: ${ZSTD_LEVEL:-16}"
    echo "pkgs_dirs:"
    echo "  - ${ARTIFACTS}/pkg_cache"
    echo "channel_priority: $(forge_value channel_priority | grep . || echo strict)"
    echo "show_channel_urls: true"
    echo "channels:"
    IFS=',' read -r -a channel_list <<< "${CHANNELS:-conda-forge}"
    for channel in ${channel_list[@]+"${channel_list[@]}"}; do
        echo "  - ${channel// /}"
    done
} > "${CONDARC}"
export CONDARC
cat "${CONDARC}"

# GPU-less machines must still solve __cuda for CUDA configs (conda-forge-ci-setup
# does the same when its setup script runs).
CUDA_VERSION="$(config_value cuda_compiler_version)"
if [[ -n "${CUDA_VERSION}" && "${CUDA_VERSION}" != "None" ]]; then
    export CONDA_OVERRIDE_CUDA="${CUDA_VERSION}"
fi

if command -v run_conda_forge_build_setup >/dev/null; then
    # conda-forge-ci-setup: CPU_COUNT, cross-compilation support (QEMU sysroot), macOS SDK.
    # shellcheck disable=SC1091
    source run_conda_forge_build_setup
fi
endgroup "Configuring conda"

########################################################################
# conda-build options: test policy from conda-forge.yml, the build number
# clobber file, and the compiler cache.
########################################################################
# The caller's extra options first, as conda-smithy's script takes them: the build workflow
# passes --no-test when a GPU runner tests the CUDA packages afterwards (test_built_packages.sh).
read -r -a EXTRA_CB_OPTIONS <<< "${EXTRA_CB_OPTIONS:-}"
# conda-forge-ci-setup exports both when it ran; otherwise the config and this machine tell.
BUILD_PLATFORM="${BUILD_PLATFORM:-$(config_value build_platform)}"
BUILD_PLATFORM="${BUILD_PLATFORM:-$(host_subdir)}"
HOST_PLATFORM="${HOST_PLATFORM:-$(config_value target_platform)}"
HOST_PLATFORM="${HOST_PLATFORM:-${BUILD_PLATFORM}}"
TEST_POLICY="$(forge_value test)"
case "${TEST_POLICY:-all}" in
    all) ;;
    native)
        if [[ "${HOST_PLATFORM}" != "${BUILD_PLATFORM}" ]]; then EXTRA_CB_OPTIONS+=(--no-test); fi ;;
    native_and_emulated)
        # Cross builds for linux-* run their tests under QEMU; others cannot run at all.
        if [[ "${HOST_PLATFORM}" != "${BUILD_PLATFORM}" && "${HOST_PLATFORM}" != linux-* ]]; then
            EXTRA_CB_OPTIONS+=(--no-test)
        fi ;;
    *)
        echo "error: conda-forge.yml test '${TEST_POLICY}' is not one of all, native, native_and_emulated" >&2
        exit 1 ;;
esac

if command -v make_build_number >/dev/null && [[ "${BUILD_TOOL}" != rattler-build ]]; then
    make_build_number "${FEEDSTOCK_ROOT}" "${RECIPE_ROOT}" "${CONFIG_FILE}"
fi
CLOBBER_OPTIONS=()
CLOBBER_FILE="${CI_SUPPORT}/clobber_${CONFIG}.yaml"
if [[ -f "${CLOBBER_FILE}" ]]; then
    CLOBBER_OPTIONS=(--clobber-file "${CLOBBER_FILE}")
fi

if [[ "${USE_CCACHE}" == 1 ]]; then
    # conda-build hands HOME, not CCACHE_DIR, to build scripts, so the config file carries
    # the cache location; PyTorch's CMake (USE_CCACHE, on by default) finds ccache on PATH.
    # A fixed work folder (--no-build-id) keeps compile commands, and so cache keys, stable.
    mkdir -p "${HOME}/.config/ccache"
    {
        echo "cache_dir = ${CCACHE_DIR}"
        echo "base_dir = ${ARTIFACTS}"
        echo "hash_dir = false"
        echo "compression = true"
        echo "sloppiness = pch_defines,time_macros,include_file_mtime,include_file_ctime"
        echo "max_size = ${CCACHE_MAXSIZE:-20G}"
    } > "${HOME}/.config/ccache/ccache.conf"
    EXTRA_CB_OPTIONS+=(--no-build-id)
    ccache --zero-stats >/dev/null
    write_ccache_stats() { ccache --print-stats > "${ARTIFACTS}/ccache-stats-${CONFIG}.txt" || true; }
    trap write_ccache_stats EXIT
fi

# The recipe ships the feedstock's license next to PyTorch's (build-locally removes the copy).
cp "${FEEDSTOCK_ROOT}/LICENSE.txt" "${RECIPE_ROOT}/recipe-scripts-license.txt"

########################################################################
# Build (or, with BUILD_WITH_CONDA_DEBUG=1, set up and open a shell).
########################################################################
if [[ "${BUILD_WITH_CONDA_DEBUG:-0}" == 1 ]]; then
    if [[ "${BUILD_CMD[0]}" != conda-build ]]; then
        echo "error: --debug needs conda-build; conda_build_tool is ${BUILD_TOOL}" >&2
        exit 1
    fi
    DEBUG_OPTIONS=()
    if [[ -n "${BUILD_OUTPUT_ID:-}" ]]; then DEBUG_OPTIONS+=(--output-id "${BUILD_OUTPUT_ID}"); fi
    CONDA_SUBDIR="${BUILD_PLATFORM}" conda debug "${RECIPE_ROOT}" -m "${CONFIG_FILE}" \
        ${DEBUG_OPTIONS[@]+"${DEBUG_OPTIONS[@]}"} \
        ${CLOBBER_OPTIONS[@]+"${CLOBBER_OPTIONS[@]}"}
    echo "The build environment is set up; follow the instructions above, then exit the shell."
    /bin/bash
    exit 0
fi

EXTRA_META=("flow_run_id=${flow_run_id:-local}")
if [[ -n "${remote_url:-}" ]]; then EXTRA_META+=("remote_url=${remote_url}"); fi
if [[ -n "${sha:-}" ]]; then EXTRA_META+=("sha=${sha}"); fi

startgroup "Running ${BUILD_CMD[*]} for ${CONFIG}"
if [[ "${BUILD_TOOL}" == rattler-build ]]; then
    # The same decisions in rattler-build's words: `--test skip` where conda-build gets
    # --no-test, packages into build_artifacts/<subdir>/. rattler-build reads the channels
    # from the config's channel_sources itself (and refuses --channel beside them).
    RB_OPTIONS=()
    TEST_MODE=native
    if [[ "${HOST_PLATFORM}" != "${BUILD_PLATFORM}" ]]; then TEST_MODE=native-and-emulated; fi
    for option in ${EXTRA_CB_OPTIONS[@]+"${EXTRA_CB_OPTIONS[@]}"}; do
        case "${option}" in
            --no-test) TEST_MODE=skip ;;
            *) RB_OPTIONS+=("${option}") ;;
        esac
    done
    case "${PKG_FORMAT:-2}" in
        2) RB_OPTIONS+=(--package-format "conda:${ZSTD_LEVEL:-16}") ;;
        1) RB_OPTIONS+=(--package-format tar-bz2) ;;
        *) echo "error: conda-forge.yml conda_build.pkg_format '${PKG_FORMAT}' is not 1 or 2" >&2
           exit 1 ;;
    esac
    for item in "${EXTRA_META[@]}"; do
        RB_OPTIONS+=(--extra-meta "${item}")
    done
    "${BUILD_CMD[@]}" --recipe "${V1_RECIPE}" -m "${CONFIG_FILE}" \
        --output-dir "${ARTIFACTS}" \
        --build-platform "${BUILD_PLATFORM}" --target-platform "${HOST_PLATFORM}" \
        --test "${TEST_MODE}" ${RB_OPTIONS[@]+"${RB_OPTIONS[@]}"}
else
    CONDA_SUBDIR="${BUILD_PLATFORM}" "${BUILD_CMD[@]}" "${RECIPE_ROOT}" -m "${CONFIG_FILE}" \
        ${EXTRA_CB_OPTIONS[@]+"${EXTRA_CB_OPTIONS[@]}"} \
        ${CLOBBER_OPTIONS[@]+"${CLOBBER_OPTIONS[@]}"} \
        --suppress-variables --extra-meta "${EXTRA_META[@]}"
fi
endgroup "Running ${BUILD_CMD[*]} for ${CONFIG}"

if command -v inspect_artifacts >/dev/null && [[ "${BUILD_TOOL}" != rattler-build ]]; then
    startgroup "Inspecting artifacts"
    inspect_artifacts --recipe-dir "${RECIPE_ROOT}" -m "${CONFIG_FILE}" || true
    endgroup "Inspecting artifacts"
fi

########################################################################
# Upload: CI pushes to main only.  Local builds set UPLOAD_PACKAGES=False
# and IS_PR_BUILD=True, and never see a token.
########################################################################
if [[ "${UPLOAD_PACKAGES:-True}" != False && "${IS_PR_BUILD:-False}" == False ]]; then
    startgroup "Uploading packages"
    if [[ "$(forge_value conda_forge_output_validation)" == true ]]; then
        validate_recipe_outputs "${FEEDSTOCK_NAME:-$(basename "${FEEDSTOCK_ROOT}")}"
    fi
    upload_package --validate --feedstock-name="${FEEDSTOCK_NAME:-$(basename "${FEEDSTOCK_ROOT}")}" \
        "${FEEDSTOCK_ROOT}" "${RECIPE_ROOT}" "${CONFIG_FILE}"
    endgroup "Uploading packages"
fi

startgroup "Final checks"
touch "${DONE_MARKER}"
endgroup "Final checks"
