"""Runs the curated slice of upstream's tests with the skips that apply to this machine.

Both recipes run `python upstream_tests.py --cuda <version|None> --blas <impl> -- <pytest args>`
in the `pytorch` output's tests. The skips live in upstream_test_skips.txt, one per line with
the condition under which it applies and the reason, so that meta.yaml and recipe-v1.yaml share
one list instead of two copies that drift apart. Conditions are evaluated here, on the test
machine, from what it is (platform, architecture, Python) and what the package was built with
(CUDA version, BLAS), which the recipe passes.

A skip line reads `<pytest -k term> | <condition> | <reason>`; `#` starts a comment line.
A condition is `all` or a boolean expression (and, or, not, parentheses) over the names
`linux osx win aarch64 arm64 x86_64 cuda cuda129 cuda130 mkl generic py310 ... py314`.

Standard library only (it runs in the test environment before torch is imported).
Exit status: pytest's; 2 with one `error:` line for a malformed skip file or arguments.
"""

from __future__ import annotations

import argparse
import ast
import platform
import subprocess
import sys
from pathlib import Path

SKIPS = Path(__file__).with_name("upstream_test_skips.txt")
PY_VERSIONS = ("310", "311", "312", "313", "314", "315")


class SkipFileError(ValueError):
    """A line of the skip file that cannot be read."""


def machine_facts(cuda: str, blas: str) -> dict[str, bool]:
    """The names a condition may use, true or false for this machine and package."""
    machine = platform.machine().lower()
    py = f"{sys.version_info[0]}{sys.version_info[1]}"
    facts = {
        "linux": sys.platform.startswith("linux"),
        "osx": sys.platform == "darwin",
        "win": sys.platform == "win32",
        "aarch64": machine in ("aarch64", "arm64") and sys.platform != "darwin",
        "arm64": machine == "arm64" and sys.platform == "darwin",
        "x86_64": machine in ("x86_64", "amd64"),
        "cuda": cuda != "None",
        "mkl": blas == "mkl",
        "generic": blas == "generic",
    }
    for version in ("12.9", "13.0"):
        facts["cuda" + version.replace(".", "")] = cuda == version
    for version in PY_VERSIONS:
        facts["py" + version] = py == version
    return facts


def _evaluate(node: ast.AST, facts: dict[str, bool], where: str) -> bool:
    if isinstance(node, ast.BoolOp):
        values = [_evaluate(v, facts, where) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not _evaluate(node.operand, facts, where)
    if isinstance(node, ast.Name):
        if node.id == "all":
            return True
        if node.id not in facts:
            known = " ".join(sorted(facts))
            raise SkipFileError(
                f"{where}: unknown name '{node.id}' in the condition (known: all {known})"
            )
        return facts[node.id]
    raise SkipFileError(f"{where}: a condition takes names, and, or, not and parentheses only")


def applies(condition: str, facts: dict[str, bool], where: str = "condition") -> bool:
    try:
        tree = ast.parse(condition, mode="eval")
    except SyntaxError as exc:
        raise SkipFileError(
            f"{where}: condition '{condition}' is not an expression ({exc.msg})"
        ) from None
    return _evaluate(tree.body, facts, where)


def read_skips(text: str, facts: dict[str, bool], source: str = SKIPS.name) -> list[str]:
    """The -k terms of the skip lines whose condition holds, in file order, each once."""
    terms: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{source}:{number}"
        fields = [field.strip() for field in line.split("|")]
        if len(fields) != 3 or not all(fields):
            raise SkipFileError(
                f"{where}: expected '<-k term> | <condition> | <reason>', got '{line.strip()}'"
            )
        term, condition, _reason = fields
        if applies(condition, facts, where) and term not in terms:
            terms.append(term)
    return terms


def keyword_expression(terms: list[str]) -> str:
    return "not (" + " or ".join(terms) + ")" if terms else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cuda", required=True, help="cuda_compiler_version of the package, or None"
    )
    parser.add_argument("--blas", required=True, choices=("mkl", "generic"))
    parser.add_argument("--skips", type=Path, default=SKIPS, help=argparse.SUPPRESS)
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    pytest_args = args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args
    try:
        terms = read_skips(
            args.skips.read_text(encoding="utf-8"),
            machine_facts(args.cuda, args.blas),
            str(args.skips),
        )
    except (OSError, SkipFileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    expression = keyword_expression(terms)
    command = [
        sys.executable,
        "-m",
        "pytest",
        *pytest_args,
        *(["-k", expression] if expression else []),
    ]
    print(f"upstream_tests.py: {len(terms)} skips apply here", flush=True)
    return subprocess.call(command)


if __name__ == "__main__":
    sys.exit(main())
