"""Which upstream claims the table shows, which configs each applies to, and the recipe groups a
claim's rows are split into (configs that agree), each with the label that tells it apart."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tools.drift import pep440
from tools.drift.model import (
    Kind,
    RecipeConfig,
    RecipeGroup,
    RecipeSpec,
    Scope,
    UpstreamClaim,
)
from tools.drift.names import canonical, conda_names

# ---------------------------------------------------------------------------------------------
# Selection
# ---------------------------------------------------------------------------------------------


DEFAULT_PYTHON = "3.12"


@dataclass(frozen=True)
class RecipeView:
    """What the recipe applies: every rendered spec and every configuration."""

    specs: tuple[RecipeSpec, ...]
    configs: tuple[RecipeConfig, ...]
    torch_output: str = "pytorch"


def select_claims(claims: Sequence[UpstreamClaim]) -> list[UpstreamClaim]:
    """Per package and scope, the claims of the most authoritative source (lowest priority).

    A wheel's METADATA outranks pyproject.toml, which outranks the requirements files; the CI
    images' pins outrank the vendored submodules.  Several claims of that source survive when
    they differ in condition (cuDNN per CUDA series, say).
    """
    best: dict[tuple[str, Scope], int] = {}
    for claim in claims:
        key = (conda_names(claim.package)[0], claim.scope)
        best[key] = min(best.get(key, claim.priority), claim.priority)
    chosen: dict[tuple, UpstreamClaim] = {}
    for claim in claims:
        key = (conda_names(claim.package)[0], claim.scope)
        if claim.priority == best[key]:
            chosen.setdefault(
                (*key, claim.source, claim.condition.key(), claim.spec, claim.extra), claim
            )
    return list(chosen.values())


def applicable_configs(claim: UpstreamClaim, configs: Sequence[RecipeConfig]) -> list[RecipeConfig]:
    """Configurations whose variant matches the claim's condition and where its marker holds."""
    out = []
    for config in configs:
        if not claim.condition.matches_variant({**config.variant, "subdir": config.subdir}):
            continue
        pythons = config.python or (DEFAULT_PYTHON,)
        environments = [pep440.marker_environment(config.subdir, p) for p in pythons]
        if any(
            pep440.marker_applies(claim.condition.marker, env, claim.extra or "")
            for env in environments
        ):
            out.append(config)
    return out


# ---------------------------------------------------------------------------------------------
# Recipe groups and status
# ---------------------------------------------------------------------------------------------


def _sections(claim: UpstreamClaim) -> tuple[str, ...]:
    if claim.kind is Kind.TESTED:
        # A vendored or CI-installed version is what gets built against or shipped with, so
        # whichever section names the package counts (host for libraries, run for triton).
        return ("build", "host", "run")
    # run_constrained limits a run dependency's version without installing it: it is where a
    # recipe answers an upstream extra (optree), so a run claim is compared with it too.
    return ("run", "run_constrained") if claim.scope is Scope.RUN else ("build", "host")


def recipe_groups(
    claim: UpstreamClaim, names: Sequence[str], recipe: RecipeView, configs: Sequence[RecipeConfig]
) -> tuple[RecipeGroup, ...]:
    wanted = {canonical(n) for n in names}
    sections = _sections(claim)
    per_config: dict[str, set[str | None]] = {c.name: set() for c in configs}
    constrained: dict[str, set[str | None]] = {c.name: set() for c in configs}
    texts: dict[str | None, set[str]] = {}
    where: dict[str | None, set[str]] = {}
    for spec in recipe.specs:
        if spec.config not in per_config or canonical(spec.name) not in wanted:
            continue
        if spec.section not in sections:
            continue
        if (
            claim.kind is Kind.REQUIREMENT
            and claim.scope is Scope.RUN
            and spec.output != recipe.torch_output
        ):
            continue
        target = constrained if spec.section == "run_constrained" else per_config
        target[spec.config].add(spec.spec)
        texts.setdefault(spec.spec, set()).add(spec.text)
        where.setdefault(spec.spec, set()).add(f"{spec.output} {spec.section}")
    # (present, spec, constrained only) -> configurations
    grouped: dict[tuple[bool, str | None, bool], list[str]] = {}
    for config in configs:
        # A package the recipe installs is compared with what installs it; one it only
        # constrains, with the constraint.
        found, only_constrained = per_config[config.name], False
        if not found and constrained[config.name]:
            found, only_constrained = constrained[config.name], True
        if not found:
            grouped.setdefault((False, None, False), []).append(config.name)
        for spec in sorted(found, key=lambda s: s or ""):
            grouped.setdefault((True, spec, only_constrained), []).append(config.name)
    by_name = {c.name: c for c in configs}
    groups = []
    for (present, spec, only_constrained), members in grouped.items():
        label = distinguishing_label(members, [by_name[n] for n in by_name])
        groups.append(
            RecipeGroup(
                spec,
                present,
                tuple(members),
                label,
                tuple(sorted(texts.get(spec, ()))),
                tuple(sorted(where.get(spec, ()))),
                constrained=only_constrained,
            )
        )
    return tuple(sorted(groups, key=lambda g: (not g.present, g.spec or "", g.label)))


# The variant keys a maintainer thinks in, first; any other key only when these do not tell.
_LABEL_ORDER = ("platform", "subdir", "cuda_compiler_version", "blas_impl", "arm_variant_type")


def _label_values(config: RecipeConfig) -> dict[str, str]:
    return {**config.variant, "subdir": config.subdir, "platform": config.subdir.split("-")[0]}


def distinguishing_label(members: Sequence[str], configs: Sequence[RecipeConfig]) -> str:
    """The variant values that set ``members`` apart from the other configurations."""
    if len(members) == len(configs):
        return ""
    inside = [c for c in configs if c.name in set(members)]
    outside = [c for c in configs if c.name not in set(members)]
    shared = None
    for config in inside:
        items = set(_label_values(config).items())
        shared = items if shared is None else shared & items
    candidates = sorted(
        (
            (key, value)
            for key, value in (shared or set())
            if any(_label_values(o).get(key) != value for o in outside)
        ),
        key=lambda item: (
            _LABEL_ORDER.index(item[0]) if item[0] in _LABEL_ORDER else len(_LABEL_ORDER),
            item,
        ),
    )
    values = _label_values
    # Prefer a key a maintainer thinks in that alone excludes every outside configuration, then
    # the same key negated ("platform!=win"), then any other excluding key.
    excluding = [(k, v) for k, v in candidates if all(values(o).get(k) != v for o in outside)]
    preferred = [(k, v) for k, v in excluding if k in _LABEL_ORDER]
    if preferred:
        return f"{preferred[0][0]}={preferred[0][1]}"
    for key in _LABEL_ORDER:
        outside_values = {values(o).get(key) for o in outside}
        if len(outside_values) == 1 and None not in outside_values:
            (value,) = outside_values
            if all(values(c).get(key) != value for c in inside):
                return f"{key}!={value}"
    if excluding:
        return f"{excluding[0][0]}={excluding[0][1]}"
    if candidates and len(candidates) <= 2:
        return ", ".join(f"{k}={v}" for k, v in candidates)
    return f"{len(members)} of {len(configs)} configs"
