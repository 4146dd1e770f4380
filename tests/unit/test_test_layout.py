"""The tests show their kind: each test file is a unit test (tests/unit/, no process started)
or an end-to-end one (tests/e2e/), and a test module is never another's library (shared code
lives in tests/helpers/, data in tests/fixtures/)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = next(p for p in Path(__file__).resolve().parents if p.name == "tests")
KINDS = ("unit", "e2e")


def _test_files() -> list[Path]:
    """Our test files; tests/fixtures/ holds data, upstream's test files among it."""
    fixtures = TESTS / "fixtures"
    return sorted(p for p in TESTS.rglob("test_*.py") if fixtures not in p.parents)


def _imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def test_every_test_file_is_a_unit_or_an_end_to_end_test() -> None:
    misplaced = [
        str(path.relative_to(TESTS))
        for path in _test_files()
        if path.parent.parent != TESTS or path.parent.name not in KINDS
    ]
    assert misplaced == [], "place each in tests/unit/ (starts no process) or tests/e2e/"


def test_no_test_module_imports_another() -> None:
    names = {path.stem for path in _test_files()}
    offenders = {
        str(path.relative_to(TESTS)): sorted(
            module for module in _imported_modules(path) if module.split(".")[0] in names
        )
        for path in [*_test_files(), *TESTS.joinpath("helpers").rglob("*.py")]
    }
    assert {k: v for k, v in offenders.items() if v} == {}, "move what they share to helpers/"
