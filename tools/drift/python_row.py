"""The row for Python itself: a wheel's ``Requires-Python`` against the Pythons the recipe
builds its torch-shipping output for (a Python outside the range wants a skip)."""

from __future__ import annotations

from collections.abc import Sequence

from tools.drift import compare
from tools.drift.model import RecipeConfig, RecipeGroup, Status, UpstreamClaim


def is_python(claim: UpstreamClaim) -> bool:
    return claim.package == "python"


def groups(configs: Sequence[RecipeConfig]) -> tuple[RecipeGroup, ...]:
    """One group per set of Pythons; its spec admits exactly those series (``3.11.*|3.12.*``)."""
    by_pythons: dict[tuple[str, ...], list[str]] = {}
    for config in configs:
        by_pythons.setdefault(config.python, []).append(config.name)
    return tuple(
        RecipeGroup(
            "|".join(f"{p}.*" for p in pythons) if pythons else None,
            bool(pythons),
            tuple(names),
            "" if len(by_pythons) == 1 else f"{len(names)} of {len(configs)} configs",
        )
        for pythons, names in sorted(by_pythons.items())
    )


def judge(claim: UpstreamClaim, configs: Sequence[RecipeConfig]) -> tuple[Status, str]:
    built = list(reversed(compare.newest({p for c in configs for p in c.python})))
    if not built:
        return Status.UNKNOWN, "no configuration builds the torch-shipping output"
    rejected = [p for p in built if not compare.admits(claim.spec, p)]
    if rejected:
        return (
            Status.LOOSER,
            f"the recipe builds for Python {', '.join(rejected)}, which upstream's "
            f"{claim.text} rejects: skip it in both recipes (`python -m tools bump` adds the skip)",
        )
    return Status.OK, f"upstream admits every Python the recipe builds ({', '.join(built)})"
