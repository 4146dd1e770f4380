"""Reading conda-forge.yml: the one loader every command goes through, checked as conda-smithy
checks it.

conda-smithy validates conda-forge.yml with a pydantic model that forbids unknown keys and
checks every enum (``conda_smithy/schema.py``); ``data/conda-forge.schema.json`` is the JSON
Schema it generates from that model (conda-smithy ``081ec6ba``, ``data/conda-forge.json``).
Without the check a typo is silent: ``conda_build_tool: rattler_build`` builds with
conda-build, a misspelt key is ignored, and a misspelt ``build_platform`` value makes
``matrix --write`` delete CI jobs.  A problem is one line naming the file, the line, the key
or value, and the closest valid spelling.

The ``bot`` settings are checked against the conda-forge bot's own schema, which
conda-smithy's points at on the web (``data/cf_tick_schema.json``, conda-forge-bot
``24fa736``): ``abi_migration_branches``, the branches that get the bot's migration PRs too
(the python314t migration's rebuilds of release branches), must be a list of strings.

Two checks go beyond the schema, because the toolkit acts on them: the keys of
``build_platform`` are target platforms (a misspelt one would add a CI platform), and
those of ``provider`` are the platforms or OS names conda-smithy reads.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from tools.foundation import diskcache
from tools.foundation.errors import UserError
from tools.foundation.files import load_yaml_text, read_user_file, safe_yaml

SCHEMA_PATH = Path(__file__).with_name("data") / "conda-forge.schema.json"
BOT_SCHEMA_PATH = SCHEMA_PATH.with_name("cf_tick_schema.json")
NAME = "conda-forge.yml"


@dataclass(frozen=True)
class Problem:
    """One thing wrong in conda-forge.yml: where (a key path) and what."""

    path: tuple[Any, ...]  # keys as loaded, list indexes
    message: str
    at_key: bool = False  # the line of the key itself (an unknown key), not of its value


def load_forge_yml(root: Path) -> dict[str, Any]:
    """``<root>/conda-forge.yml`` as a dict (empty when the file is absent), or a UserError
    naming its first problem: ``conda-forge.yml:LINE: ...``."""
    path = root / NAME
    if not path.is_file():
        return {}
    return dict(_load(str(path), read_user_file(path)))


@lru_cache(maxsize=8)
def _load(path: str, text: str) -> dict[str, Any]:
    # a file checked once is not checked again while it is unchanged (tools/foundation/diskcache.py)
    key = diskcache.Key("conda-forge-yml").add("path", path).add("text", text)
    cached = diskcache.load(key)
    if cached is not None:
        return cached
    data = _checked(path, text)
    diskcache.store(key, data)
    return data


def _checked(path: str, text: str) -> dict[str, Any]:
    data = load_yaml_text(text, path, safe_yaml)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"{path}:1: must be a mapping of conda-smithy settings")
    found = problems(data)
    if found:
        first = min(found, key=lambda p: _line_of(text, p) or 0)
        line = _line_of(text, first)
        where = f"{path}:{line}" if line else path
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise UserError(f"{where}: {first.message}{more}")
    return data


def problems(data: Mapping[str, Any]) -> list[Problem]:
    """Every problem of ``data`` against conda-smithy's schema, plus the platform-key checks."""
    import jsonschema
    from referencing import Registry, Resource

    # The schema points the bot settings at conda-forge's bot schema on the web; offline, the
    # copy beside this file answers for it (and for any other reference, which it lacks).
    from referencing.jsonschema import DRAFT202012

    bot = Resource.from_contents(_bot_schema(), default_specification=DRAFT202012)
    registry: Registry = Registry(retrieve=lambda uri: bot)
    validator = jsonschema.Draft202012Validator(_schema(), registry=registry)
    found = [_problem(error) for error in validator.iter_errors(dict(data))]
    found.extend(_platform_key_problems(data))
    return sorted(found, key=lambda p: [str(part) for part in p.path])


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _bot_schema() -> dict[str, Any]:
    return json.loads(BOT_SCHEMA_PATH.read_text(encoding="utf-8"))


def platforms() -> tuple[str, ...]:
    """conda-forge.yml's platform names (``linux_64``, ``osx_arm64``, ...)."""
    return tuple(_schema()["$defs"]["Platforms"]["enum"])


def _problem(error: Any) -> Problem:
    """The schema error as the user reads it: the deepest part of it that names a key or an
    allowed value (an ``anyOf`` of a value and null hides the real error in its context)."""
    leaves = list(_leaves(error))
    deepest = max(len(leaf.absolute_path) for leaf in leaves)
    leaves = [leaf for leaf in leaves if len(leaf.absolute_path) == deepest]
    path = tuple(leaves[0].absolute_path)
    for leaf in leaves:
        if leaf.validator != "additionalProperties":
            continue
        known = sorted(leaf.schema.get("properties", {}))
        extra = sorted(set(leaf.instance) - set(known), key=str)
        if extra:
            key = extra[0]  # as loaded (an int key stays one, to find its line)
            return Problem((*path, key), _unknown_key(path, str(key), known), at_key=True)
    allowed = [v for leaf in leaves if leaf.validator == "enum" for v in leaf.validator_value]
    if allowed:
        return Problem(path, _bad_value(path, leaves[0].instance, allowed))
    types = [t for lf in leaves if lf.validator == "type" for t in _listed(lf.validator_value)]
    if types:
        expected = " or ".join(_TYPE_WORDS.get(t, t) for t in dict.fromkeys(types))
        value = leaves[0].instance
        return Problem(path, f"{_dotted(path)}: {value!r} is not valid here; expected {expected}")
    import jsonschema

    best = jsonschema.exceptions.best_match([error])
    return Problem(tuple(best.absolute_path), f"{_dotted(best.absolute_path)}: {best.message}")


_TYPE_WORDS = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "null": "nothing (null)",
}


def _listed(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _leaves(error: Any) -> Iterable[Any]:
    if not error.context:
        yield error
        return
    for child in error.context:
        yield from _leaves(child)


def _platform_key_problems(data: Mapping[str, Any]) -> list[Problem]:
    found = []
    known_platforms = list(platforms())
    provider_keys = sorted(_schema()["$defs"]["provider"]["properties"])
    for section, known in (("build_platform", known_platforms), ("provider", provider_keys)):
        mapping = data.get(section)
        if not isinstance(mapping, Mapping):
            continue
        for key in mapping:
            if key not in known:
                found.append(
                    Problem((section, key), _unknown_key((section,), str(key), known), at_key=True)
                )
    return found


def _unknown_key(parent: Sequence[str | int], key: str, known: Sequence[str]) -> str:
    where = f"{_dotted(parent)}: " if parent else ""
    return f"{where}unknown key {key!r}{_did_you_mean(key, known)}"


def _bad_value(path: Sequence[str | int], value: Any, allowed: Sequence[Any]) -> str:
    names = [str(v) for v in dict.fromkeys(allowed)]
    hint = _did_you_mean(str(value), names)
    if not hint:
        hint = f"; one of {', '.join(names)}"
    if set(names) <= set(platforms()):
        hint += " (conda-forge.yml spells platforms with an underscore: linux_64, osx_arm64)"
    return f"{_dotted(path)}: {value!r} is not a valid value{hint}"


def _did_you_mean(word: str, candidates: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    if not close:
        # "linux64" vs "linux_64": spelling a separator differently is the usual slip
        folded = {c.replace("_", "").replace("-", ""): c for c in candidates}
        key = word.replace("_", "").replace("-", "")
        close = [folded[key]] if key in folded else []
    return f"; did you mean {close[0]!r}?" if close else ""


def _dotted(path: Iterable[str | int]) -> str:
    return ".".join(str(part) for part in path)


def _line_of(text: str, problem: Problem) -> int | None:
    """The 1-based line of ``problem`` in ``text``, from ruamel.yaml's round-trip positions
    (read only when there is a problem to report)."""
    from ruamel.yaml import YAML

    try:
        node: Any = YAML(typ="rt", pure=True).load(text)
    except Exception:  # the safe loader took it; without positions the message has no line
        return None
    line = None
    for depth, part in enumerate(problem.path):
        lc = getattr(node, "lc", None)
        if lc is None:
            break
        try:
            last = depth == len(problem.path) - 1
            if isinstance(node, list):
                line, _ = lc.item(part)
            elif last and problem.at_key:
                line, _ = lc.key(part)
            else:
                line, _ = lc.value(part)
            node = node[part]
        except (KeyError, IndexError, TypeError):
            break
    return None if line is None else line + 1
