"""conda-smithy's semantics over conda-build's: CFEP-9 migrations, the CI-job split, and
conda-forge.yml settings.  Pure functions over specs and rendered outputs, no I/O beyond
reading a migration file and conda-forge.yml (forge_yml, checked against conda-smithy's
schema)."""
