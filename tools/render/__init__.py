"""One CI config rendered: ``config`` names and renders it (kept on disk), ``meta`` is the
toolkit's render of meta.yaml, ``v1`` py-rattler-build's of recipe.yaml, ``output`` the record
both produce, ``cuda_archs`` the CUDA architecture lists a config builds for."""
