"""Which ``.ci_support`` configs exist, and which of them the user asked for.

A config is named by its file's stem, exactly as conda-smithy names it, and
selected the way every command selects one (tools/selection.py).  Asking for a
name that does not exist is an error listing the closest names; we never fall
back to another config behind the user's back (conda-smithy's script does when
only one config is valid, which builds the wrong thing silently).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tools import selection
from tools.errors import UserError
from tools.files import yaml_error_message
from tools.selection import apply_filter

__all__ = ["Config", "apply_filter", "choose_interactively", "discover", "docker_image", "select"]


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


def select(
    available: Sequence[str],
    requested: Sequence[str],
    *,
    all_configs: bool = False,
    filter_glob: str | None = None,
) -> tuple[str, ...]:
    """The configs to build, in the order asked; ``()`` means "ask the user".

    ``requested`` holds names as every command takes them (tools/selection.py:
    full name, NAME.yaml, unique prefix, glob).  ``--filter`` narrows both
    ``--all`` and the interactive menu; a name it excludes is an error, not a
    silent skip.
    """
    pool = selection.select_many(available, (), filter_glob=filter_glob)
    if all_configs and requested:
        raise UserError("give config names or --all, not both")
    if all_configs:
        return pool
    if not requested:
        return ()
    return selection.select_many(available, requested, filter_glob=filter_glob)


def choose_interactively(
    pool: Sequence[str],
    ask: Callable[[str], str],
    say: Callable[[str], None],
) -> str:
    """conda-smithy's numbered menu; ``ask`` is ``input`` in real life."""
    say("Select a config to build:")
    for number, name in enumerate(pool, start=1):
        say(f"{number:3d}. {name}")
    try:
        answer = ask("\n> ").strip()
    except EOFError:
        raise UserError("no config selected") from None
    if answer in pool:
        return answer
    if answer.isdigit() and 1 <= int(answer) <= len(pool):
        return pool[int(answer) - 1]
    raise UserError(f"{answer!r} is not one of the numbers 1-{len(pool)}")


def docker_image(config_path: Path) -> str | None:
    """The first ``docker_image`` of a config, or None when it names none."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        text = config_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{config_path}: cannot read it ({exc})") from None
    try:
        data = YAML(typ="safe").load(text)
    except YAMLError as exc:
        raise UserError(yaml_error_message(str(config_path), exc, text)) from None
    if not isinstance(data, dict):
        raise UserError(f"{config_path}: not a mapping of variant keys; rerender the feedstock")
    value = data.get("docker_image")
    if isinstance(value, list):
        value = value[0] if value else None
    return str(value) if value else None
