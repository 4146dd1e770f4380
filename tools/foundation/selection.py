"""One way to name a ``.ci_support`` config, shared by every command that takes one.

Config names are about 150 characters long, so nobody types them whole.  A user may
give the full name, the file name (``NAME.yaml``, also with its folder, as tab
completion writes it), a unique prefix of the name, or a glob.  Where a command
takes one config, a glob or prefix must match exactly one; where it takes several,
a glob takes every match.

Each config also has a short *label* derived from its variant, such as
``linux-64 cuda13.0 mkl`` (:func:`make_labels`): the target platform, ``cuda<version>`` or
``cpu``, and the BLAS implementation.  Where those words leave two configs alike (they
differ only in compiler, C library, channel or anything else), each of them gets the
words that tell them apart, e.g. ``linux-64 cpu mkl gcc14`` and ``linux-64 cpu mkl
gcc15``: labels are unique over the configs given, and the first three words never
change meaning.  Every selector below accepts a label (whole, as a prefix, or matched by
a glob) where it accepts a name; the long name stays the
key in every file, because conda-smithy decides it.

The selection functions are pure: they take the known names (and their labels) and
return names or raise :class:`ConfigSelectionError`.  :func:`read_labels` is the one
reader here (the variant files of ``.ci_support/``); listing that folder and accepting
a variant file outside it are the callers' business (``tools/render/config.py``,
``tools/localbuild/records/configs.py``).
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePath

from tools.foundation.errors import UserError

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


# -- labels ---------------------------------------------------------------------------------

# Words that tell configs apart when platform, CUDA and BLAS do not, most telling first.
_TIEBREAK_KEYS = ("c_compiler_version", "c_stdlib_version", "channel_targets", "is_rc", "python")
# Not variant values a person picks: bookkeeping a rerender writes into every config.
_NOT_VARIANT = frozenset({"zip_keys", "pin_run_as_build", "extend_keys", "ignore_version"})
_STDLIB_WORD = {"sysroot": "glibc", "macosx_deployment_target": "macos", "vs": "vs"}


def _value(variant: Mapping[str, object], key: str) -> str | None:
    value = variant.get(key)
    if isinstance(value, list):
        value = ",".join(str(v) for v in value) if value else None
    return None if value is None else str(value)


def _platform(name: str, variant: Mapping[str, object]) -> str:
    """``target_platform``, else the subdir a conda-smithy name starts with."""
    found = _value(variant, "target_platform")
    if found:
        return found
    os_name, _, rest = name.partition("_")
    return f"{os_name}-{rest.split('_', 1)[0]}" if rest else os_name


def _base_label(name: str, variant: Mapping[str, object]) -> str:
    cuda = _value(variant, "cuda_compiler_version")
    words = [_platform(name, variant), "cpu" if cuda in (None, "None") else f"cuda{cuda}"]
    blas = _value(variant, "blas_impl")
    if blas:
        words.append(blas)
    return " ".join(words)


def _word(variant: Mapping[str, object], key: str) -> str:
    """One config's value of ``key`` as a label word (no spaces, no slashes)."""
    value = _value(variant, key)
    if key == "c_compiler_version" and value is not None:
        word = f"{_value(variant, 'c_compiler') or 'cc'}{value}"
    elif key == "c_stdlib_version" and value is not None:
        stdlib = _value(variant, "c_stdlib") or "stdlib"
        word = f"{_STDLIB_WORD.get(stdlib, stdlib)}{value}"
    elif key == "is_rc":
        word = "rc" if value == "True" else "final"
    elif key == "channel_targets" and value is not None:
        word = value
    elif key == "python" and value is not None:
        word = "py" + ",".join(v.split(" ")[0].removesuffix(".*") for v in value.split(","))
    else:
        word = f"{key}={value if value is not None else '-'}"
    return "_".join(word.replace("/", "_").split())


def _tiebreak_keys(variants: Sequence[Mapping[str, object]]) -> list[str]:
    keys = set().union(*(v.keys() for v in variants)) - _NOT_VARIANT
    rest = sorted(k for k in keys if k not in _TIEBREAK_KEYS and k != "docker_image")
    # docker_image follows the C library; it is the longest word, so it comes last.
    return [*(k for k in _TIEBREAK_KEYS if k in keys), *rest, "docker_image"]


def make_labels(variants: Mapping[str, Mapping[str, object]]) -> dict[str, str]:
    """Config name -> short label, unique over ``variants`` (name -> the config's variant).

    A group of configs with one label gets, key by key (compiler, C library, channel,
    release candidate, Python, then the other keys by name), the word of every key
    whose value differs inside the group, until each label is its own.  An empty
    variant (a file that could not be read) keeps its long name as its label.
    """
    labels = {
        name: _base_label(name, variant) if variant else name for name, variant in variants.items()
    }
    groups: dict[str, list[str]] = {}
    for name, label in labels.items():
        groups.setdefault(label, []).append(name)
    for group in groups.values():
        if len(group) < 2:
            continue
        members = [variants[n] for n in group]
        for key in _tiebreak_keys(members):
            if len({labels[n] for n in group}) == len(group):
                break
            if len({_value(v, key) for v in members}) > 1:
                for name in group:
                    labels[name] += f" {_word(variants[name], key)}"
        if len({labels[n] for n in group}) < len(group):  # alike in every key: the names differ
            for name in group:
                labels[name] = name
    return labels


def read_labels(folder: Path, names: Sequence[str]) -> dict[str, str]:
    """Labels of the configs ``names`` in ``folder`` (``.ci_support``), from their variant files.

    A file that cannot be read keeps its long name as its label: the label is for people,
    and the command that needs the file reports what is wrong with it. The files are read as
    the render reads them (tools/recipe/variant_config.py): PyYAML's BaseLoader in C, every
    value a string; ruamel.yaml's pure-Python safe loader took 0.07 s for this feedstock's 15
    files, at every start of build-locally.py and of the review commands (issue 59).
    """
    import yaml

    loader = getattr(yaml, "CBaseLoader", yaml.BaseLoader)
    variants: dict[str, Mapping[str, object]] = {}
    for name in names:
        try:
            data = yaml.load((folder / f"{name}.yaml").read_text(encoding="utf-8"), loader)
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            data = None
        variants[name] = data if isinstance(data, dict) else {}
    return make_labels(variants)


def describe(names: Sequence[str], labels: Mapping[str, str] | None) -> list[str]:
    """``label  name`` per config, labels padded to one column (just the names without labels)."""
    if not labels:
        return list(names)
    width = max((len(labels[n]) for n in names if labels.get(n, n) != n), default=0)
    return [
        name if labels.get(name, name) == name else f"{labels[name]:<{width}}  {name}"
        for name in names
    ]


def _spaced(text: str) -> str:
    return " ".join(text.split())


def apply_filter(
    names: Sequence[str], pattern: str | None, labels: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """conda-smithy's ``--filter``: a glob matched against ``NAME.yaml``, or against the label."""
    if not pattern:
        return tuple(names)
    glob = pattern if pattern.endswith(".yaml") else f"{pattern}.yaml"
    label_of = labels or {}
    return tuple(
        name
        for name in names
        if fnmatch.fnmatchcase(f"{name}.yaml", glob)
        or (name in label_of and fnmatch.fnmatchcase(label_of[name], _spaced(pattern)))
    )


def closest(
    text: str, names: Sequence[str], count: int = 3, labels: Mapping[str, str] | None = None
) -> list[str]:
    """The ``count`` names most like ``text``, best first (always ``count`` when there are).

    People type the start of a name, so a name scores the better of its likeness to
    ``text`` as a whole and of its first ``len(text)`` characters; compared whole
    only, a short text would always be "closest" to the shortest names.
    """

    def likeness(candidate: str) -> float:
        matcher = difflib.SequenceMatcher(None, text, candidate)
        whole = matcher.ratio()
        matcher.set_seq2(candidate[: len(text)])
        return max(whole, matcher.ratio())

    def score(name: str) -> float:
        label = (labels or {}).get(name)
        return max(likeness(name), likeness(label)) if label else likeness(name)

    return sorted(names, key=lambda name: (-score(name), name))[:count]


def _literal(pattern: str) -> str:
    """What a glob spells out: its text without wildcards and character classes
    (``osx_amr64*`` -> ``osx_amr64``), to find the names a misspelt glob meant."""
    return re.sub(r"\[[^\]]*\]|[*?]", "", pattern)


def _bullets(names: Sequence[str], labels: Mapping[str, str] | None = None) -> str:
    return "".join(f"\n  {line}" for line in describe(names, labels))


def _matches(text: str, names: Sequence[str], labels: Mapping[str, str] | None = None) -> list[str]:
    """Every config ``text`` stands for: the name or label it is, the configs it globs, or the
    configs whose name or label it starts."""
    name = normalize(text)
    label_of = labels or {}
    spaced = _spaced(text)
    if is_glob(name):
        return [
            n
            for n in names
            if fnmatch.fnmatchcase(n, name)
            or (n in label_of and fnmatch.fnmatchcase(label_of[n], spaced))
        ]
    if name in names:
        return [name]
    exact = [n for n in names if label_of.get(n) == spaced]
    if exact:
        return exact
    return [
        n
        for n in names
        if n.startswith(name) or (spaced and label_of.get(n, "").startswith(spaced))
    ]


def _none_match(
    text: str,
    names: Sequence[str],
    available: Sequence[str],
    filter_glob: str | None,
    labels: Mapping[str, str] | None,
) -> ConfigSelectionError:
    name = normalize(text)
    if not available:
        return ConfigSelectionError(
            f"config {text!r}: .ci_support/ holds no configs; {NO_CONFIGS_HINT}"
        )
    if filter_glob and _matches(text, available, labels):
        return ConfigSelectionError(f"config {text!r} is excluded by --filter {filter_glob!r}")
    near = closest(_literal(name), names, labels=labels)
    if is_glob(name):
        return ConfigSelectionError(
            f"pattern {text!r} matches none of the {len(names)} configs; "
            f"the closest are:{_bullets(near, labels)}",
            near,
        )
    return ConfigSelectionError(
        f"no config named {text!r} in .ci_support/; the closest are:{_bullets(near, labels)}",
        near,
    )


def select_one(
    available: Sequence[str],
    text: str,
    *,
    filter_glob: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> str:
    """The one config ``text`` names (full name, NAME.yaml, label, unique prefix or glob)."""
    names = apply_filter(available, filter_glob, labels)
    found = _matches(text, names, labels)
    if not found:
        raise _none_match(text, names, available, filter_glob, labels)
    if len(found) > 1:
        raise ConfigSelectionError(
            f"config {text!r} is ambiguous, it matches {len(found)} configs; "
            f"give more of the name:{_bullets(found, labels)}",
            found,
        )
    return found[0]


def select_many(
    available: Sequence[str],
    texts: Sequence[str],
    *,
    filter_glob: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> tuple[str, ...]:
    """The configs ``texts`` name, in the order given, each once.

    A glob takes every config it matches; any other text must name exactly one
    (a prefix of several is ambiguous, as in :func:`select_one`).  ``--filter``
    narrows the pool; with no texts, the filtered pool is the answer.
    """
    names = apply_filter(available, filter_glob, labels)
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
            found = _matches(text, names, labels)
            if not found:
                raise _none_match(text, names, available, filter_glob, labels)
        else:
            found = [select_one(available, text, filter_glob=filter_glob, labels=labels)]
        chosen.extend(name for name in found if name not in chosen)
    return tuple(chosen)
