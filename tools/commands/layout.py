"""``python -m tools layout``: an upstream wheel laid out as the build's install tree and
replayed through the recipe's packaging stages."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "replay an upstream torch wheel through the recipe's packaging stages (offline)"

EPILOG = """\
PATH is an upstream torch wheel of any platform (read, not extracted). Its torch/lib,
torch/include, torch/share and torch/bin stand for the build's install tree, its torch/ for
what pip installs into the pytorch output's site-packages. recipe/package_files.py, the
rules recipe/build.sh and recipe/bld.bat run, decides which output gets each file; the
replay prints per output its file count and size by top folder, then every file that
would stop the build, land in two outputs or in none, or collide with a file a host
requirement of the --config's libtorch output owns (owners: tools/check/owned.py, as
`tools check` knows them), and a wheel whose Python ABI (its tag, its extension modules'
suffixes: cp314-cp314t and _C.cpython-314t-… are the free-threaded 3.14t) disagrees with
itself or is none the config builds pytorch for. When the wheel is the recipe's release, meta.yaml's
license_file list is checked against the wheel's License-File entries.

--config names the CI config whose host requirements apply (default: the first of the
wheel's platform, CUDA or not as the wheel is, MKL where there is a choice).

exit status: 0 the stages would pass; 1 they would fail (problems listed); 2 bad input.
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("wheel", type=Path, metavar="PATH")
    parser.add_argument("--config", help="the CI config (name, label or variant file)")
    parser.add_argument("--recipe-dir", type=Path, help="the recipe folder (default: recipe/)")


def run(args: argparse.Namespace) -> int:
    from tools.foundation.errors import ProblemsFound, UserError
    from tools.foundation.repo import find_root
    from tools.layout.replay import check_python, licence_list, load_rules, replay
    from tools.layout.report import render
    from tools.layout.wheel import read_wheel

    if not args.wheel.is_file():
        raise UserError(f"{args.wheel}: no such file; pass an upstream torch wheel")
    root = find_root()
    recipe = args.recipe_dir or root / "recipe"
    wheel = read_wheel(args.wheel)
    rules = load_rules(recipe)
    config = args.config or default_config(root, wheel)
    host = host_requirements(config, root, recipe)
    meta = recipe / "meta.yaml"
    text = meta.read_text(encoding="utf-8")
    release = wheel.version.split("+")[0]  # 2.13.0+cpu: the local label names a build
    licences = licence_list(text, str(meta)) if recipe_version(text) == release else None
    result = replay(wheel, rules, host, licences)
    check_python(wheel, config_pythons(config, root, recipe), result)
    print(render(wheel, config, result, licences is not None))
    if result.fails:
        count = sum(p.kind != "warning" for p in result.problems)
        raise ProblemsFound(f"{count} file(s) would fail the packaging of {args.wheel.name}")
    return 0


def recipe_version(meta_text: str) -> str:
    import re

    found = re.search(r'{%\s*set version\s*=\s*"([^"]+)"', meta_text)
    return found.group(1) if found else ""


def default_config(root: Path, wheel) -> str:
    """The config a wheel is laid out for: one of its platform, CUDA for a CUDA wheel and CPU
    otherwise where the matrix has one (MKL first; the newest CUDA), read from the configs'
    labels: a fork's one config has no variant key in its file name to tell it by."""
    from tools.foundation.errors import UserError
    from tools.render.config import config_labels

    cuda = any(
        rel.rpartition("/")[2].startswith(("libtorch_cuda.", "torch_cuda.")) for rel in wheel.tree
    )
    words = {name: label.split() for name, label in config_labels(root).items()}
    names = [n for n, w in words.items() if w[0] == wheel.platform]
    if not names:
        raise UserError(f"no config in .ci_support builds {wheel.platform}; pass --config")
    kind = "cuda" if cuda else "cpu"
    names = [n for n in names if len(words[n]) > 1 and words[n][1].startswith(kind)] or names
    mkl = [n for n in names if "mkl" in words[n]]
    return sorted(mkl or names)[-1 if cuda else 0]


def config_pythons(config: str, root: Path, recipe: Path) -> list[str]:
    """The Pythons the config builds pytorch for: ``3.12``, ``3.14t`` (free-threaded)."""
    from tools.recipe.namespace import python_label
    from tools.render.config import render_config

    return [
        python_label(str(o.variant["python"]))
        for o in render_config(config, root=root, recipe_dir=recipe)
        if o.name == "pytorch" and not o.skip and isinstance(o.variant.get("python"), str)
    ]


def host_requirements(config: str, root: Path, recipe: Path) -> dict[str, tuple[str, ...]]:
    from tools.render.config import render_config

    host: dict[str, tuple[str, ...]] = {}
    for output in render_config(config, root=root, recipe_dir=recipe):
        if output.skip or output.name in host:
            continue
        names = tuple(spec.split()[0] for spec in output.requirements.get("host", ()))
        host[output.name] = names
    return host
