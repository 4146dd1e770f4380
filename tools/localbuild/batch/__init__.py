"""The batch: select -> plan -> run -> record -> report, one module per stage.

- ``pipeline``: the stages in order, and nothing else;
- ``choose`` (select): names, globs, --all, the menu, --shard, --list;
- ``preflight`` (plan): the plans, the configs this machine cannot build, what is refused
  before a container starts, --dry-run;
- ``loop`` (run): the configs one after another (resume, fail-fast, prune);
- ``record``: each config's result, kept in summary.json across runs;
- ``summary`` (report): the table on the terminal and the exit code;
- ``lock``: one batch at a time per build_artifacts/.
"""
