"""Every entry of the tests cache is published through tests/helpers/cache.py.

Two test runs share the cache (docs/testing.md), so an entry built any other way (unpacked
into a fixed ``.partial`` folder, the old entry deleted, then renamed into place) is one that
a second run deletes under the first one's feet. This reads every test module: a function
that reaches the cache neither renames, moves nor links anything into place, nor makes a
staging folder of its own; ``cached_dir``, ``unpacked_wheel``, ``pip_download``,
``staging``/``publish_dir`` and ``discard`` do that for it.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2] / "tests"
MECHANISM = TESTS / "helpers" / "cache.py"
#: Excerpts of upstream PyTorch's sources that patch tests apply to: data, not test code.
UPSTREAM_EXCERPTS = TESTS / "fixtures" / "upstream_2_13"

#: How a test function reaches the cache: the root itself, or a fixture that lives in it.
CACHE_NAMES = frozenset({"tests_cache_root", "tests_cache_dir", "torch_wheel"})
#: What puts an entry in place: os.rename/replace/link, shutil.move, Path.rename/replace/
#: hardlink_to; and tempfile.mkdtemp, a staging folder of one's own.
MODULE_CALLS = frozenset(
    {("os", "rename"), ("os", "replace"), ("os", "link"), ("shutil", "move")}
    | {("tempfile", "mkdtemp")}
)
PATH_METHODS = frozenset({"rename", "replace", "hardlink_to"})


def _reaches_cache(function: ast.AST) -> bool:
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and node.id in CACHE_NAMES:
            return True
        if isinstance(node, ast.arg) and node.arg in CACHE_NAMES:
            return True
    return False


def _publishing_calls(function: ast.AST) -> list[ast.Call]:
    found = []
    for node in ast.walk(function):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        owner = node.func.value
        module_call = isinstance(owner, ast.Name) and (owner.id, node.func.attr) in MODULE_CALLS
        # str.replace takes two arguments, Path.replace one
        path_method = node.func.attr in PATH_METHODS and len(node.args) == 1 and not node.keywords
        if module_call or path_method:
            found.append(node)
    return found


def own_publishing(path: Path, root: Path) -> list[str]:
    """``file:line: code`` of each cache-reaching function's own move, link or delete."""
    tree = ast.parse(path.read_text(), filename=str(path))
    calls = {
        call.lineno: ast.unparse(call)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _reaches_cache(node)
        for call in _publishing_calls(node)
    }
    return [f"{path.relative_to(root)}:{line}: {code}" for line, code in sorted(calls.items())]


def test_no_test_module_publishes_a_cache_entry_its_own_way() -> None:
    modules = [
        p
        for p in sorted(TESTS.rglob("*.py"))
        if p != MECHANISM and not p.is_relative_to(UPSTREAM_EXCERPTS)
    ]
    assert modules
    problems = [problem for module in modules for problem in own_publishing(module, TESTS.parent)]
    assert problems == [], "publish through helpers/cache.py (cached_dir) instead"


def test_the_torch_unpack_that_raced_is_recognised(tmp_path: Path) -> None:
    # The scheme tests/e2e/test_recipe_real_torch.py used until two runs at once broke it.
    module = tmp_path / "test_old.py"
    module.write_text(
        "def torch_site(torch_wheel):\n"
        "    target = torch_wheel.parent / (torch_wheel.stem + '.unpacked')\n"
        "    partial = target.with_name(target.name + '.partial')\n"
        "    shutil.rmtree(partial, ignore_errors=True)\n"
        "    with zipfile.ZipFile(torch_wheel) as wheel:\n"
        "        wheel.extractall(partial)\n"
        "    shutil.rmtree(target, ignore_errors=True)\n"
        "    partial.rename(target)\n"
        "    return str(target).replace('a', 'b')\n"
    )
    assert own_publishing(module, tmp_path) == ["test_old.py:8: partial.rename(target)"]
