"""``python -m tools explain``: one table row per CI job -- what it builds and where."""

from __future__ import annotations

import argparse
import itertools
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tools.foundation.log import Console

HELP = "explain the build matrix: a row per CI job with platform, CUDA, BLAS, Pythons and packages"

COLUMNS = (
    "CI job",
    "platform",
    "build platform",
    "CUDA",
    "GPU architectures",
    "BLAS",
    "Python",
    "packages",
)
# On a terminal the label says platform, CUDA and BLAS, so those columns go.
TERMINAL_COLUMNS = ("config", "built on", "Python", "packages")

EPILOG = """\
The table names each config by its short label (`linux-64 cuda13.0 mkl`: platform,
cudaX.Y or cpu, BLAS) and wraps the packages column to the terminal's width; --markdown
(the README's table) keeps conda-smithy's long names.  --filter GLOB keeps the configs
whose NAME.yaml or label matches GLOB (as build-locally.py's --filter does); names that
match nothing are an error.

--json prints a list, one object per CI job, in the table's order:
  {"config": str, "label": str, "platform": str, "build_platform": str, "cross": bool,
   "cuda": str|null, "cuda_arch_list": str|null (the TORCH_CUDA_ARCH_LIST its build
   exports, recipe/cuda_arch_lists.txt), "cuda_arch_set": str|null ("full", or the
   name of a narrower set, which its build strings carry), "blas": str|null, "pythons": [str]
   (X.Y, and X.Yt for a free-threaded Python: "3.14t"),
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
    label: str = ""
    platform: str = "-"
    build_platform: str = "-"
    cross: bool = False
    cuda: str | None = None
    cuda_arch_list: str | None = None
    cuda_arch_set: str | None = None
    blas: str | None = None
    pythons: tuple[str, ...] = ()
    packages: tuple[PackageSummary, ...] = ()

    def cells(self) -> tuple[str, ...]:
        if not self.packages:
            return (self.config, "-", "-", "-", "-", "-", "-", "nothing (every output skipped)")
        build = f"{self.build_platform} ({'cross' if self.cross else 'native'})"
        return (
            self.config,
            self.platform,
            build,
            self.cuda or "-",
            self.archs_cell(),
            self.blas or "-",
            ", ".join(self.pythons) or "-",
            ", ".join(p.cell() for p in self.packages),
        )

    def archs_cell(self) -> str:
        """The list; a narrower set than conda-forge's full one also by its name."""
        if not self.cuda_arch_list:
            return "-"
        if self.cuda_arch_set and self.cuda_arch_set != "full":
            return f"{self.cuda_arch_list} ({self.cuda_arch_set})"
        return self.cuda_arch_list

    def terminal_cells(self) -> tuple[str, ...]:
        label = self.label or self.config
        if not self.packages:
            return (label, "-", "-", "nothing (every output skipped)")
        return (
            label,
            f"{self.build_platform}{' (cross)' if self.cross else ''}",
            python_range(self.pythons),
            ", ".join(p.cell() for p in self.packages),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "label": self.label or self.config,
            "platform": self.platform,
            "build_platform": self.build_platform,
            "cross": self.cross,
            "cuda": self.cuda,
            "cuda_arch_list": self.cuda_arch_list,
            "cuda_arch_set": self.cuda_arch_set,
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
    from tools.recipe.namespace import python_label

    # 3.14t (free-threaded) is a Python of its own, after the 3.14 with the GIL.
    pythons = sorted(
        {
            python_label(o.variant["python"])
            for o in built
            if "python" in o.used_vars and "python" in o.variant
        },
        key=lambda v: (*(int(x) for x in v.rstrip("t").split(".") if x.isdigit()), v),
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
        cuda_arch_list="/".join(sorted({o.cuda_arch_list for o in built if o.cuda_arch_list}))
        or None,
        cuda_arch_set=_one(built, "cuda_arch_set") or None
        if any(o.cuda_arch_list for o in built)
        else None,
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


def python_range(pythons: tuple[str, ...]) -> str:
    """``3.10-3.14`` for consecutive minor versions of one major, else the list; free-threaded
    Pythons (``3.14t``) follow, named one by one: ``3.10-3.14, 3.14t``."""
    gil = tuple(v for v in pythons if not v.endswith("t"))
    free = [v for v in pythons if v.endswith("t")]
    try:
        parts = [tuple(int(x) for x in v.split(".")[:2]) for v in gil]
    except ValueError:
        return ", ".join(pythons) or "-"
    consecutive = all(b[0] == a[0] and b[1] == a[1] + 1 for a, b in itertools.pairwise(parts))
    if len(parts) > 2 and consecutive:
        return ", ".join([f"{gil[0]}-{gil[-1]}", *free])
    return ", ".join(pythons) or "-"


def terminal_table(rows: list[tuple[str, ...]], width: int, notes: list[str] | None = None) -> str:
    """Columns padded; the last one wrapped so no line is wider than ``width``; a row's
    note (if any) on a line of its own under it, indented by two."""
    import textwrap

    widths = [max(len(TERMINAL_COLUMNS[i]), *(len(r[i]) for r in rows)) for i in range(3)]
    indent = sum(widths) + 2 * len(widths)
    room = max(width - indent, 30)
    lines = []
    for row, note in zip(
        [TERMINAL_COLUMNS, *rows], ["", *(notes or [""] * len(rows))], strict=True
    ):
        head = "".join(cell.ljust(w + 2) for cell, w in zip(row[:3], widths, strict=True))
        wrapped = textwrap.wrap(row[3], room, break_on_hyphens=False) or [""]
        lines.append((head + wrapped[0]).rstrip())
        lines.extend((" " * indent + more).rstrip() for more in wrapped[1:])
        if note:
            lines.append(f"  {note}")
    return "\n".join(lines)


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
    from tools.render.config import render_configs_text

    folder = root / ".ci_support"
    ordered = sorted(variant_files.items(), key=lambda item: Path(item[0]).stem)
    renders = render_configs_text(
        [(folder / name, text) for name, text in ordered], root=root, recipe_dir=recipe
    )
    jobs = [
        summarize(name.removesuffix(".yaml"), outputs)
        for (name, _), outputs in zip(ordered, renders, strict=True)
    ]
    return readme_table(jobs)


def run(args: argparse.Namespace, console: Console) -> int:
    from tools.foundation.errors import UserError
    from tools.foundation.repo import find_root, recipe_dir
    from tools.foundation.selection import select_many
    from tools.render.config import config_labels, list_configs, render_config

    root = find_root()
    recipe = recipe_dir(args.recipe_dir, root)
    available = list_configs(root)
    if not available:
        raise UserError(
            f"{root / '.ci_support'}: no configs; run `python -m tools matrix --write` first"
        )
    if args.update_readme and args.filter_glob:
        raise UserError("--update-readme writes the whole table; drop --filter")
    labels = config_labels(root, available)
    configs = select_many(available, (), filter_glob=args.filter_glob, labels=labels)
    warnings: list[str] = []
    jobs = [
        replace(
            summarize(c, render_config(c, root=root, recipe_dir=recipe, warnings=warnings)),
            label=labels[c],
        )
        for c in configs
    ]
    for message in warnings:
        console.warn(message)
    if args.json:
        console.say(json.dumps([job.to_json() for job in jobs], indent=2))
        return 0
    if not args.markdown and not args.update_readme:
        import shutil

        width = shutil.get_terminal_size((100, 24)).columns if console.out.isatty() else 100
        # A CUDA job's GPU list (long) goes on a line of its own under its row.
        notes = [f"GPU architectures: {j.archs_cell()}" if j.cuda_arch_list else "" for j in jobs]
        console.say(terminal_table([job.terminal_cells() for job in jobs], width, notes))
        return 0
    rows = [job.cells() for job in jobs]
    if args.update_readme:
        from tools.foundation import readme

        table = readme_table(jobs)
        changed = readme.update_readme(root / "README.md", table, readme.MATRIX_TABLE)
        console.say(
            f"README.md: build-matrix table {'updated' if changed else 'already up to date'}"
        )
        return 0
    console.say(format_table(rows, args.markdown))
    return 0
