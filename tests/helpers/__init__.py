"""The tests' helper code: what tests import (and the programs they start that are ours).

tests/fixtures/ holds data only (the miniature torch, recipes, conda-forge's reference files,
upstream excerpts, the fake container engine's scripts); the modules here build on it. A
regular package, so no installed distribution named like it can shadow it: the rootdir
conftest puts tests/ first on sys.path, and `import helpers` finds this folder.
"""
