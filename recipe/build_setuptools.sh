# shellcheck shell=bash disable=SC2034
# Linted alone by shellcheck: build_compile.sh reads INSTALL_STRIP.
# setuptools (PyTorch <= 2.13): `setup.py build` configures and compiles build/ and installs
# into the source's torch/ (the cache's CMAKE_INSTALL_PREFIX); each pytorch output runs
# `pip install .`, which reuses build/. detect_build_backend (build_common.sh) sources this
# file when the source declares setuptools; build_skbuild.sh defines the same names for
# scikit-build-core.

# The recipe's own `cmake --install` strips exactly when the backend's install does, so
# that libtorch's files and each pytorch output's match: setup.py's `install` target does
# not strip.
INSTALL_STRIP=()

backend_settings() {
    # Settings only the setup.py build reads; from 2.14 on nothing does (EnvVarForwarding.cmake's
    # aliases and PostBuildSteps.cmake name neither), so the scikit-build-core build does not
    # get them. Both were in this recipe before the switch: PACKAGE_TYPE=conda for
    # https://github.com/conda-forge/pytorch-cpu-feedstock/issues/243 (link conda's
    # libraries instead of copying them into torch/lib), and the libstdc++ ABI.
    export PACKAGE_TYPE=conda
    export _GLIBCXX_USE_CXX11_ABI=1
}

backend_compile() {
    # The megabuild Python's wheel (compile_tree); setup.py's build installs into its own
    # torch/ on the way.
    (cd "${SRC_DIR}" && "${PYTHON}" -m pip wheel . --no-deps --no-build-isolation \
        --no-clean --wheel-dir "${MEGABUILD_WHEELS}" -v)
}

backend_install_tree() {
    # Where the configured tree's install rules put their files: PyTorch's setup.py
    # installs into its own source tree, $SRC_DIR/torch.
    cmake_cache get "${CMAKE_CACHE}" CMAKE_INSTALL_PREFIX
}

backend_install() {
    # A pytorch output's torch into $SP_DIR, from the retargeted tree (build_pytorch).
    (cd "${SRC_DIR}" && "${PYTHON}" -m pip install . --no-deps --no-build-isolation --no-clean -v)
}
