"""``python -m tools explain``: one table row per CI job -- what it builds and where."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HELP = "explain the build matrix: a row per CI job with platform, CUDA, BLAS, Pythons and packages"

COLUMNS = ("CI job", "platform", "build platform", "CUDA", "BLAS", "Python", "packages")

EPILOG = """\
--filter GLOB keeps the configs whose NAME.yaml matches GLOB (as build-locally.py's
--filter does); names that match nothing are an error.

--json prints a list, one object per CI job, in the table's order:
  {"config": str, "platform": str, "build_platform": str, "cross": bool,
   "cuda": str|null, "blas": str|null, "pythons": [str],
   "packages": [{"name": str, "count": int, "variants": [str]}]}
  A job whose every output is skipped has platform "-" and empty lists.

exit status: 0 printed or README up to date/updated; 2 bad input (no configs, a --filter
that matches none, a recipe error with file:line).
"""


@dataclass(frozen=True)
class PackageSummary:
    name: str
    count: int  # output variants of this name (one per Python for pytorch)
    variants: tuple[str, ...] = ()  # values of the keys other than python that vary

    def cell(self) -> str:
        if self.variants:
            return f"{self.name} ({', '.join(self.variants)})"
        return f"{self.name} (x{self.count})" if self.count > 1 else self.name


@dataclass(frozen=True)
class JobSummary:
    """What one CI job builds, and where (one row of the table, one object of --json)."""

    config: str
    platform: str = "-"
    build_platform: str = "-"
    cross: bool = False
    cuda: str | None = None
    blas: str | None = None
    pythons: tuple[str, ...] = ()
    packages: tuple[PackageSummary, ...] = ()

    def cells(self) -> tuple[str, ...]:
        if not self.packages:
            return (self.config, "-", "-", "-", "-", "-", "nothing (every output skipped)")
        build = f"{self.build_platform} ({'cross' if self.cross else 'native'})"
        return (
            self.config,
            self.platform,
            build,
            self.cuda or "-",
            self.blas or "-",
            ", ".join(self.pythons) or "-",
            ", ".join(p.cell() for p in self.packages),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "platform": self.platform,
            "build_platform": self.build_platform,
            "cross": self.cross,
            "cuda": self.cuda,
            "blas": self.blas,
            "pythons": list(self.pythons),
            "packages": [
                {"name": p.name, "count": p.count, "variants": list(p.variants)}
                for p in self.packages
            ],
        }


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--markdown", action="store_true", help="a Markdown table (the README's)")
    form.add_argument("--json", action="store_true", help="the JSON document described below")
    form.add_argument(
        "--update-readme",
        action="store_true",
        help="rewrite the table between the matrix-table markers of README.md (nothing else)",
    )
    parser.add_argument(
        "--filter",
        dest="filter_glob",
        metavar="GLOB",
        help="only configs whose NAME.yaml matches GLOB",
    )
    parser.add_argument(
        "--recipe-dir", metavar="DIR", help="recipe directory (default: <repo>/recipe)"
    )


def summarize(config: str, outputs) -> JobSummary:
    """One CI job from its rendered outputs (pure; testable without files)."""
    built = [o for o in outputs if not o.skip]
    if not built:
        return JobSummary(config)
    first = built[0]
    cross = bool(first.build_platform and first.build_platform != first.subdir)
    cuda = _one(built, "cuda_compiler_version")
    pythons = sorted(
        {
            o.variant["python"].split(" ")[0].replace(".*", "")
            for o in built
            if "python" in o.used_vars and "python" in o.variant
        },
        key=lambda v: tuple(int(x) for x in v.split(".") if x.isdigit()),
    )
    packages = []
    for name in dict.fromkeys(o.name for o in built):
        mine = [o for o in built if o.name == name]
        varying = sorted(
            k
            for k in set().union(*(o.used_vars for o in mine))
            if k != "python" and len({o.variant.get(k) for o in mine}) > 1
        )
        values = sorted({"/".join(o.variant.get(k, "") for k in varying) for o in mine})
        packages.append(PackageSummary(name, len(mine), tuple(values) if varying else ()))
    return JobSummary(
        config=config,
        platform=first.subdir,
        build_platform=first.build_platform if cross else first.subdir,
        cross=cross,
        cuda=None if cuda in ("None", "") else cuda,
        blas=_one(built, "blas_impl") or None,
        pythons=tuple(pythons),
        packages=tuple(packages),
    )


def job_row(config: str, outputs) -> tuple[str, ...]:
    """The table row of one CI job from its rendered outputs (pure; testable without files)."""
    return summarize(config, outputs).cells()


def _one(outputs, key: str) -> str:
    values = sorted({o.variant[key] for o in outputs if key in o.variant})
    return "/".join(values)


def format_table(rows: list[tuple[str, ...]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
        lines += [
            "| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows
        ]
        return "\n".join(lines)
    widths = [
        max(len(COLUMNS[i]), *(len(r[i]) for r in rows)) if rows else len(COLUMNS[i])
        for i in range(len(COLUMNS))
    ]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*COLUMNS), *(fmt.format(*row) for row in rows)])


def readme_table(jobs: list[JobSummary]) -> str:
    """The README's CI-job table (between its matrix-table markers)."""
    return format_table([job.cells() for job in jobs], markdown=True) + "\n"


def readme_table_of(variant_files: dict[str, str], root, recipe) -> str:
    """The README's CI-job table for variant files given as ``{NAME.yaml: text}``: what
    ``matrix --write`` is about to write, or has written."""
    from tools.render import render_config_text

    folder = root / ".ci_support"
    jobs = [
        summarize(
            name.removesuffix(".yaml"),
            render_config_text(folder / name, text, root=root, recipe_dir=recipe),
        )
        for name, text in sorted(variant_files.items(), key=lambda item: Path(item[0]).stem)
    ]
    return readme_table(jobs)


def run(args: argparse.Namespace) -> int:
    from tools.errors import UserError
    from tools.render import list_configs, render_config
    from tools.repo import find_root, recipe_dir
    from tools.selection import select_many

    root = find_root()
    recipe = recipe_dir(args.recipe_dir, root)
    available = list_configs(root)
    if not available:
        raise UserError(
            f"{root / '.ci_support'}: no configs; run `python -m tools matrix --write` first"
        )
    if args.update_readme and args.filter_glob:
        raise UserError("--update-readme writes the whole table; drop --filter")
    configs = select_many(available, (), filter_glob=args.filter_glob)
    jobs = [summarize(c, render_config(c, root=root, recipe_dir=recipe)) for c in configs]
    if args.json:
        json.dump([job.to_json() for job in jobs], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    rows = [job.cells() for job in jobs]
    if args.update_readme:
        from tools import readme

        table = readme_table(jobs)
        changed = readme.update_readme(root / "README.md", table, readme.MATRIX_TABLE)
        print(f"README.md: build-matrix table {'updated' if changed else 'already up to date'}")
        return 0
    print(format_table(rows, args.markdown))
    return 0
