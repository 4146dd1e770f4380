"""Which ``.ci_support`` configs exist, and which of them the user asked for.

A config is named by its file's stem, exactly as conda-smithy names it, and
selected the way every command selects one (tools/foundation/selection.py).  Asking for a
name that does not exist is an error listing the closest names; we never fall
back to another config behind the user's back (conda-smithy's script does when
only one config is valid, which builds the wrong thing silently).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType

from tools.foundation import selection
from tools.foundation.errors import UserError
from tools.foundation.selection import apply_filter

__all__ = [
    "Config",
    "UnreadableConfig",
    "apply_filter",
    "choose_interactively",
    "discover",
    "docker_image",
    "labels",
    "read_variant",
    "select",
]


@dataclass(frozen=True)
class Config:
    name: str
    path: Path

    @property
    def os(self) -> str:
        """``linux``, ``osx`` or ``win``: the first word of a conda-smithy config name."""
        return self.name.split("_", 1)[0]


def ci_support_dir(root: Path) -> Path:
    return root / ".ci_support"


def discover(root: Path) -> tuple[str, ...]:
    """Sorted config names; migrations/ and other non-yaml files are not configs."""
    directory = ci_support_dir(root)
    if not directory.is_dir():
        return ()
    return tuple(sorted(p.stem for p in directory.glob("*.yaml") if p.is_file()))


def labels(root: Path, names: Sequence[str]) -> dict[str, str]:
    """name -> the short label people read and may type (tools/foundation/selection.py)."""
    return selection.read_labels(ci_support_dir(root), names)


def select(
    available: Sequence[str],
    requested: Sequence[str],
    *,
    all_configs: bool = False,
    filter_glob: str | None = None,
    label_of: Mapping[str, str] | None = None,
) -> tuple[str, ...]:
    """The configs to build, in the order asked; ``()`` means "ask the user".

    ``requested`` holds names as every command takes them (tools/foundation/selection.py:
    full name, NAME.yaml, unique prefix, glob).  ``--filter`` narrows both
    ``--all`` and the interactive menu; a name it excludes is an error, not a
    silent skip.
    """
    pool = selection.select_many(available, (), filter_glob=filter_glob, labels=label_of)
    if all_configs and requested:
        raise UserError("give config names or --all, not both")
    if all_configs:
        return pool
    if not requested:
        return ()
    return selection.select_many(available, requested, filter_glob=filter_glob, labels=label_of)


def choose_interactively(
    pool: Sequence[str],
    ask: Callable[[str], str],
    say: Callable[[str], None],
    marks: Mapping[str, str] | None = None,
    label_of: Mapping[str, str] | None = None,
) -> str:
    """conda-smithy's numbered menu (label, then name); ``ask`` is ``input`` in real life.
    ``marks`` says, per config this machine cannot build, why (shown after its name); the
    user may answer with a number, a name or a label."""
    say("Select a config to build:")
    lines = selection.describe(pool, label_of)
    for number, (name, line) in enumerate(zip(pool, lines, strict=True), start=1):
        mark = (marks or {}).get(name)
        say(f"{number:3d}. {line}" + (f"  [{mark}]" if mark else ""))
    try:
        answer = ask("\n> ").strip()
    except EOFError:
        raise UserError("no config selected") from None
    if answer in pool:
        return answer
    by_label = [n for n in pool if (label_of or {}).get(n) == " ".join(answer.split())]
    if by_label:
        return by_label[0]
    if answer.isdigit() and 1 <= int(answer) <= len(pool):
        return pool[int(answer) - 1]
    raise UserError(f"{answer!r} is not one of the numbers 1-{len(pool)}")


class UnreadableConfig(UserError):
    """A ``.ci_support`` file that cannot be read as a variant file: the config is lost from
    the build until it is rerendered, which is a failure, never "cannot build here"."""


def read_variant(config_path: Path) -> dict[str, object]:
    """A config's variant mapping, or :class:`UnreadableConfig` naming the file and line."""
    try:
        stat = config_path.stat()
    except OSError as exc:
        raise UnreadableConfig(f"{config_path}: cannot read it ({exc.strerror})") from None
    return dict(_load_variant(config_path, stat.st_mtime_ns, stat.st_size))


# Checking, planning and the menu each ask for the same few files, and the pure-Python YAML
# reader takes ~20 ms a file (the menu must appear within a second).  The key holds the
# file's mtime and size, so a file edited since is read again.
@lru_cache(maxsize=64)
def _load_variant(config_path: Path, mtime_ns: int, size: int) -> Mapping[str, object]:
    # The reader every command uses for a variant file (tools.recipe.variant_config), so a
    # damaged one reads the same here as in render, check or runners.
    from tools.foundation.files import read_user_file
    from tools.recipe.variant_config import RERENDER, parse_variant_file

    try:
        config_path.open("rb").close()
    except OSError as exc:
        raise UnreadableConfig(f"{config_path}: cannot read it ({exc.strerror})") from None
    try:
        text = read_user_file(config_path)
    except UserError as exc:  # not text: only a rerender can mend it
        raise UnreadableConfig(f"{exc}; {RERENDER}") from None
    try:
        return MappingProxyType(parse_variant_file(text, str(config_path)))
    except UserError as exc:
        raise UnreadableConfig(str(exc)) from None


def docker_image(config_path: Path) -> str | None:
    """The first ``docker_image`` of a config, or None when it names none."""
    value = read_variant(config_path).get("docker_image")
    if isinstance(value, list):
        value = value[0] if value else None
    return str(value) if value else None
