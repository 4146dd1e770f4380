"""``python -m tools drift``: upstream PyTorch vs this recipe vs conda-forge, one row per pin."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HELP = "compare upstream PyTorch's pins with the recipe's and conda-forge's versions"

EPILOG = """\
upstream claims:
  --source DIR     an unpacked PyTorch source tree: vendored third_party/ versions, .ci/docker
                   pins (ci_commit_pins/*.txt, triton_version.txt, common/install_*.sh),
                   pyproject.toml and requirements*.txt
  --wheel WHL      a wheel's METADATA Requires-Dist (repeatable); its CUDA-only requirements
                   (nvidia-*, triton) apply to the CUDA series its +cuXYZ label or CUDA runtime
                   pin names, every other requirement to every configuration

status (conda version semantics, py-rattler):
  ok        the recipe admits the same versions (or admits the version upstream tests with)
  looser    the recipe admits versions upstream rejects, or leaves a required package out
  stricter  the recipe admits only versions upstream admits, but not all of them
  conflict  no version satisfies both (--check exits 1)
  differs   the recipe does not admit the one version upstream vendors or builds with
  unknown   nothing to compare, with the reason

  Requirements (PEP 440) are translated to conda specs: ==1.2.* -> 1.2.*, ~=1.4.2 ->
  >=1.4.2,1.4.*, other operators unchanged; markers select the configurations (platform,
  Python) a requirement applies to; extra == "x" requirements are optional. Two specs are
  compared over every version either mentions, their bumps, the channel's versions and a
  version between each neighbouring pair.

--json document (version 1):
  {"version": 1, "inputs": {...}, "recipe_note": str|null, "channel_note": str|null,
   "rows": [{"package", "status", "reason", "compared_with": "run"|"build/host",
             "upstream": {"name", "kind": "requirement"|"tested", "spec", "text", "source",
                          "extra", "condition"},
             "recipe": [{"spec", "present", "configs": [...], "label", "where"}],
             "conda_forge": {"name", "latest", "versions", "source"} | null}],
   "hidden": [str]}

exit status: 0 done, 1 --check found conflicts, 2 bad input.
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--source", metavar="DIR", help="unpacked PyTorch source tree")
    parser.add_argument(
        "--wheel", metavar="WHL", action="append", default=[], help="PyTorch wheel (repeatable)"
    )
    parser.add_argument(
        "--channel-data",
        metavar="JSON",
        action="append",
        default=[],
        help="conda-forge repodata.json or channeldata.json (repeatable); "
        "without it the channel is queried through py-rattler unless --offline",
    )
    parser.add_argument(
        "--channel",
        default="conda-forge",
        metavar="CHANNEL",
        help="channel to query when no --channel-data is given (name, URL or local directory)",
    )
    parser.add_argument(
        "--offline", action="store_true", help="never query the channel; conda-forge is unknown"
    )
    parser.add_argument(
        "--recipe-dir", metavar="DIR", help="the recipe (default: <feedstock>/recipe)"
    )
    parser.add_argument(
        "--config",
        metavar="CONFIG",
        action="append",
        default=[],
        help="render only this .ci_support config (name or variant file; repeatable)",
    )
    parser.add_argument(
        "--no-recipe", action="store_true", help="do not render the recipe; its column is unknown"
    )
    parser.add_argument(
        "--output",
        default="pytorch",
        metavar="NAME",
        help="the output that ships the torch package (default: pytorch)",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="also show development-only requirements and rows no configuration matches",
    )
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--markdown", action="store_true", help="print a Markdown table")
    form.add_argument("--json", action="store_true", help="print the JSON document described below")
    parser.add_argument("--check", action="store_true", help="exit 1 when a row is a conflict")
    parser.add_argument(
        "--update-readme",
        action="store_true",
        help="rewrite the table between <!-- drift-table:start --> and <!-- drift-table:end -->",
    )
    parser.add_argument(
        "--readme", metavar="PATH", help="README to update (default: <feedstock>/README.md)"
    )


def run(args: argparse.Namespace) -> int:
    from tools import readme as readme_io
    from tools import repo
    from tools.drift import channel as channel_io
    from tools.drift import present, table
    from tools.drift import recipe as recipe_io
    from tools.drift.names import conda_names
    from tools.drift.upstream_tree import read_tree
    from tools.drift.upstream_wheel import read_wheel
    from tools.errors import ProblemsFound, UserError
    from tools.log import step, warn

    if not args.source and not args.wheel:
        raise UserError("nothing to compare: pass --source DIR and/or --wheel WHL")

    claims = []
    if args.source:
        tree = read_tree(Path(args.source))
        claims += tree.claims
        for note in tree.notes:
            warn(note)
    for wheel in args.wheel:
        claims += read_wheel(Path(wheel))

    view, recipe_note = None, None
    root = None
    if not args.no_recipe:
        recipe_path = repo.recipe_dir(args.recipe_dir)
        root = recipe_path.parent
        try:
            with step("render every configuration"):
                rendered = recipe_io.render_all(root, args.config, recipe_path)
        except recipe_io.RendererUnavailable as exc:
            recipe_note = str(exc)
            warn(recipe_note)
        else:
            recipe_io.require_output(rendered, args.output)
            specs, configs, unparsable = recipe_io.specs_from_rendered(rendered, args.output)
            for item in unparsable:
                warn(f"cannot parse rendered requirement, skipped: {item}")
            view = table.RecipeView(specs, configs, args.output)
    else:
        recipe_note = "generated with --no-recipe"

    forge, channel_note = None, None
    if args.channel_data:
        forge = channel_io.read_channel_files([Path(p) for p in args.channel_data])
    elif args.offline:
        channel_note = "generated with --offline"
    else:
        names = sorted({n for c in claims for n in conda_names(c.package)})
        platforms = sorted({c.subdir for c in view.configs}) if view else ["linux-64"]
        try:
            with step(f"query {args.channel} through py-rattler"):
                forge = channel_io.query_channel(names, platforms, args.channel)
        except Exception as exc:  # offline, DNS, TLS, timeout: the column becomes unknown
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            channel_note = f"{args.channel} unreachable ({first})"
            warn(channel_note)

    report = table.build_report(
        claims, view, forge, recipe_note=recipe_note, channel_note=channel_note, show_all=args.all
    )

    if args.json:
        inputs = {
            "source": args.source,
            "wheels": list(args.wheel),
            "channel_data": list(args.channel_data),
            "recipe_configs": [c.name for c in view.configs] if view else [],
        }
        json.dump(present.as_json(report, inputs), sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.markdown:
        sys.stdout.write(present.markdown(report))
    elif not args.update_readme:
        sys.stdout.write(present.text_table(report))

    if args.update_readme:
        readme = Path(args.readme) if args.readme else (root or repo.find_root()) / "README.md"
        changed = readme_io.update_readme(readme, present.markdown(report))
        print(
            f"{readme}: drift table {'updated' if changed else 'already up to date'} "
            f"({len(report.rows)} rows)",
            file=sys.stderr,
        )

    if args.check:
        found = table.conflicts(report)
        if found:
            names = ", ".join(row.package for row in found)
            raise ProblemsFound(
                f"{len(found)} conflict(s) between upstream and the recipe: {names}"
            )
    return 0
