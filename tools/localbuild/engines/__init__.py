"""How one config is built and watched: the engine, the plan it runs, and its output.

- ``registry``: every engine by name, and which one builds a config; one module per engine,
  each with ``probe`` and ``plan``: ``docker`` (conda-forge's container), ``osx`` and ``win``
  (the platforms' own .scripts), ``native`` (the conda-build on PATH), ``embedded``
  (py-rattler-build, through tools/rattler_build);
- ``base``: what they share (the machine's facts, the steps, the plan);
- ``ladder``: which engine a run builds with, the first that answers;
- ``engine``: docker or podman, with every difference between them in one place;
- ``plan``: what exactly runs for one config (argv, environment, mounts), as data;
- ``runner``: runs one plan, tees its output to the config's log, survives Ctrl-C;
- ``watch/``: timestamped, redacted log lines (``logtee``) and a quiet status line
  (``progress``);
- ``offline/``: builds without internet (``airgap``) and what a build would download
  (``fetches``);
- ``ccache``: how a persistent compiler cache reaches the build, and its hit statistics.
"""
