#!/usr/bin/env bash
# Start the conda-forge build container for one config and run build_steps.sh in it.
#
# Environment (the same as conda-smithy's generated script, so build-locally.py and
# CI drive either): CONFIG (required), DOCKER_EXECUTABLE (docker|podman),
# DOCKER_IMAGE (else the config's docker_image), CONDA_FORGE_DOCKER_RUN_ARGS (extra
# `run` options, split on whitespace), UPLOAD_PACKAGES, IS_PR_BUILD, CPU_COUNT,
# BUILD_WITH_CONDA_DEBUG, BUILD_OUTPUT_ID.  Succeeds only when the container left
# build_artifacts/conda-forge-build-done-$CONFIG, i.e. build_steps.sh ran to its end.
set -euo pipefail

SCRIPTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
FEEDSTOCK_ROOT="$(dirname "${SCRIPTS_DIR}")"
RECIPE_ROOT="${FEEDSTOCK_ROOT}/recipe"
# shellcheck source=SCRIPTDIR/logging_utils.sh
source "${SCRIPTS_DIR}/logging_utils.sh"

startgroup "Configure the container"
DOCKER_EXECUTABLE="${DOCKER_EXECUTABLE:-docker}"
FALLBACK_IMAGE="quay.io/condaforge/linux-anvil-comp7"

if [[ -z "${CONFIG:-}" ]]; then
    echo "error: set CONFIG to one of these configs:" >&2
    find "${FEEDSTOCK_ROOT}/.ci_support" -maxdepth 1 -name 'linux_*.yaml' -exec basename {} .yaml \; | sort >&2
    exit 1
fi
CONFIG_FILE="${FEEDSTOCK_ROOT}/.ci_support/${CONFIG}.yaml"
if [[ ! -f "${CONFIG_FILE}" ]]; then
    echo "error: ${CONFIG_FILE} does not exist" >&2
    exit 1
fi

FEEDSTOCK_NAME="${FEEDSTOCK_NAME:-$(basename "${FEEDSTOCK_ROOT}")}"
sha="${sha:-$(git -C "${FEEDSTOCK_ROOT}" rev-parse HEAD 2>/dev/null || echo unknown)}"
UPLOAD_PACKAGES="${UPLOAD_PACKAGES:-True}"
IS_PR_BUILD="${IS_PR_BUILD:-False}"
export FEEDSTOCK_NAME sha UPLOAD_PACKAGES IS_PR_BUILD

"${DOCKER_EXECUTABLE}" info >/dev/null

# The image's entrypoint creates its build user with this id, so the files it writes
# into the mounted feedstock belong to whoever started the build.
HOST_USER_ID="$(id -u)"
export HOST_USER_ID

if [[ -z "${DOCKER_IMAGE:-}" ]]; then
    DOCKER_IMAGE="$(awk '$0 == "docker_image:" { getline; sub(/^- */, ""); print; exit }' "${CONFIG_FILE}")"
    DOCKER_IMAGE="${DOCKER_IMAGE:-${FALLBACK_IMAGE}}"
fi

ARTIFACTS="${FEEDSTOCK_ROOT}/build_artifacts"
DONE_MARKER="${ARTIFACTS}/conda-forge-build-done-${CONFIG}"
mkdir -p "${ARTIFACTS}"
rm -f "${DONE_MARKER}"

# Word splitting is the documented contract of CONDA_FORGE_DOCKER_RUN_ARGS; read it
# into an array so that no glob characters expand.
read -r -a RUN_ARGS <<< "${CONDA_FORGE_DOCKER_RUN_ARGS:-}"
if [[ -t 0 && -z "${CI:-}" ]]; then
    # Interactive runs get a terminal (needed by --debug's shell and for Ctrl-C).
    RUN_ARGS=(-it ${RUN_ARGS[@]+"${RUN_ARGS[@]}"})
fi

########################################################################
# Engine differences.  Rootless podman maps the host user to root in the
# container, so the mounted folders are handed to the build user's mapped
# id first; it also refuses SELinux relabelling (`,z`) where SELinux is off.
# https://github.com/containers/podman/blob/main/troubleshooting.md
########################################################################
VOLUME_OPTIONS="rw,z,delegated"
case "$(basename "${DOCKER_EXECUTABLE}")" in
    podman*)
        "${DOCKER_EXECUTABLE}" unshare chown -R "${HOST_USER_ID}:${HOST_USER_ID}" "${ARTIFACTS}" "${RECIPE_ROOT}"
        if [[ "$(getenforce 2>/dev/null || echo Disabled)" != Enforcing ]]; then
            VOLUME_OPTIONS="rw,delegated"
        fi ;;
    docker*) ;;
    *)
        echo "warning: ${DOCKER_EXECUTABLE} is neither docker nor podman; treating it like docker" >&2 ;;
esac

"${DOCKER_EXECUTABLE}" pull "${DOCKER_IMAGE}"
endgroup "Configure the container"

startgroup "Build ${CONFIG} in ${DOCKER_IMAGE}"
# Variables are passed by name: unset ones stay unset in the container.  build-locally.py
# removes the tokens from its environment, so local builds never receive them.
"${DOCKER_EXECUTABLE}" run ${RUN_ARGS[@]+"${RUN_ARGS[@]}"} \
    -v "${RECIPE_ROOT}:/home/conda/recipe_root:${VOLUME_OPTIONS}" \
    -v "${FEEDSTOCK_ROOT}:/home/conda/feedstock_root:${VOLUME_OPTIONS}" \
    -e CONFIG \
    -e HOST_USER_ID \
    -e UPLOAD_PACKAGES \
    -e IS_PR_BUILD \
    -e GIT_BRANCH \
    -e UPLOAD_ON_BRANCH \
    -e CI \
    -e GITHUB_ACTIONS \
    -e FEEDSTOCK_NAME \
    -e CPU_COUNT \
    -e BUILD_WITH_CONDA_DEBUG \
    -e BUILD_OUTPUT_ID \
    -e CONDA_BUILD_TOOL \
    -e flow_run_id \
    -e remote_url \
    -e sha \
    -e BINSTAR_TOKEN \
    -e FEEDSTOCK_TOKEN \
    -e STAGING_BINSTAR_TOKEN \
    "${DOCKER_IMAGE}" \
    bash /home/conda/feedstock_root/.scripts/build_steps.sh
endgroup "Build ${CONFIG} in ${DOCKER_IMAGE}"

if [[ "${BUILD_WITH_CONDA_DEBUG:-0}" == 1 ]]; then
    exit 0  # a debug session builds nothing, so there is no marker to expect
fi
if [[ ! -f "${DONE_MARKER}" ]]; then
    echo "error: the container exited without ${DONE_MARKER}; build_steps.sh did not finish" >&2
    exit 1
fi
