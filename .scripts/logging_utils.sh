#!/usr/bin/env bash
# Foldable log sections for the build scripts: GitHub Actions and Azure fold them,
# anywhere else they print a `==> title` banner that build-locally.py reads as the
# current phase.  Sourced, never run; `set -x` is muted inside so the log stays readable.

startgroup() {
    { local restore_x=0; [[ $- == *x* ]] && restore_x=1; set +x; } 2>/dev/null
    case "${CI:-}" in
        github_actions) echo "::group::$1" ;;
        azure) echo "##[group]$1" ;;
        *) echo "==> $1" ;;
    esac
    BUILD_GROUP_STARTED="$(date +%s)"
    export BUILD_GROUP_STARTED
    if [[ "${restore_x}" == 1 ]]; then set -x; fi
}

endgroup() {
    { local restore_x=0; [[ $- == *x* ]] && restore_x=1; set +x; } 2>/dev/null
    local took=""
    if [[ -n "${BUILD_GROUP_STARTED:-}" ]]; then
        took=" ($(( $(date +%s) - BUILD_GROUP_STARTED ))s)"
    fi
    case "${CI:-}" in
        github_actions) echo "::endgroup::" ;;
        azure) echo "##[endgroup]" ;;
        *) echo "    done: $1${took}" ;;
    esac
    if [[ "${restore_x}" == 1 ]]; then set -x; fi
}
