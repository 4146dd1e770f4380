"""Line selectors (``# [linux and cuda_compiler_version != "None"]``), evaluated safely.

conda-build evaluates selectors with ``eval`` behind a node whitelist.  We never call
``eval``: the selector is parsed with :mod:`ast` and interpreted node by node, and only
the constructs conda-build's whitelist admits are accepted (boolean logic, comparisons,
literals, tuples and lists, a few string and mapping methods, ``os.environ.get``).
Anything else is an :class:`UnsupportedConstruct` naming the file, line and selector.

Semantics kept from conda-build on purpose:
- a name the namespace does not know evaluates to ``False`` (e.g. ``[arm_variant_type]``
  on a platform without that key);
- whole-line comments become blank lines; a selected line keeps its text without the
  ``# [...]`` part; a deselected line disappears.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from tools.recipe.errors import UnsupportedConstruct

# A selector sits at the end of a line, optionally after other comment text; a trailing
# "(...)" after the brackets means a markdown link, not a selector.
SELECTOR_RE = re.compile(r"(.+?)\s*(#.*)?\[([^\[\]]+)\](?(2)[^\(\)]*)$")

_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}

# Methods a selector may call on a value, as in conda-build's whitelist.
_METHODS = frozenset(
    {
        "endswith",
        "index",
        "lower",
        "rsplit",
        "split",
        "startswith",
        "strip",
        "upper",
        "join",
        "replace",
        "get",
        "items",
        "keys",
        "values",
        "getenv",
    }
)
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "int": int,
    "float": float,
    "len": len,
    "str": str,
    "list": list,
    "dict": dict,
    "tuple": tuple,
}


class OsSubset:
    """What selectors may reach of ``os``: ``os.environ``, ``os.getenv``, ``os.sep``."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = dict(environ)
        self.sep = "/"
        self.pathsep = ":"

    def getenv(self, key: str, default: str | None = None) -> str | None:
        return self.environ.get(key, default)


_ATTRIBUTES = _METHODS | {"environ", "pathsep", "sep"}


class _Unsupported(Exception):
    pass


def _interpret(node: ast.AST, names: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Expression):
        return _interpret(node.body, names)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        # Unknown names are False, as conda-build does after a NameError.
        return names.get(node.id, False)
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            result: Any = True
            for value in node.values:
                result = _interpret(value, names)
                if not result:
                    return result
            return result
        result = False
        for value in node.values:
            result = _interpret(value, names)
            if result:
                return result
        return result
    if isinstance(node, ast.UnaryOp):
        operand = _interpret(node.operand, names)
        if isinstance(node.op, ast.Not):
            return not operand
        if isinstance(node.op, ast.USub):
            return -operand
        raise _Unsupported(type(node.op).__name__)
    if isinstance(node, ast.Compare):
        left = _interpret(node.left, names)
        for op, comparator in zip(node.ops, node.comparators):
            right = _interpret(comparator, names)
            func = _COMPARE.get(type(op))
            if func is None:
                raise _Unsupported(type(op).__name__)
            try:
                ok = func(left, right)
            except TypeError as exc:
                raise _Unsupported(f"comparison of {left!r} and {right!r}") from exc
            if not ok:
                return False
            left = right
        return True
    if isinstance(node, (ast.Tuple, ast.List)):
        values = [_interpret(e, names) for e in node.elts]
        return tuple(values) if isinstance(node, ast.Tuple) else values
    if isinstance(node, ast.Attribute):
        if node.attr not in _ATTRIBUTES:
            raise _Unsupported(f"attribute .{node.attr}")
        target = _interpret(node.value, names)
        try:
            return getattr(target, node.attr)
        except AttributeError as exc:
            raise _Unsupported(f"attribute .{node.attr} of {type(target).__name__}") from exc
    if isinstance(node, ast.Subscript):
        target = _interpret(node.value, names)
        key = _interpret(node.slice, names)
        return target[key]
    if isinstance(node, ast.Call):
        if node.keywords:
            raise _Unsupported("keyword arguments")
        args = [_interpret(a, names) for a in node.args]
        if isinstance(node.func, ast.Name):
            func = FUNCTIONS.get(node.func.id)
            if func is None:
                raise _Unsupported(f"call of {node.func.id}()")
            return func(*args)
        if isinstance(node.func, ast.Attribute):
            if node.func.attr not in _METHODS:
                raise _Unsupported(f"call of .{node.func.attr}()")
            return _interpret(node.func, names)(*args)
        raise _Unsupported("call")
    raise _Unsupported(type(node).__name__)


@lru_cache(maxsize=4096)
def _parse(expression: str) -> ast.Expression:
    return ast.parse(expression.strip(), mode="eval")


def evaluate(expression: str, names: Mapping[str, Any], *, where: str = "selector") -> bool:
    """Truth value of one selector expression; ``where`` is ``file:line`` for errors."""
    try:
        tree = _parse(expression)
    except SyntaxError as exc:
        raise UnsupportedConstruct(
            where, f"selector [{expression}] is not valid: {exc.msg}"
        ) from exc
    try:
        return bool(_interpret(tree, names))
    except _Unsupported as exc:
        raise UnsupportedConstruct(where, f"selector [{expression}] uses {exc}") from exc
    except (KeyError, IndexError, ValueError, TypeError) as exc:
        raise UnsupportedConstruct(
            where, f"selector [{expression}] failed: {type(exc).__name__}: {exc}"
        ) from exc


@dataclass(frozen=True)
class SplitLine:
    text: str  # the line without its selector (rstripped)
    selector: str | None


@lru_cache(maxsize=256)
def split_lines(text: str) -> tuple[SplitLine, ...]:
    """Each line of ``text`` with its selector, comment lines blanked (conda-build's rule)."""
    out = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.lstrip().startswith("#"):
            out.append(SplitLine("", None))
            continue
        quote = line[-1] if line[-1] in ("'", '"') else ""
        if "[" in line and "]" in line:
            match = SELECTOR_RE.match(line)
            if match and match.group(3):
                out.append(SplitLine((match.group(1) + quote).rstrip(), match.group(3)))
                continue
        out.append(SplitLine(line, None))
    return tuple(out)


@lru_cache(maxsize=4096)
def referenced_names(expression: str) -> frozenset[str]:
    """The bare names a selector reads (what its truth value can depend on)."""
    try:
        tree = _parse(expression)
    except SyntaxError:
        return frozenset()
    return frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name))


@lru_cache(maxsize=4096)
def names_read(expression: str) -> tuple[str, ...]:
    """:func:`referenced_names` of one selector expression, sorted: a memo key's order."""
    return tuple(sorted(referenced_names(expression)))


@lru_cache(maxsize=256)
def selector_names(text: str) -> tuple[str, ...]:
    """Every name any selector of ``text`` reads, sorted: the cache key of a selection."""
    found: set[str] = set()
    for item in split_lines(text):
        if item.selector is not None:
            found |= referenced_names(item.selector)
    return tuple(sorted(found))


@dataclass(frozen=True)
class Selected:
    """Text after selection plus, per kept line, its 1-based line number in the source."""

    text: str
    origin: tuple[int, ...]

    def source_line(self, line: int) -> int:
        """Original line number of 1-based ``line`` of the selected text (best effort)."""
        if 1 <= line <= len(self.origin):
            return self.origin[line - 1]
        return self.origin[-1] if self.origin else line


def select_lines(
    text: str,
    names: Mapping[str, Any],
    *,
    source: str = "meta.yaml",
    origin: tuple[int, ...] | None = None,
) -> Selected:
    """Keep the lines whose selector is true; drop the others (conda-build semantics)."""
    if origin is None:
        return _select_memo(text, source, _Bound(names, selector_names(text)))
    return _select(text, names, source, origin)


class _Bound:
    """``names`` seen through the few names a text's selectors read: equal (and hashing
    alike) whenever those names have equal values, so selection can be memoised."""

    __slots__ = ("key", "names")

    def __init__(self, names: Mapping[str, Any], read: Iterable[str]) -> None:
        self.names = names
        self.key = tuple(cache_key_value(names.get(n)) for n in read)

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Bound) and self.key == other.key


@lru_cache(maxsize=4096)
def _select_memo(text: str, source: str, bound: _Bound) -> Selected:
    return _select(text, bound.names, source, None)


def cache_key_value(value: Any) -> Any:
    """A hashable stand-in for a selector name's value, for memo keys."""
    if isinstance(value, OsSubset):
        return tuple(sorted(value.environ.items()))
    if isinstance(value, dict):
        return tuple(sorted(value.items()))
    if isinstance(value, list):
        return tuple(value)
    return (type(value).__name__, value)


def _select(
    text: str, names: Mapping[str, Any], source: str, origin: tuple[int, ...] | None
) -> Selected:
    kept: list[str] = []
    lines: list[int] = []
    cache: dict[str, bool] = {}
    for index, item in enumerate(split_lines(text)):
        number = origin[index] if origin and index < len(origin) else index + 1
        if item.selector is not None:
            value = cache.get(item.selector)
            if value is None:
                value = evaluate(item.selector, names, where=f"{source}:{number}")
                cache[item.selector] = value
            if not value:
                continue
        kept.append(item.text)
        lines.append(number)
    return Selected("\n".join(kept) + "\n", tuple(lines))


# -- names no one defines ------------------------------------------------------------------

_SET_RE = re.compile(r"\{%-?\s*set\s+([A-Za-z_]\w*)\s*=")
_KEY_RE = re.compile(r"^([A-Za-z_]\w*)\s*:", re.MULTILINE)


def set_names(text: str) -> frozenset[str]:
    """The names a recipe's ``{% set NAME = ... %}`` statements define."""
    return frozenset(_SET_RE.findall(text))


def top_level_keys(text: str) -> frozenset[str]:
    """The keys a conda_build_config.yaml sets, under any selector (every platform's)."""
    return frozenset(_KEY_RE.findall(text))


@dataclass(frozen=True)
class UnknownName:
    """A name a selector reads that nothing defines: conda-build reads it as false without a
    word, so a typo (``cuda_compiler_verison``) silently turns the line on or off."""

    line: int  # 1-based, in the recipe text
    selector: str
    name: str
    closest: str | None

    def message(self, source: str) -> str:
        hint = f"; did you mean {self.closest!r}?" if self.closest else ""
        return (
            f"{source}:{self.line}: selector [{self.selector}] reads {self.name!r}, which no "
            f"variant key, conda-build name or {{% set %}} defines (conda-build reads it as "
            f"False without a word){hint}"
        )


def unknown_selector_names(text: str, known: Iterable[str]) -> tuple[UnknownName, ...]:
    """Every selector name of ``text`` outside ``known``, with the closest known name."""
    import difflib

    known = frozenset(known) | set_names(text)
    found = []
    for number, item in enumerate(split_lines(text), 1):
        if item.selector is None:
            continue
        for name in sorted(referenced_names(item.selector) - known):
            close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
            found.append(UnknownName(number, item.selector, name, close[0] if close else None))
    return tuple(found)
