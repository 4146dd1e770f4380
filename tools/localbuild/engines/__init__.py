"""How one config is built and watched: the engine, the plan it runs, and its output.

- ``engine``: docker or podman, with every difference between them in one place;
- ``plan``: what exactly runs for one config (argv, environment, mounts), as data;
- ``runner``: runs one plan, tees its output to the config's log, survives Ctrl-C;
- ``logtee`` / ``progress``: timestamped, redacted log lines and a quiet status line;
- ``ccache``: how a persistent compiler cache reaches the build, and its hit statistics.
"""
