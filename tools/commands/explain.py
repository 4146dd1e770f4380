"""``python -m tools explain``: one table row per CI job -- what it builds and where."""

from __future__ import annotations

import argparse

HELP = "explain the build matrix: a row per CI job with platform, CUDA, BLAS, Pythons and packages"

COLUMNS = ("CI job", "platform", "build platform", "CUDA", "BLAS", "Python", "packages")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--markdown", action="store_true", help="a Markdown table (the README's)")
    parser.add_argument(
        "--update-readme",
        action="store_true",
        help="rewrite the table between the matrix-table markers of README.md (nothing else)",
    )
    parser.add_argument(
        "--recipe-dir", metavar="DIR", help="recipe directory (default: <repo>/recipe)"
    )


def job_row(config: str, outputs) -> tuple[str, ...]:
    """The table row of one CI job from its rendered outputs (pure; testable without files)."""
    built = [o for o in outputs if not o.skip]
    if not built:
        return (config, "-", "-", "-", "-", "-", "nothing (every output skipped)")
    first = built[0]
    cross = first.build_platform and first.build_platform != first.subdir
    build = f"{first.build_platform} (cross)" if cross else f"{first.subdir} (native)"
    cuda = _one(built, "cuda_compiler_version")
    cuda = "-" if cuda in ("None", "") else cuda
    blas = _one(built, "blas_impl") or "-"
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
        if varying:
            values = sorted({"/".join(o.variant.get(k, "") for k in varying) for o in mine})
            packages.append(f"{name} ({', '.join(values)})")
        elif len(mine) > 1:
            packages.append(f"{name} (x{len(mine)})")
        else:
            packages.append(name)
    return (config, first.subdir, build, cuda, blas, ", ".join(pythons) or "-", ", ".join(packages))


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


def run(args: argparse.Namespace) -> int:
    from tools.errors import UserError
    from tools.render import list_configs, render_config
    from tools.repo import find_root, recipe_dir

    root = find_root()
    recipe = recipe_dir(args.recipe_dir, root)
    configs = list_configs(root)
    if not configs:
        raise UserError(
            f"{root / '.ci_support'}: no configs; run `python -m tools matrix --write` first"
        )
    rows = [job_row(c, render_config(c, root=root, recipe_dir=recipe)) for c in configs]
    if args.update_readme:
        from tools import readme

        table = format_table(rows, markdown=True) + "\n"
        changed = readme.update_readme(root / "README.md", table, readme.MATRIX_TABLE)
        print(f"README.md: build-matrix table {'updated' if changed else 'already up to date'}")
        return 0
    print(format_table(rows, args.markdown))
    return 0
