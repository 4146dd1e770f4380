"""The record every command consumes: one package a CI job produces, whichever engine rendered it.

``tools.render.config`` fills it from the toolkit's own render of meta.yaml (conda-build's
semantics), ``tools.render.v1`` from rattler-build's render of a v1 recipe.yaml; ``render``,
``explain``, ``check --config`` and ``drift`` read only this record, so they print the same
shapes for both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

REQUIREMENT_KINDS = ("build", "host", "run", "run_constrained")


@dataclass(frozen=True)
class RenderedOutput:
    """One package a CI job produces."""

    name: str
    version: str
    build_string: str
    build_number: int
    subdir: str
    skip: bool
    requirements: Mapping[str, tuple[str, ...]]
    run_exports: Mapping[str, tuple[str, ...]]
    tests: Mapping[str, Any]
    variant: Mapping[str, str]
    config: str = ""
    build_platform: str = ""
    noarch: str | None = None
    script: str | None = None
    used_vars: tuple[str, ...] = ()
    hash_input: Mapping[str, str] = field(default_factory=dict)
    # why a skipped output is skipped: the recipe's skip line and the values it read
    skip_reason: str = ""
    # by_name / from_package, as a v1 recipe's requirements/ignore_run_exports (not in --json)
    ignore_run_exports: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # the TORCH_CUDA_ARCH_LIST a CUDA config's build exports (recipe/cuda_arch_lists.txt)
    cuda_arch_list: str | None = None
    # The features the package's index.json lists, which solvers weigh before the version:
    # meta.yaml's build/track_features, recipe.yaml's down_prioritize_variant as rattler-build
    # writes it (one ``<name>-p-<i>`` per step).
    track_features: tuple[str, ...] = ()

    @property
    def dist(self) -> str:
        return f"{self.name}-{self.version}-{self.build_string}"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "build_string": self.build_string,
            "build_number": self.build_number,
            "subdir": self.subdir,
            "build_platform": self.build_platform,
            "skip": self.skip,
            "skip_reason": self.skip_reason or None,
            "noarch": self.noarch,
            "config": self.config,
            "cuda_arch_list": self.cuda_arch_list,
            "track_features": list(self.track_features),
            "requirements": {k: list(self.requirements.get(k, ())) for k in REQUIREMENT_KINDS},
            "run_exports": {k: list(v) for k, v in sorted(self.run_exports.items())},
            "tests": _jsonable(self.tests),
            "variant": dict(sorted(self.variant.items())),
            "used_vars": list(self.used_vars),
            "hash_input": dict(sorted(self.hash_input.items())),
        }


@dataclass(frozen=True)
class ConfigRender:
    """What rendering one CI config gives: its packages, and what the reader should know
    about the recipe on the way (a selector reading a name nothing defines)."""

    outputs: tuple[RenderedOutput, ...]
    warnings: tuple[str, ...] = ()


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)
