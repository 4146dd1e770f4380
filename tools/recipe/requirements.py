"""Requirements as conda-build reads them: a bare list means host and run, a bare name that is a
variant key takes the key's value as its pin, and ``pin_compatible``'s pin arithmetic."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tools.recipe import jinja
from tools.recipe.variant_config import ensure_list


def as_str_list(value: Any) -> list[str]:
    return [str(v) for v in ensure_list(value) if v is not None and str(v) != ""]


def expand_requirements(entry: Any) -> dict[str, list[str]]:
    """conda-build's ``expand_reqs``: a bare list means host and run."""
    if entry is None:
        return {}
    if not isinstance(entry, Mapping):
        values = as_str_list(entry)
        return {"host": list(values), "run": list(values)} if values else {}
    return {str(k): as_str_list(v) for k, v in entry.items()}


_BARE_RE = re.compile(r"^(\S+)\s*$")
_XX_RE = re.compile(r"([0-9a-zA-Z\.\-\_]+)\s+x\.x")


def insert_variant_versions(
    reqs: dict[str, list[str]], variant: Mapping[str, Any], env: str
) -> None:
    """A bare requirement named like a variant key receives the key's value as its pin.

    (conda-build matches ``^key$`` with ``_`` standing for ``-`` or ``_``; a bare name
    normalised to underscores is the same test.)
    """
    build_deps = list(reqs.get("build", [])) + list(reqs.get("host", []))
    items = list(reqs.get(env, []))
    if not items:
        return
    for index, item in enumerate(items):
        match = _BARE_RE.match(item)
        if not match:
            continue
        name = match.group(1)
        key = name.replace("-", "_")
        if key in variant and (env in ("build", "host") or name in build_deps):
            value = variant[key]
            pin = value if isinstance(value, str) else value[0]
            items[index] = jinja.ensure_valid_spec(f"{name} {pin}")
    for index, item in enumerate(items):
        match = _XX_RE.match(item)
        if match and variant.get(match.group(1)):
            items[index] = jinja.ensure_valid_spec(f"{match.group(1)} {variant[match.group(1)]}")
    reqs[env] = items


def _increment(part: str, alpha: bool) -> str:
    try:
        return str(int(part) + 1) + ("a" if alpha else ".0a0")
    except ValueError:
        return chr(ord(part[0]) + 1)


def apply_pin_expressions(
    version: str, min_pin: str | None = "x.x.x.x.x.x", max_pin: str | None = "x"
) -> str:
    """conda-build's pin arithmetic for dotted numeric versions.

    ``2.13.0`` with ``max_pin="x.x"`` -> ``>=2.13.0,<2.14.0a0``.
    """
    parts = version.replace("_", ".").split(".")
    bounds = ["", ""]
    for index, pin in enumerate((min_pin, max_pin)):
        if not pin:
            continue
        places = len(pin.split("."))
        if index == 1:
            places = min(places, len(parts))
        chosen = parts[:places]
        if index == 1:
            alpha = parts[min(places, len(parts) - 1)].isalpha()
            chosen = [*chosen[:-1], _increment(chosen[-1], alpha)]
        bounds[index] = ".".join(chosen)
    lower, upper = bounds
    out = []
    if lower:
        out.append(">=" + lower)
    if upper:
        out.append("<" + upper)
    return ",".join(out)
