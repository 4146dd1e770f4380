"""How two conda version specs relate, with py-rattler's conda version semantics.

Method: a version spec is a boolean formula of comparisons against literal versions (``>=1.2``,
``!=1.3``, ``1.4.*``, ``~=1.5``).  Its truth can only change at those literals and at the
boundaries they imply (the next release of a prefix match or a compatible-release range).  So
both specs are evaluated over a finite candidate set: every literal in either spec, each
literal's predecessor and bumps (``1.4`` -> ``1.3``, ``1.5``, ``2.0``, ``1.4.1``), the
channel's versions, and between every two neighbours a version rattler confirms lies strictly
between them (``a.0.0.1``, ``apost1``, ``bdev0``), plus one below and one above everything.
Two specs are equivalent when they agree on every candidate; otherwise the candidates on which
they disagree are the witnesses shown in the reason (a channel version when there is one).
The set is exact for specs built from these operators, up to an interval too narrow for every
probe (say between ``1.2`` and ``1.2.0.0.0.1``), which no real pin produces.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rattler import Version, VersionSpec

from tools.foundation.errors import UserError

# A version literal inside a spec: after an operator, a separator or the start.
_LITERAL = re.compile(r"(?:^|[=<>!~,|(\s])\s*(?P<v>[0-9][0-9A-Za-z._+!]*)")


@dataclass(frozen=True)
class Relation:
    """The relation of a recipe spec to an upstream spec over the candidate versions."""

    both: tuple[str, ...]  # admitted by both
    recipe_only: tuple[str, ...]  # admitted by the recipe, rejected upstream
    upstream_only: tuple[str, ...]  # admitted upstream, rejected by the recipe

    @property
    def equivalent(self) -> bool:
        return not self.recipe_only and not self.upstream_only

    @property
    def disjoint(self) -> bool:
        return not self.both


@functools.lru_cache(maxsize=4096)
def version_spec(spec: str | None) -> VersionSpec:
    try:
        return VersionSpec(spec or "*")
    except Exception as exc:
        raise UserError(f"invalid conda version spec {spec!r}: {exc}") from None


@functools.lru_cache(maxsize=8192)
def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except Exception:
        return None


def literals(spec: str | None) -> tuple[str, ...]:
    """The version literals a spec mentions, without ``.*`` / ``*`` suffixes."""
    if not spec:
        return ()
    found = []
    for match in _LITERAL.finditer(spec):
        text = match["v"].rstrip("*").rstrip(".")
        if text and _version(text) is not None:
            found.append(text)
    return tuple(dict.fromkeys(found))


def _predecessor(text: str) -> str | None:
    """A plain release just below ``text`` (``4.10.0`` -> ``4.9.0``), a readable witness."""
    parts = text.split(".")
    if not all(part.isdigit() for part in parts):
        return None
    for index in range(len(parts) - 1, -1, -1):
        if int(parts[index]) > 0:
            parts[index] = str(int(parts[index]) - 1)
            return ".".join(parts)
    return None


def _neighbours(text: str) -> list[str]:
    version = _version(text)
    if version is None:
        return []
    out = [text]
    before = _predecessor(text)
    if before is not None:
        out.append(before)
    for bump in (version.bump_last, version.bump_major, version.bump_minor, version.bump_patch):
        try:
            out.append(str(bump()))
        except Exception:  # a version too short for that segment
            continue
    return out


def _between(low: Version, high: Version, low_text: str, high_text: str) -> str | None:
    base_low = low_text.split("+", 1)[0]
    base_high = high_text.split("+", 1)[0]
    for probe in (f"{base_low}.0.0.1", f"{base_low}post1", f"{base_high}dev0", f"{base_high}.dev0"):
        candidate = _version(probe)
        if candidate is not None and low < candidate < high:
            return probe
    return None


def candidates(specs: Iterable[str | None], extra_versions: Iterable[str] = ()) -> tuple[str, ...]:
    """The candidate versions (as strings, ascending) on which ``specs`` are compared."""
    texts: list[str] = []
    for spec in specs:
        for literal in literals(spec):
            texts.extend(_neighbours(literal))
    texts.extend(v for v in extra_versions if _version(v) is not None)
    unique: dict[Version, str] = {}
    for text in texts:
        version = _version(text)
        if version is not None and version not in unique:
            unique[version] = text
    ordered = sorted(unique.items(), key=lambda item: item[0])
    if not ordered:
        return ("0", "1", "2")
    lowest = ordered[0][0]
    points = [
        p for p in ("0", ordered[0][1] + "dev0") if _version(p) is not None and _version(p) < lowest
    ]
    for (low, low_text), (high, high_text) in itertools.pairwise(ordered):
        points.append(low_text)
        middle = _between(low, high, low_text, high_text)
        if middle is not None:
            points.append(middle)
    last_version, last_text = ordered[-1]
    points.append(last_text)
    points.append(str(last_version.bump_major()) + ".1")
    return tuple(points)


def _is_prerelease(text: str) -> bool:
    return bool(re.search(r"[a-z]", text.lower().replace("post", "")))


def relate(
    upstream: str | None, recipe: str | None, extra_versions: Sequence[str] = ()
) -> Relation:
    """Compare over the candidate set.

    Pre-release probes this module made up (``1.2dev0``) only stand for "just below 1.2"; a
    disagreement on nothing but such probes is conda's and PyPI's different treatment of
    pre-releases (``1.2.*`` admits ``1.2dev0``, ``>=1.2`` does not), not drift, and is ignored.
    Pre-releases either spec names, or the channel carries, always count.
    """
    up, rec = version_spec(upstream), version_spec(recipe)
    real = {
        str(_version(v))
        for v in (*literals(upstream), *literals(recipe), *extra_versions)
        if _version(v)
    }
    both, recipe_only, upstream_only = [], [], []
    for text in candidates((upstream, recipe), extra_versions):
        version = _version(text)
        in_up, in_rec = up.matches(version), rec.matches(version)
        if in_up and in_rec:
            both.append(text)
        elif in_up == in_rec or (_is_prerelease(text) and str(version) not in real):
            continue
        elif in_rec:
            recipe_only.append(text)
        else:
            upstream_only.append(text)
    return Relation(tuple(both), tuple(recipe_only), tuple(upstream_only))


def admits(spec: str | None, version: str) -> bool:
    parsed = _version(version)
    if parsed is None:
        raise UserError(f"invalid conda version {version!r}")
    return version_spec(spec).matches(parsed)


def same_version(left: str, right: str) -> bool:
    """Equal in conda's version order (``2.13`` is ``2.13.0``); text equality when either
    is not a version."""
    a, b = _version(left), _version(right)
    return left == right if a is None or b is None else a == b


def newer(left: str, right: str) -> bool:
    """``left`` sorts after ``right`` in conda's version order."""
    a, b = _version(left), _version(right)
    if a is None or b is None:
        raise UserError(f"invalid conda version {left if a is None else right!r}")
    return a > b


def newest(versions: Iterable[str]) -> tuple[str, ...]:
    """Valid versions, newest first, duplicates (by conda equality) dropped."""
    unique: dict[Version, str] = {}
    for text in versions:
        version = _version(text)
        if version is not None and version not in unique:
            unique[version] = text
    return tuple(text for _, text in sorted(unique.items(), key=lambda item: item[0], reverse=True))


_PROBE = re.compile(r"\.0\.0\.1$|dev0$|post1$")


def pick_witness(
    versions: Sequence[str], near: Sequence[str] = (), real: Iterable[str] = ()
) -> str:
    """The witness to show a human: a real (channel) version if there is one, else a plain
    version, else a probe; among equals the one closest to ``near`` (the versions both admit)."""
    real_set = {str(_version(v)) for v in real if _version(v) is not None}

    def rank(text: str) -> tuple[int, int]:
        return (str(_version(text)) not in real_set, bool(_PROBE.search(text)) or text == "0")

    best = min(rank(t) for t in versions)
    pool = sorted((t for t in versions if rank(t) == best), key=lambda t: _version(t))
    if near and _version(pool[-1]) < min(_version(t) for t in near):
        return pool[-1]
    return pool[0]
