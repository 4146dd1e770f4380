#!/usr/bin/env bash
# Build script for every output of this recipe on Linux and macOS (Windows: bld.bat).
#
# Both recipes run the `compile` stage once (meta.yaml's top-level build, recipe-v1.yaml's
# staging output, both named libtorch-build), then one stage per output in the same work
# directory ($SRC_DIR): conda-build shares it between the top-level build and the outputs,
# rattler-build restores the staging output's for every output that inherits it. Every
# output installs its own files into a $PREFIX holding only its host requirements (conda-build
# builds the outputs in dependency order and recreates the prefix for each). The script
# dispatches on the stage, which both recipes set in CF_TORCH_BUILD_STAGE (rattler-build
# names no package in a staging output); without it, on PKG_NAME, which conda-build sets to
# the same names (libtorch-build for the compile stage):
#
#   compile               Configures and compiles everything once against the single
#                         Python the recipes name ($PYTHON). On Linux CUDA the tree is
#                         configured with MAGMA, and patch 0004 adds the nomagma build of
#                         libtorch_cuda_linalg to the same build; both flavours are stashed
#                         under $SRC_DIR/_stage/, as is the megabuild Python's wheel.
#                         Installs nothing into $PREFIX.
#   libtorch              Installs the Python-independent files into $PREFIX (after the
#                         `compile` stage, when it has not run in this work directory).
#   libtorch-cuda-linalg  Installs the stashed library CF_TORCH_LINALG_FLAVOR names.
#   pytorch               Once per Python: points the configured tree at $PYTHON with
#                         cmake_cache (only Python-bound targets rebuild), pip-installs
#                         torch into $SP_DIR (for the megabuild Python, the compile stage's
#                         wheel: nothing compiles again, whatever output came before),
#                         moves libtorch_python to $PREFIX/lib, and turns torch/{lib,bin,share}
#                         files libtorch already ships into symlinks.
#
# The build system (setuptools for PyTorch <= 2.13, scikit-build-core from 2.14 on) is
# chosen by what the source declares (recipe/build_backend.py reads its [build-system]
# backend; never the version number): recipe/build_setuptools.sh and recipe/build_skbuild.sh
# each define the steps that differ.
#
# This file only picks the stage and runs it; the steps live beside it in recipe/, each
# file sourced by the stages that need it (both engines copy the whole recipe folder, so
# $RECIPE_DIR holds them all):
#
#   build_common.sh       paths, the Python helpers' wrappers, the backend, checks
#   build_configure.sh    the build environment every configuring stage exports alike
#                         (build_env.txt: the part bld.bat sets too)
#   build_compile.sh      the compile stage
#   build_libtorch.sh     the libtorch stage
#   build_cuda_linalg.sh  the libtorch-cuda-linalg stage
#   build_pytorch.sh      the pytorch stage
#
# The seam: the scripts drive the source tree only through the backend's commands and
# build/CMakeCache.txt (+ .skbuild-info.json), the install tree, and the install component
# patch 0004 defines (`cmake --install build --component cuda_linalg_nomagma`). They need
# no knowledge of PyTorch's internal files. tests/e2e/test_build_sh.py runs this very script
# against a miniature torch-shaped project (tests/fixtures/minitorch, both layouts) in a
# faked conda-build environment (what the miniature reads: build_configure.sh).
set -euo pipefail

RECIPE_FILE="recipe/build.sh"

die() {
    echo "build.sh: error: $*" >&2
    exit 2
}

for required in PKG_VERSION SRC_DIR PREFIX RECIPE_DIR target_platform; do
    [[ -n "${!required:-}" ]] \
        || die "${required} is not set; run ${RECIPE_FILE} through conda-build or rattler-build (they set ${required})"
done
if [[ -n "${CF_TORCH_BUILD_STAGE:-}" ]]; then
    STAGE_VARIABLE=CF_TORCH_BUILD_STAGE
elif [[ -n "${PKG_NAME:-}" ]]; then
    STAGE_VARIABLE=PKG_NAME
else
    die "neither CF_TORCH_BUILD_STAGE nor PKG_NAME is set; recipe/meta.yaml and recipe/recipe-v1.yaml set CF_TORCH_BUILD_STAGE for every output"
fi
STAGE="${!STAGE_VARIABLE}"
# conda-build sets PYTHON only for outputs with python in their requirements: not for
# libtorch-cuda-linalg, whose stage copies a stashed file and runs no Python (found by
# building meta.yaml with the real conda-build; rattler-build sets it for every output).
if [[ "${STAGE}" != libtorch-cuda-linalg && -z "${PYTHON:-}" ]]; then
    die "PYTHON is not set; run ${RECIPE_FILE} through conda-build or rattler-build (they set PYTHON)"
fi

# conda-build decides which variant keys an output uses by scanning the script it runs (this
# file, not what it sources) for a key as the first `$` of a line: the keys the stage files
# read that way are named here, so that the outputs' variants and hashes stay what they are
# (tests/unit/test_build_sh_static.py compares the two scans). Checked set above.
# shellcheck disable=SC2154
: "${target_platform}"

# shellcheck source=SCRIPTDIR/build_common.sh
source "${RECIPE_DIR}/build_common.sh"

# Sourced (tests/e2e/test_build_sh_functions.py), the script only defines the functions of
# every stage and runs none.
if [[ "${BASH_SOURCE[0]}" != "${0}" ]]; then
    # shellcheck source=SCRIPTDIR/build_configure.sh
    source "${RECIPE_DIR}/build_configure.sh"
    # shellcheck source=SCRIPTDIR/build_compile.sh
    source "${RECIPE_DIR}/build_compile.sh"
    # shellcheck source=SCRIPTDIR/build_libtorch.sh
    source "${RECIPE_DIR}/build_libtorch.sh"
    # shellcheck source=SCRIPTDIR/build_cuda_linalg.sh
    source "${RECIPE_DIR}/build_cuda_linalg.sh"
    # shellcheck source=SCRIPTDIR/build_pytorch.sh
    source "${RECIPE_DIR}/build_pytorch.sh"
    return 0
fi

case "${STAGE}" in
    compile|libtorch-build)
        # shellcheck source=SCRIPTDIR/build_configure.sh
        source "${RECIPE_DIR}/build_configure.sh"
        # shellcheck source=SCRIPTDIR/build_compile.sh
        source "${RECIPE_DIR}/build_compile.sh"
        configure_build
        compile_libtorch
        ;;
    libtorch)
        # shellcheck source=SCRIPTDIR/build_configure.sh
        source "${RECIPE_DIR}/build_configure.sh"
        # Compiles first when the compile stage has not run in this work directory.
        # shellcheck source=SCRIPTDIR/build_compile.sh
        source "${RECIPE_DIR}/build_compile.sh"
        # shellcheck source=SCRIPTDIR/build_libtorch.sh
        source "${RECIPE_DIR}/build_libtorch.sh"
        configure_build
        build_libtorch
        ;;
    # Only copies a stashed file: needs none of the build configuration.
    libtorch-cuda-linalg)
        # shellcheck source=SCRIPTDIR/build_cuda_linalg.sh
        source "${RECIPE_DIR}/build_cuda_linalg.sh"
        install_cuda_linalg
        ;;
    pytorch)
        # shellcheck source=SCRIPTDIR/build_configure.sh
        source "${RECIPE_DIR}/build_configure.sh"
        # shellcheck source=SCRIPTDIR/build_pytorch.sh
        source "${RECIPE_DIR}/build_pytorch.sh"
        configure_build
        build_pytorch
        ;;
    *) die "${STAGE_VARIABLE}='${STAGE}' is not a stage ${RECIPE_FILE} builds (compile or libtorch-build, libtorch, libtorch-cuda-linalg, pytorch); add a branch to the dispatch in ${RECIPE_FILE}" ;;
esac
