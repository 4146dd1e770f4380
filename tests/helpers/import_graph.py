"""The import graph of the ``tools`` package under a root, read with ``ast`` from the source:
lazy imports inside functions included (a lazy import hides a cycle from Python, not from
this reading), and the package ``__init__`` an import runs first. tests/unit/test_import_layers.py
holds it to the layers."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path


def module_files(root: Path) -> dict[str, Path]:
    """Every module of the ``tools`` package under ``root``, by dotted name."""
    found = {}
    for path in sorted((root / "tools").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _target(name: str, modules: Mapping[str, Path]) -> str | None:
    """The module of ours that importing ``name`` executes last (its nearest existing prefix)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(name: str, path: Path, modules: Mapping[str, Path]) -> set[str]:
    """Modules of ours that ``name`` imports anywhere in its source (lazy imports too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import sub` imports the submodule; `from mod import name` the module.
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            module = _target(target, modules)
            if module is not None and module != name:
                found.add(module)
                found |= _packages_run_first(module, name, modules)
    return found


def _packages_run_first(module: str, importer: str, modules: Mapping[str, Path]) -> set[str]:
    """Importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first, unless the importer
    is inside that package already (then Python is initialising it)."""
    parts = module.split(".")
    parents = {".".join(parts[:i]) for i in range(1, len(parts))}
    return {
        p for p in parents if p in modules and not (importer == p or importer.startswith(p + "."))
    }


def import_graph(root: Path) -> dict[str, set[str]]:
    modules = module_files(root)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in graph.get(node, ()):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found
