#!/usr/bin/env bash
# Test one config's built packages with `conda-build --test` in the conda-forge container,
# with every GPU of this machine.
#
# CUDA packages build on machines without a GPU, with their tests skipped, and are tested
# here afterwards on one that has a GPU (https://github.com/conda-forge/pytorch-cpu-feedstock/issues/314;
# conda-smithy cannot split a job: https://github.com/conda-forge/conda-smithy/issues/1472).
# .github/workflows/build.yml runs it in its test-gpu jobs; by hand:
#   CONFIG=<config> DOCKER_IMAGE=<image> bash .scripts/test_built_packages.sh
# Host environment: CONFIG, DOCKER_IMAGE (the config's image for the machine's
# architecture), DOCKER_EXECUTABLE (docker|podman).  The packages are whatever the build
# left in build_artifacts/<subdir>/; the output also goes to
# build_artifacts/<config>-gpu-test-log.txt, which log_files.zip picks up.
set -euo pipefail

: "${CONFIG:?CONFIG must name the .ci_support config whose packages to test}"

if [[ "${CF_TEST_IN_CONTAINER:-0}" != 1 ]]; then
    SCRIPTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
    FEEDSTOCK_ROOT="$(dirname "${SCRIPTS_DIR}")"
    DONE_MARKER="${FEEDSTOCK_ROOT}/build_artifacts/conda-forge-build-done-${CONFIG}"
    if [[ ! -f "${DONE_MARKER}" ]]; then
        echo "error: ${DONE_MARKER} is missing: ${CONFIG} did not build, so there is nothing to test" >&2
        exit 1
    fi
    : "${DOCKER_IMAGE:?DOCKER_IMAGE must name the image to test in}"
    DOCKER_EXECUTABLE="${DOCKER_EXECUTABLE:-docker}"
    "${DOCKER_EXECUTABLE}" pull "${DOCKER_IMAGE}"
    HOST_USER_ID="$(id -u)"
    export HOST_USER_ID CF_TEST_IN_CONTAINER=1
    exec "${DOCKER_EXECUTABLE}" run --rm --gpus all \
        -v "${FEEDSTOCK_ROOT}:/home/conda/feedstock_root:rw,z" \
        -e CONFIG -e HOST_USER_ID -e CF_TEST_IN_CONTAINER -e CI \
        "${DOCKER_IMAGE}" \
        bash /home/conda/feedstock_root/.scripts/test_built_packages.sh
fi

########################################################################
# Inside the container.
########################################################################
FEEDSTOCK_ROOT="${FEEDSTOCK_ROOT:-/home/conda/feedstock_root}"
ARTIFACTS="${FEEDSTOCK_ROOT}/build_artifacts"
CONFIG_FILE="${FEEDSTOCK_ROOT}/.ci_support/${CONFIG}.yaml"
TOOLS_PREFIX="${TOOLS_PREFIX:-/opt/conda}"
LOG="${ARTIFACTS}/${CONFIG}-gpu-test-log.txt"
exec > >(tee "${LOG}") 2>&1
TEE_PID=$!
# The log must be complete when the container ends: close our side, let tee finish.
trap 'exec >&- 2>&-; wait "${TEE_PID}"' EXIT
# shellcheck source=SCRIPTDIR/logging_utils.sh
source "${FEEDSTOCK_ROOT}/.scripts/logging_utils.sh"

startgroup "Installing conda-build"
micromamba install --yes --quiet --root-prefix "${MAMBA_ROOT_PREFIX:-${HOME}/.conda}" \
    --prefix "${TOOLS_PREFIX}" \
    --override-channels --channel conda-forge --strict-channel-priority \
    pip "python=3.12" "conda-build>=25.1"
export PATH="${TOOLS_PREFIX}/bin:${PATH}"
CHANNELS="$(awk '$0 == "channel_sources:" { getline; sub(/^- */, ""); print; exit }' "${CONFIG_FILE}")"
# Test environments are made outside build_artifacts/, which holds only what the build made.
export CONDARC="${HOME}/.condarc-gpu-test"
{
    echo "conda-build:"
    echo "  root-dir: ${HOME}/conda-bld"
    echo "channel_priority: strict"
    echo "channels:"
    IFS=',' read -r -a channel_list <<< "${CHANNELS:-conda-forge}"
    for channel in "${channel_list[@]}"; do
        echo "  - ${channel// /}"
    done
} > "${CONDARC}"
endgroup "Installing conda-build"

startgroup "GPUs of this machine"
nvidia-smi || echo "warning: nvidia-smi failed; the CUDA tests will find no GPU"
endgroup "GPUs of this machine"

PACKAGES=()
for folder in "${ARTIFACTS}"/noarch "${ARTIFACTS}"/linux-*; do
    [[ -d "${folder}" ]] || continue
    for package in "${folder}"/*.conda "${folder}"/*.tar.bz2; do
        [[ -f "${package}" ]] && PACKAGES+=("${package}")
    done
done
if [[ "${#PACKAGES[@]}" == 0 ]]; then
    echo "error: no packages in ${ARTIFACTS}; download the build's artifact there first" >&2
    exit 1
fi

FAILED=()
for package in "${PACKAGES[@]}"; do
    startgroup "Testing $(basename "${package}")"
    if ! conda-build --test "${package}"; then
        FAILED+=("$(basename "${package}")")
    fi
    endgroup "Testing $(basename "${package}")"
done
if [[ "${#FAILED[@]}" != 0 ]]; then
    echo "error: tests failed for ${FAILED[*]} (log: build_artifacts/${CONFIG}-gpu-test-log.txt)" >&2
    exit 1
fi
echo "all ${#PACKAGES[@]} package(s) of ${CONFIG} passed their tests"
