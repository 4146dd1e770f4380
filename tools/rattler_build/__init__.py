"""rattler-build's CLI over py-rattler-build, for every part of the toolkit that builds with it.

- ``cli``: ``python -m tools.rattler_build build ...``, the binary's arguments (cli.py says
  where it differs from the binary);
- ``stage``: the copies of the recipe and variant files it builds from;
- ``workroot``: the fixed, locked folder every build runs in;
- ``repack``: the packages repacked at the commit's time, so two builds agree byte for byte;
- ``output`` / ``network``: the build scripts' output, and what a failed download means;
- ``source``: the source archive a recipe names.
"""

# What py-rattler-build cannot do, in the words build records carry and review verify reads back.
NO_PACKAGE_COMMIT = (
    "packages carry no commit: py-rattler-build records no --extra-meta, so their "
    "info/about.json has no extra.sha"
)
