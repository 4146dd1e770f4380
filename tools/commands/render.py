"""``python -m tools render CONFIG``: what one CI job builds, per output and variant."""

from __future__ import annotations

import argparse
import json
import re
import sys

HELP = "render the recipe for .ci_support configs: outputs, build strings, requirements"

EPILOG = """\
CONFIG names a .ci_support config the way every command takes one: the full name,
NAME.yaml (with or without its folder), a unique prefix (osx_arm64), or a glob
('linux_64_*mkl*', every match); or it is the path of a variant YAML file.  --filter
GLOB (matched against NAME.yaml, like build-locally.py's) narrows the configs, and
without CONFIG renders every config it matches.  The recipe's own
conda_build_config.yaml is layered under each, as conda-build does with -m.
With several configs, the text output puts a "== CONFIG ==" line above each.

Build strings carry conda-build's real hash (sha1 of the used variant keys, see
hash_input); pin_subpackage() is resolved against the sibling outputs.  When
conda-forge.yml says conda_build_tool: rattler-build, recipe/recipe.yaml is rendered by
rattler-build instead: its hash, and only the outputs the config builds (docs/rattler-build.md,
"On a feedstock switched to rattler-build").

--json prints a list, one object per output variant, sorted as rendered:
  {"name", "version", "build_string", "build_number", "subdir", "build_platform",
   "skip", "skip_reason" (the meta.yaml line that skips it, explained; null if built),
   "noarch", "config", "cuda_arch_list" (the TORCH_CUDA_ARCH_LIST a CUDA config's build
   exports, from recipe/cuda_arch_lists.txt; null for CPU),
   "requirements": {"build": [...], "host": [...], "run": [...], "run_constrained": [...]},
   "run_exports": {"weak"|"strong"|...: [...]}, "tests": {...},
   "variant": {key: value}, "used_vars": [...], "hash_input": {key: value}}

exit status: 0 rendered; 2 bad input: an unknown config (the three closest names follow,
one per line), an ambiguous one (every match follows, one per line), a recipe error
with file:line.
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument(
        "configs",
        nargs="*",
        metavar="CONFIG",
        help="config name, NAME.yaml, unique prefix, glob, or variant YAML path",
    )
    parser.add_argument(
        "--filter",
        dest="filter_glob",
        metavar="GLOB",
        help="only configs whose NAME.yaml matches GLOB",
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
    from tools.foundation.errors import UserError
    from tools.foundation.log import warn
    from tools.foundation.repo import find_root, recipe_dir
    from tools.foundation.selection import normalize
    from tools.render.config import config_labels, render_config, select_configs

    if not args.configs and not args.filter_glob:
        raise UserError(
            "name a CONFIG (or several, or a glob) or pass --filter GLOB; "
            "`python -m tools explain` lists the configs"
        )
    root = find_root()
    recipe = recipe_dir(args.recipe_dir, root)
    configs = select_configs(args.configs, root, filter_glob=args.filter_glob)
    warnings: list[str] = []
    rendered = [
        (c, render_config(c, root=root, recipe_dir=recipe, warnings=warnings)) for c in configs
    ]
    for message in warnings:
        warn(message)
    if args.output:
        # Every config named must have the output: one that does not would print nothing
        # under its heading, which reads as "renders nothing".
        for config, outputs in rendered:
            names = sorted({o.name for o in outputs})
            if args.output not in names:
                raise UserError(
                    f"{normalize(str(config))}: no output named {args.output!r} in this config "
                    f"(its outputs: {', '.join(names) or 'none'})"
                )
        rendered = [(c, [o for o in outputs if o.name == args.output]) for c, outputs in rendered]
    if args.built_only:
        rendered = [(c, [o for o in outputs if not o.skip]) for c, outputs in rendered]
    if args.json:
        json.dump([o.to_json() for _, outputs in rendered for o in outputs], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    labels = config_labels(root) if len(rendered) > 1 else {}
    for config, outputs in rendered:
        if len(rendered) > 1:
            name = normalize(str(config))
            label = labels.get(name, "")
            print(f"== {label}  {name} ==" if label and label != name else f"== {name} ==")
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
    if out.skip:
        lines.append(f"  skipped: {out.skip_reason or 'build/skip is true'}")
    # compiler/stdlib keys show in the build requirements; the rest says which variant this is
    toolchain = re.compile(r".*_(compiler|stdlib)(_version)?$|target_platform$|channel_targets$")
    loops = {
        k: out.variant[k] for k in out.used_vars if k in out.variant and not toolchain.match(k)
    }
    if loops:
        lines.append("  variant: " + ", ".join(f"{k}={v}" for k, v in loops.items()))
    if "python" in out.used_vars and isinstance(out.variant.get("python"), str):
        # Two packages may say py314: the free-threaded one (3.14t) and the one with the GIL.
        from tools.recipe.namespace import python_label

        label = python_label(out.variant["python"])
        kind = "free-threaded" if label.endswith("t") else "with the GIL"
        lines.append(f"  python: {label} ({kind})")
    if out.cuda_arch_list:
        lines.append(f"  TORCH_CUDA_ARCH_LIST: {out.cuda_arch_list}")
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
