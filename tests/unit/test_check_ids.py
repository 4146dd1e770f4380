"""Each rules module of tools/check declares the check ids its findings carry (``IDS``), and
every one is registered in ``CHECKS`` and documented in ``python -m tools check --help``."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from tools.check import CHECK_IDS
from tools.check.rules import elf, macho, pe
from tools.commands.check import EPILOG

RULES = Path(__file__).resolve().parents[2] / "tools" / "check" / "rules"
MODULES = sorted(p.stem for p in RULES.glob("*.py") if p.stem != "__init__")
FAMILIES = sorted({check_id.split(".", 1)[0] for check_id in CHECK_IDS})
LOOKS_LIKE_ID = re.compile(rf"^(?:{'|'.join(FAMILIES)})\.[a-z0-9-]+$")


def _declared(module: str) -> tuple[str, ...]:
    return importlib.import_module(f"tools.check.rules.{module}").IDS


def _written(module: str) -> set[str]:
    """Every string in the module's source that has the shape of a check id."""
    tree = ast.parse((RULES / f"{module}.py").read_text())
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and LOOKS_LIKE_ID.match(node.value)
    }


@pytest.mark.parametrize("module", MODULES)
def test_a_rules_module_declares_every_id_it_writes(module: str) -> None:
    assert _written(module) <= set(_declared(module))


def test_the_registered_checks_are_the_declared_ids_each_declared_once() -> None:
    declared = [check_id for module in MODULES for check_id in _declared(module)]
    assert sorted(declared) == sorted(CHECK_IDS)
    assert len(set(CHECK_IDS)) == len(CHECK_IDS)


def test_the_linked_library_rule_keeps_each_platforms_id() -> None:
    assert (elf.LINKER.check, macho.LINKER.check, pe.LINKER.check) == (
        "elf.needed",
        "macho.load-dylib",
        "pe.imports",
    )


@pytest.mark.parametrize("check_id", CHECK_IDS)
def test_the_help_documents_each_check(check_id: str) -> None:
    assert re.search(rf"(?m)^  (?:\S+, )*{re.escape(check_id)}\b", EPILOG), check_id
