# shellcheck shell=bash
# scikit-build-core (PyTorch >= 2.14, pytorch/pytorch#180247): the backend configures and
# compiles build/ (its build-dir setting, kept between builds) while building the megabuild
# Python's wheel; `cmake --install build` then lays out the install tree under
# $SRC_DIR/_stage/install. Each pytorch output runs `pip install .` with the same
# build-dir, after cmake_cache has pointed both the cache and the backend's
# .skbuild-info.json at its Python: otherwise scikit-build-core, which every host
# environment holds its own copy of, deletes the top-level CMakeCache.txt and CMakeFiles/
# (the configuration, not PyTorch's objects, which live in per-directory CMakeFiles/; a
# configure from an empty cache decides everything anew), and FindPython's internal
# entries contradict the new interpreter. detect_build_backend (build_common.sh) sources
# this file when the source declares scikit-build-core; build_setuptools.sh defines the
# same names for setuptools.

# The recipe's own `cmake --install` strips exactly when the backend's install does, so
# that libtorch's files and each pytorch output's match: scikit-build-core's install step
# does (install.strip, true for Release).
INSTALL_STRIP=(--strip)
# scikit-build-core keeps its build tree here between builds (build-dir); setuptools
# builds in the same place by itself.
SKBUILD_ARGS=(--config-settings=build-dir="${BUILD_DIR}")

backend_settings() {
    # setup.py's settings (build_setuptools.sh): nothing from 2.14 on reads them.
    :
}

backend_compile() {
    # The megabuild Python's wheel (compile_tree), then the install tree from build/.
    (cd "${SRC_DIR}" && "${PYTHON}" -m pip wheel . --no-deps --no-build-isolation \
        "${SKBUILD_ARGS[@]}" --wheel-dir "${MEGABUILD_WHEELS}" -v)
    rm -rf "${INSTALL_STAGE}"
    # Stripped as the backend's own install is (INSTALL_STRIP above).
    cmake --install "${BUILD_DIR}" --prefix "${INSTALL_STAGE}" ${INSTALL_STRIP[@]+"${INSTALL_STRIP[@]}"}
}

backend_install_tree() {
    # Where the configured tree's install rules put their files.
    echo "${INSTALL_STAGE}"
}

backend_install() {
    # A pytorch output's torch into $SP_DIR, from the retargeted tree (build_pytorch).
    (cd "${SRC_DIR}" && "${PYTHON}" -m pip install . --no-deps --no-build-isolation "${SKBUILD_ARGS[@]}" -v)
}
