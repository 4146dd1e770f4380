"""Keys a feedstock sets in recipe/conda_build_config.yaml that its CI jobs do not get.

A fork that wants one Python writes ``python: [3.13.* *_cp313]`` in its recipe cbc and
expects one Python; conda-smithy (and ``matrix``) silently build every Python: the pinning
zips ``python`` with ``is_python_min``, and a zipped key takes a new list only with its whole
group, and a ``key_add`` migration (python314) adds its Python after the recipe's list.  This
module says which, so ``matrix`` can warn instead of writing the jobs without a word.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.recipe.variant_config import ensure_list, zip_groups

# Keys that are not one list of values a job picks from.
_STRUCTURE = {"zip_keys", "extend_keys", "pin_run_as_build", "replacements", "migrator_ts"}


@dataclass(frozen=True)
class Override:
    key: str
    wanted: tuple[str, ...]  # what the recipe cbc sets
    built: tuple[str, ...]  # what the jobs get
    why: str  # and what to do


def _words(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in ensure_list(value))


def overrides(
    recipe_spec: Mapping[str, Any],
    combined: Mapping[str, Any],
    migrations: Sequence[tuple[str, Mapping[str, Any]]],
    migrated: Mapping[str, Any],
) -> list[Override]:
    """Each key of ``recipe_spec`` (one platform's recipe cbc) whose list differs in
    ``migrated`` (what the jobs are made of), with the reason: a zipped partner the recipe
    cbc does not set, or the migrations that change it."""
    found = []
    reported: set[tuple[str, ...]] = set()  # zip groups: one warning for a group
    for key, value in recipe_spec.items():
        if key in _STRUCTURE or isinstance(value, Mapping) or key not in migrated:
            continue
        wanted, built = _words(value), _words(migrated[key])
        group = next((g for g in zip_groups(combined.get("zip_keys")) if key in g), (key,))
        if wanted == built or group in reported:
            continue
        changing = [Path(n).name for n, m in migrations if key in m]
        before = _words(combined.get(key))  # the list the migrations start from
        added = [v for v in built if v not in before]
        by_migration = (
            f"the migration{'s' if len(changing) > 1 else ''} "
            + ", ".join(f".ci_support/migrations/{n}" for n in changing)
            + f" add{'' if len(changing) > 1 else 's'} {', '.join(added) or 'values'} after "
            f"the recipe's list: delete {'those files' if len(changing) > 1 else 'that file'} "
            f"to build without {'it' if len(added) == 1 else 'them'}"
            if changing and added
            else ""
        )
        if before != wanted:
            partners = [k for k in group if k != key and k not in recipe_spec]
            if not partners:
                continue  # another rule of conda-build's; not one this module can explain
            why = (
                f"the pinning zips it with {', '.join(partners)}, and a zipped key takes a new "
                f"list only with its whole group: set {', '.join(partners)} there too, one "
                f"entry per {key} entry" + (f"; and {by_migration}" if by_migration else "")
            )
        elif by_migration:
            why = by_migration
        else:
            continue
        reported.add(group)
        found.append(Override(key, wanted, built, why))
    return found


def messages(
    cbc_path: Path, text: str, found: Mapping[str, tuple[Override, list[str]]]
) -> list[str]:
    """One warning per key: the cbc line, what was set, what the jobs get (on which
    platforms), and why."""
    lines = []
    for key, (override, platforms) in found.items():
        match = re.search(rf"^{re.escape(key)}\s*:", text, flags=re.M)
        where = (
            f"{cbc_path}:{text.count(chr(10), 0, match.start()) + 1}" if match else str(cbc_path)
        )
        lines.append(
            f"{where}: {key} is set to {list(override.wanted)}, but the CI jobs get "
            f"{list(override.built)} ({', '.join(platforms)}): {override.why}"
        )
    return lines
