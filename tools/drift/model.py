"""Records shared by the drift modules."""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


class Kind(str, enum.Enum):
    """What an upstream version means."""

    REQUIREMENT = "requirement"  # a range upstream declares (Requires-Dist, requirements files)
    TESTED = "tested"  # the one version upstream vendors or builds its binaries with


class Scope(str, enum.Enum):
    """Which recipe requirements an upstream claim is compared with."""

    RUN = "run"  # the run requirements of the output that ships the torch package
    HOST = "host"  # build and host requirements of every output


class Status(str, enum.Enum):
    OK = "ok"
    LOOSER = "looser"  # the recipe admits versions upstream rejects (or leaves the package out)
    STRICTER = "stricter"  # the recipe admits only versions upstream admits, but not all of them
    CONFLICT = "conflict"  # no version satisfies both
    DIFFERS = "differs"  # the recipe does not admit the version upstream tests with
    UNKNOWN = "unknown"


# Worst first: a row over several configurations shows the worst status any of them has.
SEVERITY = (
    Status.CONFLICT,
    Status.LOOSER,
    Status.STRICTER,
    Status.DIFFERS,
    Status.OK,
    Status.UNKNOWN,
)


def _frozen(mapping: Mapping[str, str] | None) -> Mapping[str, str]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class Condition:
    """Where an upstream claim applies: variant patterns and/or a PEP 508 marker.

    ``variant`` maps a variant key to a regular expression matched against the start of the
    configuration's value up to a dot boundary, so ``13`` matches ``13.0`` and ``12.[5-9]``
    matches ``12.9``.  ``marker`` is evaluated per configuration (platform, Python).
    """

    variant: Mapping[str, str] = field(default_factory=dict)
    marker: str | None = None
    label: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "variant", _frozen(self.variant))

    def key(self) -> tuple:
        return (tuple(sorted(self.variant.items())), self.marker or "")

    def matches_variant(self, variant: Mapping[str, str]) -> bool:
        for name, pattern in self.variant.items():
            value = str(variant.get(name, "None"))
            if not re.match(rf"(?:{pattern})(?:\.|$)", value):
                return False
        return True


ANYWHERE = Condition()


@dataclass(frozen=True)
class UpstreamClaim:
    """One thing upstream says about one package.

    ``spec`` is a conda version spec (``None``: any version); ``text`` is what upstream wrote.
    ``priority``: lower wins when several sources speak about the same package and scope.
    """

    package: str  # the upstream name (PyPI name or library name); ``names`` maps it to conda
    spec: str | None
    text: str
    kind: Kind
    scope: Scope
    source: str
    condition: Condition = ANYWHERE
    extra: str | None = None
    priority: int = 50
    development: bool = False  # a developer's requirement list: shown only if the recipe uses it


@dataclass(frozen=True)
class RecipeSpec:
    """One requirement of one rendered output in one configuration."""

    name: str
    spec: str | None  # conda version spec; ``None``: any version
    text: str  # the requirement as rendered
    output: str
    section: str  # build, host, run, run_constrained
    config: str
    subdir: str
    variant: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "variant", _frozen(self.variant))


@dataclass(frozen=True)
class RecipeConfig:
    """One rendered configuration: its name, platform and variant (for markers and conditions)."""

    name: str
    subdir: str
    variant: Mapping[str, str] = field(default_factory=dict)
    python: tuple[str, ...] = ()  # the Python versions its torch-shipping outputs build for

    def __post_init__(self) -> None:
        object.__setattr__(self, "variant", _frozen(self.variant))


@dataclass(frozen=True)
class ChannelPackage:
    name: str
    versions: tuple[str, ...]  # every version seen, newest first
    source: str

    @property
    def latest(self) -> str | None:
        return self.versions[0] if self.versions else None


@dataclass(frozen=True)
class RecipeGroup:
    """Configurations that apply the same spec to a package."""

    spec: str | None  # ``None`` with ``present`` True: any version
    present: bool
    configs: tuple[str, ...]
    label: str = ""  # the variant values that set these configurations apart, if any
    texts: tuple[str, ...] = ()  # the requirements as rendered
    where: tuple[str, ...] = ()  # "output section" entries naming the package with this spec
    # Only run_constrained names it: the recipe limits its version when something else
    # installs it, but does not install it.
    constrained: bool = False


@dataclass(frozen=True)
class DriftRow:
    package: str  # conda name
    upstream: UpstreamClaim
    recipe: tuple[RecipeGroup, ...]
    conda_forge: ChannelPackage | None
    status: Status
    reason: str
