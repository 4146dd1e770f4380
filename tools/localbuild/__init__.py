"""Local and CFEP-03 batch builds behind ``build-locally.py``.

Three parts, imported one way (``schedule`` <- ``engines`` <- ``batch``;
tests/unit/test_import_layers.py holds the order), on a few shared modules:

- ``options/``: the command line and the environment, read once into the mode they name
  (one frozen record per mode: fetch sources, list, debug, dry run, build);
- ``configs``: which ``.ci_support`` configs exist and which ones the user meant;
- ``artifacts``: done markers, produced packages, SHA256SUMS, summary.json, log_files.zip;
- ``summary_schema``: summary.json's shape as typed records (``--help`` prints it from them);
- ``provenance``: where a config's packages came from (commit, dirty tree, recipe, engine),
  recorded once per config;
- ``cli``: the entry point: a ``match`` over the mode the options name, run through the one
  place where errors become exit codes.

``schedule/``: what a config costs and where it runs (facts, shard, eta, runners).
``engines/``: how one config is built and watched (ladder, engine, plan, embedded, rattler,
airgap, runner, logtee, progress, ccache).
``batch/``: the pipeline select -> plan -> run -> record -> report (pipeline, choose,
preflight, loop, record, summary, lock).
The commands that read earlier batches (``python -m tools review``) are a layer of their
own above this package, ``tools/review/``.

Standard library plus ruamel.yaml only: maintainers run this with the system Python.
"""
