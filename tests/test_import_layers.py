"""The import graph of ``tools/`` is acyclic and points one way (docs/architecture.md).

Imports are read with ``ast`` from the source, lazy ones inside functions included: a lazy
import hides a cycle from Python, not from this test.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Lowest first; a module may import its own layer and the layers below it, never above.
# A name covers the module and everything under it; the longest matching name wins.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("tools", "tools.errors", "tools.files", "tools.proc", "tools.log",
                    "tools.repo", "tools.readme")),
    ("recipe text", ("tools.recipe", "tools.recipe.errors", "tools.recipe.selectors",
                     "tools.recipe.namespace", "tools.recipe.text", "tools.recipe.jinja",
                     "tools.recipe.loader")),
    ("conda-build semantics", ("tools.recipe.variant_config", "tools.recipe.evaluate",
                               "tools.recipe.metadata", "tools.recipe.model")),
    ("conda-smithy semantics", ("tools.smithy",)),
    # rattler-build's CLI over py-rattler-build: the embedded engine's, and render's or
    # check's when they need rattler-build itself.
    ("rattler-build CLI", ("tools.rattler_build",)),
    ("pipelines", ("tools.render", "tools.render_meta", "tools.render_v1", "tools.rendered",
                   "tools.ci_support", "tools.drift", "tools.check", "tools.emulate",
                   "tools.layout")),
    # build-locally's parts, one way: what a config costs, how one is built, the batch
    # that builds them, the reviewer's commands that read what batches wrote.
    ("build-locally records", ("tools.localbuild", "tools.localbuild.configs",
                               "tools.localbuild.console", "tools.localbuild.artifacts",
                               "tools.localbuild.provenance")),
    ("build-locally schedule", ("tools.localbuild.schedule",)),
    ("build-locally options", ("tools.localbuild.options",)),
    ("build-locally engines", ("tools.localbuild.engines",)),
    ("build-locally batch", ("tools.localbuild.batch",)),
    ("build-locally review", ("tools.localbuild.review",)),
    ("release bump", ("tools.bump",)),
    ("commands", ("tools.__main__", "tools.commands", "tools.localbuild.cli")),
)  # fmt: skip
COMMANDS = LAYERS[-1][0]


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


def layer_of(module: str) -> int | None:
    best: tuple[int, int] | None = None  # (length of the matching name, layer)
    for rank, (_, names) in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and (
                best is None or len(name) > best[0]
            ):
                best = (len(name), rank)
    return None if best is None else best[1]


def upward_imports(graph: Mapping[str, Iterable[str]]) -> list[str]:
    problems = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            mine, theirs = layer_of(module), layer_of(target)
            if mine is not None and theirs is not None and theirs > mine:
                problems.append(
                    f"{module} ({LAYERS[mine][0]}) imports {target} ({LAYERS[theirs][0]})"
                )
    return problems


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(REPO)


def test_tools_has_no_import_cycle(graph) -> None:
    assert cycles(graph) == []


def test_every_module_belongs_to_a_layer(graph) -> None:
    assert [m for m in sorted(graph) if layer_of(m) is None] == []


def test_imports_point_down_the_layers(graph) -> None:
    assert upward_imports(graph) == []


def test_no_core_module_imports_a_command_module(graph) -> None:
    commands = LAYERS.index(next(layer for layer in LAYERS if layer[0] == COMMANDS))
    offenders = [
        f"{module} imports {target}"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if layer_of(target) == commands and layer_of(module) != commands
    ]
    assert offenders == []


# Folder names that build tools, .gitignore templates and code-map tools take for generated
# output: a source package so named gets ignored, excluded or cleaned (issue 23).
OUTPUT_FOLDER_NAMES = frozenset({"build", "dist", "out", "output", "target", "_build"})


def test_no_package_of_tools_is_named_like_build_output() -> None:
    named = [
        str(path.relative_to(REPO))
        for path in sorted((REPO / "tools").rglob("*"))
        if path.is_dir() and path.name in OUTPUT_FOLDER_NAMES
    ]
    assert named == []


# -- the checker itself, on small packages written for the purpose ----------------------------


def _package(tmp_path: Path, files: Mapping[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_a_cycle_through_a_package_init_is_found(tmp_path: Path) -> None:
    # main before issue 15: tools/recipe/__init__.py re-exported the model, so importing
    # tools.recipe.namespace from tools.variants ran the model, which imports tools.variants.
    root = _package(
        tmp_path,
        {
            "tools/__init__.py": "",
            "tools/recipe/__init__.py": "from tools.recipe.model import render\n",
            "tools/recipe/namespace.py": "",
            "tools/recipe/model.py": "from tools.recipe import namespace\nimport tools.variants\n",
            "tools/variants.py": "from tools.recipe.namespace import names\n",
        },
    )
    assert cycles(import_graph(root)) == [["tools.recipe", "tools.recipe.model", "tools.variants"]]


def test_a_cycle_through_a_lazy_import_is_found(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "tools/__init__.py": "",
            "tools/recipe/__init__.py": "",
            "tools/recipe/model.py": "def reduce():\n    from tools.variants import explode\n",
            "tools/variants.py": "from tools.recipe import model\n",
        },
    )
    assert cycles(import_graph(root)) == [["tools.recipe.model", "tools.variants"]]


def test_relative_imports_resolve_to_modules(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "tools/__init__.py": "",
            "tools/drift/__init__.py": "from . import table\n",
            "tools/drift/table.py": "from .model import Row\nfrom ..errors import UserError\n",
            "tools/drift/model.py": "",
            "tools/errors.py": "",
        },
    )
    graph = import_graph(root)
    assert graph["tools.drift"] == {"tools.drift.table"}
    assert graph["tools.drift.table"] == {"tools.drift.model", "tools.errors"}


def test_a_pipeline_importing_a_command_is_reported() -> None:
    graph = {"tools.render": {"tools.commands.render"}, "tools.commands.render": {"tools.render"}}
    assert upward_imports(graph) == [
        "tools.render (pipelines) imports tools.commands.render (commands)"
    ]


def test_an_engine_importing_the_batch_is_reported() -> None:
    # The engines build one config; the batch drives them. A runner that reached back
    # into the loop would tie every new engine to the pipeline.
    graph = {"tools.localbuild.engines.runner": {"tools.localbuild.batch.loop"}}
    assert upward_imports(graph) == [
        "tools.localbuild.engines.runner (build-locally engines) imports "
        "tools.localbuild.batch.loop (build-locally batch)"
    ]


def test_the_batch_importing_the_reviewers_side_is_reported() -> None:
    graph = {"tools.localbuild.batch.pipeline": {"tools.localbuild.review.modes"}}
    assert upward_imports(graph) == [
        "tools.localbuild.batch.pipeline (build-locally batch) imports "
        "tools.localbuild.review.modes (build-locally review)"
    ]
