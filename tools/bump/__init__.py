"""``python -m tools bump``: a PyTorch release into both recipes, one stage per module.

archive (fetch, sha256, the files the later stages read) -> patches (each tried on the new
source) -> backend (recipe/build_backend.py on the new source) -> wheel (Requires-Python,
CUDA, pins, from the release's wheel) -> write (version, sha256, build number and Python
skips into meta.yaml and the v1 recipe; tools.recipe.release makes the edits) -> tables
(README's CI-job table, docs/drift.md's drift table, .ci_support with --pinning) ->
checklist (what only a person can decide).  :mod:`tools.bump.pipeline` runs them in that
order; ``tools/commands/bump.py`` prints.
"""
