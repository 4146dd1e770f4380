"""The import graph of ``tools/`` is acyclic and points one way (docs/architecture.md).

Imports are read with ``ast`` from the source (tests/helpers/import_graph.py), lazy ones
inside functions included: a lazy import hides a cycle from Python, not from this test. The
layers are tools/'s folders; no module is loose in tools/, none over 400 lines in the repository.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest
from helpers.import_graph import cycles, import_graph

REPO = Path(__file__).resolve().parents[2]

# The layers are folders of tools/, lowest first; the folders of one tuple are peers. A module
# may import its own layer and the layers below it, never above. A module belongs to the
# deepest folder named here that holds it, so a subfolder can sit above its parent's own
# modules (build-locally's parts: what they share, what a config costs, the command line, how
# one config is built, the batch that builds them, the reviewer's commands over what batches
# wrote). A name ending in .py is one module: tools/'s package marker under everything, its
# entry over everything.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("foundation", "__init__.py"),
    ("recipe",),
    ("smithy",),
    # rattler-build's CLI over py-rattler-build: the embedded engine's, and render's or
    # check's when they need rattler-build itself.
    ("rattler_build",),
    ("render",),
    ("rerender",),
    ("check", "drift", "emulate", "layout", "smoke"),
    ("localbuild/records",),
    ("localbuild/schedule",),
    ("localbuild",),
    ("localbuild/engines",),
    ("localbuild/batch",),
    ("review",),
    ("bump",),
    # build-locally.py's entry sits beside the options it reads until it moves among the
    # commands (tools/localbuild/cli.py, issue 54 part 2)
    ("commands", "__main__.py", "localbuild/cli.py"),
)
COMMANDS = len(LAYERS) - 1


def _dotted(entry: str) -> str:
    """``localbuild/engines`` -> ``tools.localbuild.engines``; ``__init__.py`` -> ``tools``."""
    parts = ["tools", *entry.removesuffix(".py").split("/")]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> int | None:
    """The rank of the deepest declared folder holding ``module`` (a module named exactly wins)."""
    best: tuple[int, int] | None = None  # (depth of the matching entry, rank)
    for rank, entries in enumerate(LAYERS):
        for entry in entries:
            name = _dotted(entry)
            exact = module == name
            inside = not entry.endswith(".py") and module.startswith(name + ".")
            depth = len(name.split(".")) + (1 if entry.endswith(".py") else 0)
            if (exact or inside) and (best is None or depth > best[0]):
                best = (depth, rank)
    return None if best is None else best[1]


def layer_name(module: str) -> str:
    """The declared entry ``module`` belongs to, as the test's messages name it."""
    rank = layer_of(module)
    assert rank is not None
    matching = [
        e
        for e in LAYERS[rank]
        if module == _dotted(e) or (not e.endswith(".py") and module.startswith(_dotted(e) + "."))
    ]
    return max(matching, key=lambda e: len(_dotted(e)))


def upward_imports(graph: Mapping[str, Iterable[str]]) -> list[str]:
    problems = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            mine, theirs = layer_of(module), layer_of(target)
            if mine is not None and theirs is not None and theirs > mine:
                problems.append(
                    f"{module} ({layer_name(module)}) imports {target} ({layer_name(target)})"
                )
    return problems


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(REPO)


def test_tools_has_no_import_cycle(graph) -> None:
    assert cycles(graph) == []


def test_every_module_belongs_to_a_layer(graph) -> None:
    assert [m for m in sorted(graph) if layer_of(m) is None] == []


def test_every_declared_layer_is_a_folder_or_module_of_tools() -> None:
    missing = [e for layer in LAYERS for e in layer if not (REPO / "tools" / e).exists()]
    assert missing == []


def test_tools_holds_only_packages_and_its_entry() -> None:
    # a module loose in tools/ would belong to no part; each part is a folder
    loose = sorted(
        p.name
        for p in (REPO / "tools").iterdir()
        if p.is_file() and p.suffix == ".py" and p.name not in ("__init__.py", "__main__.py")
    )
    assert loose == []


def _layer_diagram() -> str:
    """The fenced block under docs/architecture.md's "The layer rule"."""
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    return page.split("## The layer rule", 1)[1].split("```", 2)[1]


def test_the_architecture_page_draws_the_declared_layers_top_down() -> None:
    diagram = _layer_diagram()
    # a top-level folder drawn as tools/X/, a subfolder as X/ under its parent's block; each
    # a word of its own (tools/localbuild/cli.py on the commands' line is not the folder)
    drawn = {}
    for layer in LAYERS:
        for e in layer:
            if not e.endswith(".py"):
                name = f"tools/{e}/" if "/" not in e else f" {e.rpartition('/')[2]}/"
                found = re.search(re.escape(name) + r"(?=\s)", diagram)
                drawn[e] = found.start() if found else -1
    assert [e for e, at in drawn.items() if at < 0] == []
    tops = [
        (rank, min(drawn[e] for e in layer if e in drawn and "/" not in e))
        for rank, layer in enumerate(LAYERS)
        if any(e in drawn and "/" not in e for e in layer)
    ]
    assert [rank for rank, _ in sorted(tops, key=lambda t: t[1])] == sorted(
        (rank for rank, _ in tops), reverse=True
    )


# What a newcomer reads in one sitting: a module over this many lines is split by behaviour.
MAX_MODULE_LINES = 400
# Not source: caches, environments and what builds write (.gitignore's folders among them).
_NOT_SOURCE = frozenset({"__pycache__", "build_artifacts", "miniforge3", "node_modules", "venv"})


def _python_modules(root: Path) -> list[Path]:
    found = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [d for d in subfolders if not d.startswith(".") and d not in _NOT_SOURCE]
        found.extend(Path(folder, n) for n in names if n.endswith(".py"))
    return found


def test_no_python_module_of_the_repository_is_over_400_lines() -> None:
    too_long = sorted(
        f"{path.relative_to(REPO)}: {lines} lines"
        for path in _python_modules(REPO)
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    )
    assert too_long == []


def test_imports_point_down_the_layers(graph) -> None:
    assert upward_imports(graph) == []


def test_no_core_module_imports_a_command_module(graph) -> None:
    offenders = [
        f"{module} imports {target}"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if layer_of(target) == COMMANDS and layer_of(module) != COMMANDS
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
            "tools/drift/table.py": "from .model import Row\nfrom ..foundation.errors import E\n",
            "tools/drift/model.py": "",
            "tools/foundation/__init__.py": "",
            "tools/foundation/errors.py": "",
        },
    )
    graph = import_graph(root)
    assert graph["tools.drift"] == {"tools.drift.table"}
    # importing tools.foundation.errors runs tools/foundation/__init__.py first
    assert graph["tools.drift.table"] == {
        "tools.drift.model",
        "tools.foundation",
        "tools.foundation.errors",
    }


def test_a_pipeline_importing_a_command_is_reported() -> None:
    graph = {
        "tools.render.config": {"tools.commands.render"},
        "tools.commands.render": {"tools.render.config"},
    }
    assert upward_imports(graph) == [
        "tools.render.config (render) imports tools.commands.render (commands)"
    ]


def test_a_foundation_module_importing_the_recipe_model_is_reported() -> None:
    graph = {"tools.foundation.selection": {"tools.recipe.model"}}
    assert upward_imports(graph) == [
        "tools.foundation.selection (foundation) imports tools.recipe.model (recipe)"
    ]


def test_peers_may_import_each_other() -> None:
    # check, drift, emulate, layout and smoke share a rank: emulate runs check's readers
    assert upward_imports({"tools.emulate.install": {"tools.check.readers.elf"}}) == []


def test_a_subfolder_sits_above_its_parents_own_modules() -> None:
    # build-locally's options read the schedule; the shared records read neither
    graph = {
        "tools.localbuild.options": {"tools.localbuild.schedule.shard"},
        "tools.localbuild.records.configs": {"tools.localbuild.options"},
    }
    assert upward_imports(graph) == [
        "tools.localbuild.records.configs (localbuild/records) imports "
        "tools.localbuild.options (localbuild)"
    ]


def test_a_module_in_an_undeclared_folder_has_no_layer() -> None:
    assert layer_of("tools.newthing.model") is None
    assert layer_of("tools.newthing") is None
    assert layer_of("tools.loose") is None
    assert layer_of("tools.render.config") == layer_of("tools.render")


def test_an_engine_importing_the_batch_is_reported() -> None:
    # The engines build one config; the batch drives them. A runner that reached back
    # into the loop would tie every new engine to the pipeline.
    graph = {"tools.localbuild.engines.runner": {"tools.localbuild.batch.loop"}}
    assert upward_imports(graph) == [
        "tools.localbuild.engines.runner (localbuild/engines) imports "
        "tools.localbuild.batch.loop (localbuild/batch)"
    ]


def test_the_batch_importing_the_reviewers_side_is_reported() -> None:
    graph = {"tools.localbuild.batch.pipeline": {"tools.review.modes"}}
    assert upward_imports(graph) == [
        "tools.localbuild.batch.pipeline (localbuild/batch) imports tools.review.modes (review)"
    ]
