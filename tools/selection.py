"""One way to name a ``.ci_support`` config, shared by every command that takes one.

Config names are about 150 characters long, so nobody types them whole.  A user may
give the full name, the file name (``NAME.yaml``, also with its folder, as tab
completion writes it), a unique prefix of the name, or a glob.  Where a command
takes one config, a glob or prefix must match exactly one; where it takes several,
a glob takes every match.

The functions here are pure: they take the list of known names and return names
or raise :class:`ConfigSelectionError`.  Reading ``.ci_support/`` and accepting a
variant file outside it are the callers' business (``tools/render.py``,
``tools/localbuild/configs.py``).
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from collections.abc import Sequence
from pathlib import PurePath

from tools.errors import UserError

GLOB_CHARS = frozenset("*?[")
NO_CONFIGS_HINT = "run `python -m tools matrix --write` first"


class ConfigSelectionError(UserError):
    """A config name that names no config, or more than one where one is needed.

    ``matches`` holds every config the text matched (ambiguous), or the closest
    names (unknown), so callers and tests need not parse the message.
    """

    def __init__(self, message: str, matches: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.matches = tuple(matches)


def is_glob(text: str) -> bool:
    return any(char in GLOB_CHARS for char in text)


def normalize(text: str) -> str:
    """``.ci_support/NAME.yaml`` or ``NAME.yaml`` -> ``NAME``; anything else unchanged."""
    name = PurePath(text).name if ("/" in text or "\\" in text) else text
    for suffix in (".yaml", ".yml"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def apply_filter(names: Sequence[str], pattern: str | None) -> tuple[str, ...]:
    """conda-smithy's ``--filter``: a glob matched against ``NAME.yaml``."""
    if not pattern:
        return tuple(names)
    glob = pattern if pattern.endswith(".yaml") else f"{pattern}.yaml"
    return tuple(name for name in names if fnmatch.fnmatchcase(f"{name}.yaml", glob))


def closest(text: str, names: Sequence[str], count: int = 3) -> list[str]:
    """The ``count`` names most like ``text``, best first (always ``count`` when there are).

    People type the start of a name, so a name scores the better of its likeness to
    ``text`` as a whole and of its first ``len(text)`` characters; compared whole
    only, a short text would always be "closest" to the shortest names.
    """

    def score(name: str) -> float:
        matcher = difflib.SequenceMatcher(None, text, name)
        whole = matcher.ratio()
        matcher.set_seq2(name[: len(text)])
        return max(whole, matcher.ratio())

    return sorted(names, key=lambda name: (-score(name), name))[:count]


def _literal(pattern: str) -> str:
    """What a glob spells out: its text without wildcards and character classes
    (``osx_amr64*`` -> ``osx_amr64``), to find the names a misspelt glob meant."""
    return re.sub(r"\[[^\]]*\]|[*?]", "", pattern)


def _bullets(names: Sequence[str]) -> str:
    return "".join(f"\n  {name}" for name in names)


def _matches(text: str, names: Sequence[str]) -> list[str]:
    """Every name ``text`` stands for: itself, the names it globs, or the names it starts."""
    name = normalize(text)
    if is_glob(name):
        return [n for n in names if fnmatch.fnmatchcase(n, name)]
    if name in names:
        return [name]
    return [n for n in names if n.startswith(name)]


def _none_match(
    text: str, names: Sequence[str], available: Sequence[str], filter_glob: str | None
) -> ConfigSelectionError:
    name = normalize(text)
    if not available:
        return ConfigSelectionError(
            f"config {text!r}: .ci_support/ holds no configs; {NO_CONFIGS_HINT}"
        )
    if filter_glob and _matches(text, available):
        return ConfigSelectionError(f"config {text!r} is excluded by --filter {filter_glob!r}")
    near = closest(_literal(name), names)
    if is_glob(name):
        return ConfigSelectionError(
            f"pattern {text!r} matches none of the {len(names)} configs; "
            f"the closest are:{_bullets(near)}",
            near,
        )
    return ConfigSelectionError(
        f"no config named {text!r} in .ci_support/; the closest are:{_bullets(near)}", near
    )


def select_one(available: Sequence[str], text: str, *, filter_glob: str | None = None) -> str:
    """The one config ``text`` names (full name, NAME.yaml, unique prefix or glob)."""
    names = apply_filter(available, filter_glob)
    found = _matches(text, names)
    if not found:
        raise _none_match(text, names, available, filter_glob)
    if len(found) > 1:
        raise ConfigSelectionError(
            f"config {text!r} is ambiguous, it matches {len(found)} configs; "
            f"give more of the name:{_bullets(found)}",
            found,
        )
    return found[0]


def select_many(
    available: Sequence[str], texts: Sequence[str], *, filter_glob: str | None = None
) -> tuple[str, ...]:
    """The configs ``texts`` name, in the order given, each once.

    A glob takes every config it matches; any other text must name exactly one
    (a prefix of several is ambiguous, as in :func:`select_one`).  ``--filter``
    narrows the pool; with no texts, the filtered pool is the answer.
    """
    names = apply_filter(available, filter_glob)
    if not available:
        raise ConfigSelectionError(f".ci_support/ holds no configs; {NO_CONFIGS_HINT}")
    if not names:
        raise ConfigSelectionError(
            f"--filter {filter_glob!r} matches none of the {len(available)} configs"
        )
    if not texts:
        return names
    chosen: list[str] = []
    for text in texts:
        if is_glob(normalize(text)):
            found = _matches(text, names)
            if not found:
                raise _none_match(text, names, available, filter_glob)
        else:
            found = [select_one(available, text, filter_glob=filter_glob)]
        chosen.extend(name for name in found if name not in chosen)
    return tuple(chosen)
