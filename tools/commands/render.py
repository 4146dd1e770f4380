"""``python -m tools render CONFIG``: what one CI job builds, per output and variant."""

from __future__ import annotations

import argparse
import json
import re
import sys

HELP = "render the recipe for one .ci_support config: outputs, build strings, requirements"

EPILOG = """\
CONFIG is a .ci_support config name (without .yaml) or the path of a variant YAML file.
The recipe's own conda_build_config.yaml is layered under it, as conda-build does with -m.

Build strings carry conda-build's real hash (sha1 of the used variant keys, see
hash_input); pin_subpackage() is resolved against the sibling outputs.

--json prints a list, one object per output variant, sorted as rendered:
  {"name", "version", "build_string", "build_number", "subdir", "build_platform",
   "skip", "noarch", "config",
   "requirements": {"build": [...], "host": [...], "run": [...], "run_constrained": [...]},
   "run_exports": {"weak"|"strong"|...: [...]}, "tests": {...},
   "variant": {key: value}, "used_vars": [...], "hash_input": {key: value}}

exit status: 0 rendered, 2 bad input (unknown config, recipe error with file:line).
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument(
        "config", metavar="CONFIG", help=".ci_support config name or variant YAML path"
    )
    parser.add_argument("--output", metavar="NAME", help="only this output (package name)")
    parser.add_argument("--json", action="store_true", help="machine-readable output (see below)")
    parser.add_argument(
        "--built-only", action="store_true", help="leave out outputs the recipe skips here"
    )
    parser.add_argument(
        "--recipe-dir", metavar="DIR", help="recipe directory (default: <repo>/recipe)"
    )


def run(args: argparse.Namespace) -> int:
    from tools.errors import UserError
    from tools.render import render_config
    from tools.repo import find_root, recipe_dir

    root = find_root()
    recipe = recipe_dir(args.recipe_dir, root)
    outputs = render_config(args.config, root=root, recipe_dir=recipe)
    if args.output:
        names = sorted({o.name for o in outputs})
        outputs = [o for o in outputs if o.name == args.output]
        if not outputs:
            raise UserError(
                f"{args.config}: no output named {args.output!r} (outputs: {', '.join(names)})"
            )
    if args.built_only:
        outputs = [o for o in outputs if not o.skip]
    if args.json:
        json.dump([o.to_json() for o in outputs], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    for out in outputs:
        print(_describe(out))
    return 0


def _describe(out) -> str:
    lines = [
        f"{out.name}-{out.version}-{out.build_string}  ({out.subdir}"
        + (f", built on {out.build_platform}" if out.build_platform != out.subdir else "")
        + (", SKIPPED" if out.skip else "")
        + ")"
    ]
    # compiler/stdlib keys show in the build requirements; the rest says which variant this is
    toolchain = re.compile(r".*_(compiler|stdlib)(_version)?$|target_platform$|channel_targets$")
    loops = {
        k: out.variant[k] for k in out.used_vars if k in out.variant and not toolchain.match(k)
    }
    if loops:
        lines.append("  variant: " + ", ".join(f"{k}={v}" for k, v in loops.items()))
    for kind in ("build", "host", "run", "run_constrained"):
        specs = out.requirements.get(kind, ())
        if specs:
            lines.append(f"  {kind}:")
            lines.extend(f"    - {s}" for s in specs)
    for kind, specs in sorted(out.run_exports.items()):
        lines.append(f"  run_exports/{kind}: " + ", ".join(specs))
    tests = out.tests or {}
    for key in ("imports", "requires", "commands"):
        values = tests.get(key) or []
        if values:
            lines.append(
                f"  test/{key}: {len(values)}"
                + (" (" + ", ".join(str(v) for v in values) + ")" if key == "imports" else "")
            )
    return "\n".join(lines)
