#!/usr/bin/env bash
# Build one config on macOS, without a container: fetch micromamba into
# $MINIFORGE_HOME, then let build_steps.sh install the build tools there and build.
#
# Environment: CONFIG (required), MINIFORGE_HOME (default ~/Miniforge3; build-locally.py
# sets <feedstock>/miniforge3), OSX_SDK_DIR (writable; where conda-forge-ci-setup puts the
# macOS SDK outside CI), plus build_steps.sh's interface (UPLOAD_PACKAGES, IS_PR_BUILD, ...).
set -euo pipefail

SCRIPTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
FEEDSTOCK_ROOT="$(dirname "${SCRIPTS_DIR}")"
# shellcheck source=SCRIPTDIR/logging_utils.sh
source "${SCRIPTS_DIR}/logging_utils.sh"

: "${CONFIG:?CONFIG must name a .ci_support config}"
MINIFORGE_HOME="${MINIFORGE_HOME:-${HOME}/Miniforge3}"
MINIFORGE_HOME="${MINIFORGE_HOME%/}"
if [[ -z "${CI:-}" && -z "${OSX_SDK_DIR:-}" ]]; then
    echo "error: set OSX_SDK_DIR to a writable folder for the macOS SDK (accepting Apple's SDK licence)" >&2
    exit 1
fi

startgroup "Provisioning micromamba in ${MINIFORGE_HOME}"
case "$(uname -m)" in
    arm64) MAMBA_PLATFORM=osx-arm64 ;;
    x86_64) MAMBA_PLATFORM=osx-64 ;;
    *) echo "error: unsupported macOS machine $(uname -m)" >&2; exit 1 ;;
esac
MICROMAMBA_DIR="${MINIFORGE_HOME}-micromamba"
MICROMAMBA="${MICROMAMBA_DIR}/bin/micromamba"
if [[ ! -x "${MICROMAMBA}" ]]; then
    mkdir -p "${MICROMAMBA_DIR}"
    curl --fail --silent --show-error --location \
        "https://micro.mamba.pm/api/micromamba/${MAMBA_PLATFORM}/latest" \
        | tar -xj -C "${MICROMAMBA_DIR}" bin/micromamba
fi
if [[ ! -d "${MINIFORGE_HOME}/conda-meta" ]]; then
    "${MICROMAMBA}" create --yes --quiet --prefix "${MINIFORGE_HOME}" \
        --override-channels --channel conda-forge python=3.12
fi
endgroup "Provisioning micromamba in ${MINIFORGE_HOME}"

export PATH="${MICROMAMBA_DIR}/bin:${PATH}"
export FEEDSTOCK_ROOT RECIPE_ROOT="${FEEDSTOCK_ROOT}/recipe" TOOLS_PREFIX="${MINIFORGE_HOME}"
export MAMBA_ROOT_PREFIX="${MICROMAMBA_DIR}/root"
exec bash "${SCRIPTS_DIR}/build_steps.sh"
