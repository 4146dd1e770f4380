"""Is the upstream wheel the version the recipe builds, and did the recipe's source.sha256
change when its version did?

Both are pure over what the pipeline read: the wheels' METADATA versions, the rendered
outputs' versions, and the recipe's version and sha256 now and at git HEAD.  A wheel of
another version makes every row compare the recipe with the wrong release; a version bump
that keeps the old sha256 downloads a tarball that fails its checksum (or, worse, one that
was replaced).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from tools.drift import compare


def _public(version: str) -> str:
    """A wheel's version without its local label (``2.13.0+cpu`` -> ``2.13.0``)."""
    return version.partition("+")[0]


def wheel_mismatches(
    wheels: Sequence[tuple[Path, str]], recipe_versions: Iterable[str], output: str
) -> list[str]:
    """One line per wheel whose version is not the one the recipe's ``output`` builds."""
    versions = sorted(set(recipe_versions))
    if not versions:
        return []
    problems = []
    for path, version in wheels:
        wheel = _public(version)
        if any(compare.same_version(wheel, v) for v in versions):
            continue
        problems.append(
            f"version mismatch: {path.name} is {wheel}, the recipe builds {output} "
            f"{' and '.join(versions)}; every row compares the recipe with another release "
            f"(pass the wheel of {versions[0]})"
        )
    return problems


def stale_sha256(
    now_version: str,
    now_sha256: Sequence[str],
    head_version: str,
    head_sha256: Sequence[str],
    where: str,
) -> list[str]:
    """The version changed since HEAD but a source's sha256 did not."""
    if not now_version or not head_version or compare.same_version(now_version, head_version):
        return []
    kept = sorted(set(now_sha256) & set(head_sha256))
    return [
        f"{where}: the version changed from {head_version} to {now_version} (git HEAD to now) "
        f"but source sha256 {sha[:12]}... did not; put the sha256 of the {now_version} "
        "source archive"
        for sha in kept
    ]
