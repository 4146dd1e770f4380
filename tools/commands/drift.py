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
                   pin names, every other requirement to every configuration. Requires-Python
                   is a row for Python itself (against the Pythons the recipe builds); the CUDA
                   release the wheel pins (cuda-toolkit[...]==X, >= 2.14, or nvidia-cuda-runtime)
                   is a row for cuda-version, compared with the configs of that CUDA major
                   (cuda-toolkit) or series (+cuXYZ, nvidia-cuda-runtime)

  NVIDIA libraries (nvidia-*-cuNN wheels, cuda-toolkit[...] components) reach a conda-forge
  package's run through the run_exports of the -dev package in host: a row says which host
  package provides each one, and a library no host package provides is the finding (looser).

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
   "problems": [str],
   "rows": [{"package", "status", "reason", "compared_with": "run"|"build/host",
             "upstream": {"name", "kind": "requirement"|"tested", "spec", "text", "source",
                          "extra", "condition"},
             "recipe": [{"spec", "present", "configs": [...], "label", "where",
                         "constrained"}],
             "conda_forge": {"name", "latest", "versions", "source"} | null}],
   "hidden": [str]}

problems (printed as warnings and after the table; --check exits 1 on them):
  meta.yaml and the v1 recipe (recipe-v1.yaml or recipe.yaml) stating another version, build
  number or source sha256 (they build one release; python -m tools bump writes both);
  a --wheel whose version (without its +local label) is not the version the recipe builds;
  a recipe whose version differs from git HEAD's while a source sha256 is the same as HEAD's
  (both revisions of meta.yaml rendered with the first configuration's first variant)

  A run requirement is compared with the torch output's run requirements, else with its
  run_constrained (shown "(run_constrained)"): that answers an optional upstream extra; a
  required package only constrained is looser.

exit status: 0 done, 1 --check found conflicts or problems, 2 bad input (an unknown --config
lists the three closest names, an ambiguous one every match, one per line).
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
        help="render only these .ci_support configs: full name, NAME.yaml, unique prefix, "
        "glob (every match) or variant file (repeatable)",
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
    parser.add_argument("--check", action="store_true", help="exit 1 on a conflict or a problem")
    parser.add_argument(
        "--update-readme",
        action="store_true",
        help="rewrite the table between <!-- drift-table:start --> and <!-- drift-table:end -->",
    )
    parser.add_argument(
        "--readme", metavar="PATH", help="page to update (default: <feedstock>/docs/drift.md)"
    )


def run(args: argparse.Namespace) -> int:
    from tools.drift import present, table
    from tools.drift.pipeline import DriftRequest, drift_report
    from tools.foundation import readme as readme_io
    from tools.foundation import repo
    from tools.foundation.errors import ProblemsFound

    request = DriftRequest(
        source=Path(args.source) if args.source else None,
        wheels=tuple(Path(w) for w in args.wheel),
        channel_data=tuple(Path(p) for p in args.channel_data),
        channel=args.channel,
        offline=args.offline,
        recipe_dir=args.recipe_dir,
        configs=tuple(args.config),
        no_recipe=args.no_recipe,
        torch_output=args.output,
        show_all=args.all,
    )
    result = drift_report(request)
    report, view, root = result.report, result.view, result.root

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
        readme = (
            Path(args.readme) if args.readme else (root or repo.find_root()) / readme_io.DRIFT_PAGE
        )
        changed = readme_io.update_readme(readme, present.markdown(report))
        print(
            f"{readme}: drift table {'updated' if changed else 'already up to date'} "
            f"({len(report.rows)} rows)",
            file=sys.stderr,
        )

    if args.check:
        found = table.conflicts(report)
        if found or report.problems:
            names = ", ".join(row.package for row in found)
            parts = [f"{len(found)} conflict(s) between upstream and the recipe: {names}"] * bool(
                found
            )
            parts += [f"{len(report.problems)} problem(s) with the comparison"] * bool(
                report.problems
            )
            raise ProblemsFound("; ".join(parts))
    return 0
