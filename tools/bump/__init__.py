"""``python -m tools bump``: a PyTorch release into both recipes, one stage per module.

archive (fetch, sha256, the files the later stages read) -> patches (each tried on the new
source) -> backend (recipe/build_backend.py on the new source) -> source (what its build files
demand: requires-python, the C++ standard of consumers, the oldest CUDA it accepts) -> knobs
(options and environment variables its CMake reads that no build script names) -> licences
(the recipes' licence files against the archive) -> wheel (CUDA and pins from the release's
wheel, when given) -> write (version, sha256, build number and Python skips into meta.yaml and
the v1 recipe, recipe/cmake_test's C++ standard) -> tables (README's CI-job table,
docs/drift.md's drift table, .ci_support with --pinning) -> checklist (what only a person can
decide).  :mod:`tools.bump.pipeline` runs them in that order; ``tools/commands/bump.py``
prints.
"""
