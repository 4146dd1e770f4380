"""Local and CFEP-03 batch builds behind ``build-locally.py``.

One module per concern:

- ``options``: the command line and the environment, read once into a frozen record;
- ``configs``: which ``.ci_support`` configs exist and which ones the user meant;
- ``engine``: docker or podman, with every difference between them in one place;
- ``plan``: what exactly runs for one config (argv, environment, mounts), as data;
- ``runner``: runs one plan, tees its output to the config's log, survives Ctrl-C;
- ``logtee`` / ``progress``: timestamped, redacted log lines and a quiet status line;
- ``artifacts``: done markers, produced packages, SHA256SUMS, summary.json, log_files.zip;
- ``ccache``: how a persistent compiler cache reaches the build, and its hit statistics;
- ``batch``: the pipeline, and nothing else: select -> plan -> run -> record -> report;
- ``choose`` (select): names, globs, --all, the menu, --shard, --list;
- ``preflight`` (plan): the plans, the configs this machine cannot build, what is refused
  before a container starts, --dry-run;
- ``loop`` (run): the configs one after another (resume, fail-fast, prune);
- ``record``: each config's result, kept in summary.json across runs;
- ``summary`` (report): the table on the terminal and the exit code;
- ``modes``: --why, --merge and --cfep3-request, which read earlier batches;
- ``provenance``: where a config's packages came from (commit, dirty tree, recipe, engine),
  recorded once per config; ``embedded``: the commit a package carries in info/about.json;
- ``verify``: ``--verify DIR [--commit SHA]``, the CFEP-03 reviewer's check of an upload;
- ``console``: stdout, stderr and the menu's input;
- ``facts``: what a config says about its cost and its runners (CUDA, Pythons, labels);
- ``shard``: ``--shard K/N``, the selection split over machines by expected build time;
- ``eta``: the expected finish of the current config and of the batch (same cost model);
- ``why``: ``--why CONFIG``, the first real error of a failed config's log;
- ``report``: ``--report [DIR...]``, the CFEP-03 comment (report.md) and timeline.svg;
- ``merge``: ``--merge DIR...``, several machines' build_artifacts/ combined into one;
- ``runners``: the GitHub Actions jobs of .github/workflows/build.yml (``python -m tools runners``);
- ``cli``: argparse and the one place where errors become exit codes.

Standard library plus ruamel.yaml only: maintainers run this with the system Python.
"""
