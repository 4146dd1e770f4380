"""The YAML stage of the recipe model: rendered meta.yaml text -> data, as conda-build parses it.

PyYAML's safe loader (YAML 1.1 scalars, its C implementation when available), except that a
key left twice after selectors is an error instead of "last one wins".  :func:`load_chunked`
is the fast path: it parses the top level and each output separately so that pieces shared
by many variants are parsed once; :func:`load_yaml` parses a whole text.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import yaml

from tools.recipe.selectors import select_lines


class DuplicateKey(Exception):
    """A mapping kept the same key twice; ``line`` is 1-based in the parsed text."""

    def __init__(self, key: str, line: int) -> None:
        super().__init__(key)
        self.key, self.line = key, line


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """conda-build parses meta.yaml with PyYAML's safe loader (YAML 1.1 scalars); so do we,
    except that a key left twice after selectors is an error instead of "last one wins"."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise DuplicateKey(str(key), key_node.start_mark.line + 1)
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


@lru_cache(maxsize=512)
def load_yaml(rendered: str) -> Any:
    """Parse one rendered text; raises :class:`DuplicateKey` or ``yaml.YAMLError``."""
    return yaml.load(rendered, Loader=_StrictLoader)


def split_outputs(text: str) -> tuple[str, list[str]] | None:
    """Rendered meta.yaml as (everything but ``outputs:``, one text per output item)."""
    lines = text.split("\n")
    start = next((i for i, line in enumerate(lines) if line.rstrip() == "outputs:"), None)
    if start is None:
        return None
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i][:1] not in ("", " ", "\t", "#")),
        len(lines),
    )
    body = lines[start + 1 : end]
    first = next((i for i, line in enumerate(body) if line.strip()), None)
    if first is None or not body[first].lstrip().startswith("- "):
        return None
    indent = len(body[first]) - len(body[first].lstrip())
    prefix = " " * indent + "- "
    starts = []
    for index, line in enumerate(body):
        if not line.strip():
            continue
        if line.startswith(prefix):
            starts.append(index)
        elif len(line) - len(line.lstrip()) <= indent:
            return None  # not a plain list of mappings at one indentation
    blocks = ["\n".join(body[a:b]) for a, b in zip(starts, [*starts[1:], len(body)])]
    return "\n".join(lines[:start] + lines[end:]), blocks


def load_chunked(rendered: str, names: Mapping[str, Any], source: str) -> dict[str, Any] | None:
    """Select and parse the top level and each output separately, caching each piece.

    Variants of one config differ in a few outputs only (the Python of ``pytorch``, the
    flavour of a library), so most pieces are parsed once.  Selection is line-local and
    every piece ends at a line boundary, so the result equals selecting and parsing the
    whole text; anything unusual returns None and the caller parses the whole text.
    """
    split = split_outputs(rendered)
    if split is None:
        return load_yaml(select_lines(rendered, names, source=source).text)
    head, blocks = split
    data = load_yaml(select_lines(head, names, source=source).text)
    if not isinstance(data, dict) or "outputs" in data:
        return None
    items = []
    for block in blocks:
        parsed = load_yaml("outputs:\n" + select_lines(block + "\n", names, source=source).text)
        if (
            not isinstance(parsed, dict)
            or not isinstance(parsed.get("outputs"), list)
            or len(parsed["outputs"]) != 1
        ):
            return None
        items.append(parsed["outputs"][0])
    data = dict(data)
    data["outputs"] = items
    return data
