"""build-locally.py's command line and environment, read once into the mode they name.

``modes``: one frozen record per mode (fetch sources, list, debug, dry run, build) and the
parts they share (which configs, how each builds); ``command_line``: the parser, its help,
the one table of flags that exclude each other, and the flags that moved to the review.
"""

from tools.localbuild.options.command_line import (
    BUILDERS,
    CONFLICTS,
    MOVED,
    build_parser,
    from_args,
    parse,
    refuse_moved,
)
from tools.localbuild.options.modes import (
    Build,
    Debug,
    DryRun,
    FetchSources,
    ListConfigs,
    Mode,
    Options,
    Planned,
    Selection,
)

__all__ = [
    "BUILDERS",
    "CONFLICTS",
    "MOVED",
    "Build",
    "Debug",
    "DryRun",
    "FetchSources",
    "ListConfigs",
    "Mode",
    "Options",
    "Planned",
    "Selection",
    "build_parser",
    "from_args",
    "parse",
    "refuse_moved",
]
