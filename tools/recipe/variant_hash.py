"""Which variant keys a package's hash covers, and the hash: conda-build's ``get_hash_contents``,
its loop variables and its reduced variant set (one value for every key nobody uses)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from tools.recipe.variant_config import ensure_list, explode, squish, zip_groups

HASH_LENGTH = 7
# Keys that never split variants (conda-build's get_vars special keys).
SPECIAL_KEYS = frozenset({"pin_run_as_build", "zip_keys", "ignore_version", "extend_keys"})


def hash_input(
    variant: Mapping[str, Any],
    used: set[str] | frozenset[str],
    run: Sequence[str],
    *,
    numpy_excluded: bool = False,
) -> dict[str, str]:
    """conda-build's ``get_hash_contents``: the used keys whose values the hash covers."""
    excludes = ["python", "r_base", "perl", "lua", *ensure_list(variant.get("ignore_version"))]
    if numpy_excluded:
        excludes.append("numpy")
    pattern = re.compile("|".join(rf"{e}[\s$]?.*" for e in excludes))
    deps = [
        k for k in sorted(used) if k in variant and (not pattern.match(k) or " " in str(variant[k]))
    ]
    contents = {} if deps == ["target_platform"] else {k: variant[k] for k in deps}
    for req in run:
        if req.startswith("__"):
            contents[req.split(" ")[0]] = req
    return contents


def hash_of(contents: Mapping[str, Any]) -> str:
    if not contents:
        return ""
    digest = hashlib.sha1(json.dumps(contents, sort_keys=True).encode()).hexdigest()
    return f"h{digest}"[: HASH_LENGTH + 1]


def get_loop_vars(
    variants: Sequence[Mapping[str, Any]], subset: set[str] | None = None
) -> set[str]:
    first, *others = variants
    consider = set(first)
    if subset is not None:
        consider &= subset
    consider -= SPECIAL_KEYS | set(ensure_list(first.get("extend_keys")))
    return {k for k in consider if any(first.get(k) != o.get(k) for o in others)}


def reduce_variants(variants: Sequence[Mapping[str, Any]], used: set[str]) -> list[dict[str, Any]]:
    """conda-build's ``get_reduced_variant_set``: one value for every key nobody uses."""
    squished = squish(variants)
    groups = zip_groups(variants[0].get("zip_keys"))
    used_groups = [g for g in groups if set(g) & used]
    extend = set(ensure_list(squished.get("extend_keys")))
    for key in set(variants[0]) - used:
        if any(key in g for g in used_groups) or key in extend or key == "zip_keys":
            continue
        values = squished.get(key)
        if isinstance(values, list) and values:
            squished[key] = [values[0]]
    return explode(squished)


def filter_variants(variants: list[dict[str, Any]], key: str, value: Any) -> list[dict[str, Any]]:
    return [v for v in variants if v.get(key) is not None and v.get(key) == value]
