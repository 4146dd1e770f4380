"""Drift rows: upstream claims against the recipe's specs and conda-forge's versions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tools.drift import compare, pep440, python_row, run_exports
from tools.drift.model import (
    SEVERITY,
    ChannelPackage,
    DriftRow,
    Kind,
    RecipeConfig,
    RecipeGroup,
    RecipeSpec,
    Scope,
    Status,
    UpstreamClaim,
)
from tools.drift.names import canonical, conda_names

DEFAULT_PYTHON = "3.12"


@dataclass(frozen=True)
class RecipeView:
    """What the recipe applies: every rendered spec and every configuration."""

    specs: tuple[RecipeSpec, ...]
    configs: tuple[RecipeConfig, ...]
    torch_output: str = "pytorch"


@dataclass(frozen=True)
class Report:
    rows: tuple[DriftRow, ...]
    hidden: tuple[str, ...]  # one line per claim left out of the table, with why
    recipe_note: str | None = None  # why the recipe column is unknown, if it is
    channel_note: str | None = None
    # Problems with the comparison itself (the wheel is another release, the sha256 did not
    # follow a version bump): printed after the table, and --check fails on them.
    problems: tuple[str, ...] = ()


# ---------------------------------------------------------------------------------------------
# Selection
# ---------------------------------------------------------------------------------------------


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


def _judge_requirement(
    claim: UpstreamClaim, group: RecipeGroup, channel: tuple[str, ...]
) -> tuple[Status, str]:
    relation = compare.relate(claim.spec, group.spec, channel)
    up, rec = claim.spec or "any version", group.spec or "any version"
    if relation.disjoint:
        return Status.CONFLICT, f"no version satisfies both upstream `{up}` and recipe `{rec}`"
    if relation.equivalent:
        return Status.OK, "same versions admitted"
    near = relation.both
    if relation.recipe_only and relation.upstream_only:
        extra = compare.pick_witness(relation.recipe_only, near, channel)
        missing = compare.pick_witness(relation.upstream_only, near, channel)
        return (
            Status.LOOSER,
            f"recipe admits {extra}, which upstream rejects "
            f"(and rejects {missing}, which upstream admits)",
        )
    if relation.recipe_only:
        extra = compare.pick_witness(relation.recipe_only, near, channel)
        return Status.LOOSER, f"recipe admits {extra}, which upstream rejects"
    missing = compare.pick_witness(relation.upstream_only, near, channel)
    return Status.STRICTER, f"recipe rejects {missing}, which upstream admits"


def _judge_tested(claim: UpstreamClaim, group: RecipeGroup) -> tuple[Status, str]:
    tested = (claim.spec or "").lstrip("=") or claim.text
    if compare.admits(group.spec, tested):
        return Status.OK, f"recipe admits upstream's {claim.text}"
    admitted = compare.relate(claim.spec, group.spec).recipe_only
    if admitted and all(compare.newer(v, tested) for v in admitted):
        return (
            Status.DIFFERS,
            f"recipe builds with `{group.spec}`, newer than upstream's {claim.text}",
        )
    if admitted and all(compare.newer(tested, v) for v in admitted):
        return (
            Status.DIFFERS,
            f"recipe builds with `{group.spec}`, older than upstream's {claim.text}",
        )
    return Status.DIFFERS, f"recipe builds with `{group.spec}`, not upstream's {claim.text}"


def judge(
    claim: UpstreamClaim,
    groups: Sequence[RecipeGroup],
    channel: tuple[str, ...],
    host_has: bool,
    total: int,
    via_host: tuple[Status, str] | None = None,
) -> tuple[Status, str]:
    """The row's status: the worst over its recipe groups, with that group's reason.

    ``via_host``: the verdict on a run requirement conda-forge satisfies through host
    packages' run_exports (tools.drift.run_exports), used where run does not name it."""
    if not groups:
        return Status.UNKNOWN, "upstream's condition matches no configuration of this recipe"
    present = [g for g in groups if g.present]
    verdicts: list[tuple[Status, str, RecipeGroup]] = []
    if claim.kind is Kind.TESTED:
        if not present:
            why = (
                "the recipe builds upstream's vendored copy"
                if claim.source.startswith("third_party/")
                else "not a dependency of this recipe"
            )
            return Status.UNKNOWN, why
        for group in present:
            verdicts.append((*_judge_tested(claim, group), group))
    else:
        for group in groups:
            if group.present and group.constrained and not claim.extra:
                verdicts.append(
                    (
                        Status.LOOSER,
                        "upstream requires it; the recipe only constrains it (run_constrained) "
                        "and never installs it",
                        group,
                    )
                )
            elif group.present and group.constrained:
                status, why = _judge_requirement(claim, group, channel)
                verdicts.append(
                    (
                        status,
                        f"optional upstream extra [{claim.extra}]; the recipe constrains it "
                        f"(run_constrained): {why}",
                        group,
                    )
                )
            elif group.present:
                verdicts.append((*_judge_requirement(claim, group, channel), group))
            elif claim.extra:
                verdicts.append(
                    (
                        Status.OK,
                        f"optional upstream extra [{claim.extra}]; the recipe leaves it out",
                        group,
                    )
                )
            elif via_host is not None:
                verdicts.append((*via_host, group))
            elif claim.scope is Scope.RUN and host_has:
                verdicts.append(
                    (
                        Status.UNKNOWN,
                        "not in run; a host dependency's run_exports decide the run pin "
                        "(not resolved here)",
                        group,
                    )
                )
            else:
                where = "run" if claim.scope is Scope.RUN else "build/host"
                verdicts.append(
                    (Status.LOOSER, f"missing from the recipe's {where} requirements", group)
                )
    status, reason, group = min(verdicts, key=lambda v: SEVERITY.index(v[0]))
    covered = sum(len(g.configs) for s, _, g in verdicts if s is status)
    if covered < total:
        reason += f" (in {covered} of {total} configurations)"
    return status, reason


def _channel_for(
    names: Sequence[str], channel: Mapping[str, ChannelPackage] | None
) -> ChannelPackage | None:
    if channel is None:
        return None
    index = {canonical(n): p for n, p in channel.items()}
    for name in names:
        if canonical(name) in index:
            return index[canonical(name)]
    return None


def build_report(
    claims: Sequence[UpstreamClaim],
    recipe: RecipeView | None,
    channel: Mapping[str, ChannelPackage] | None,
    *,
    recipe_note: str | None = None,
    channel_note: str | None = None,
    show_all: bool = False,
) -> Report:
    rows: list[DriftRow] = []
    hidden: list[str] = []
    recipe_names = {canonical(s.name) for s in recipe.specs} if recipe else set()
    for claim in select_claims(claims):
        names = conda_names(claim.package)
        in_recipe = [n for n in names if canonical(n) in recipe_names]
        package = in_recipe[0] if in_recipe else names[0]
        forge = _channel_for(names, channel)
        channel_versions = forge.versions if forge else ()
        if claim.development and not show_all and (recipe is None or not in_recipe):
            hidden.append(
                f"{claim.package} ({claim.source}): "
                "a development requirement the recipe does not use"
            )
            continue
        if recipe is None:
            why = f"recipe not rendered: {recipe_note}" if recipe_note else "recipe not rendered"
            rows.append(DriftRow(package, claim, (), forge, Status.UNKNOWN, why))
            continue
        configs = applicable_configs(claim, recipe.configs)
        if python_row.is_python(claim) and configs:
            status, reason = python_row.judge(claim, configs)
            rows.append(DriftRow(package, claim, python_row.groups(configs), None, status, reason))
            continue
        if not configs and not show_all:
            label = claim.condition.label or "its condition"
            hidden.append(
                f"{claim.package} {claim.text} ({claim.source}, {label}): "
                "no configuration of this recipe"
            )
            continue
        groups = recipe_groups(claim, names, recipe, configs)
        host_has = claim.scope is Scope.RUN and any(
            canonical(s.name) in {canonical(n) for n in names}
            and s.section == "host"
            and s.config in {c.name for c in configs}
            for s in recipe.specs
        )
        parts = run_exports.components(claim)
        via_host = run_exports.judge(parts, configs, _host_names(recipe)) if parts else None
        status, reason = judge(
            claim, groups, channel_versions, host_has, len(configs), via_host=via_host
        )
        if (
            forge
            and claim.kind is Kind.REQUIREMENT
            and status in (Status.OK, Status.LOOSER, Status.STRICTER)
        ):
            present = [g for g in groups if g.present]
            if present and not any(
                compare.admits(claim.spec, v) and all(compare.admits(g.spec, v) for g in present)
                for v in forge.versions
            ):
                reason += "; no conda-forge version satisfies both"
        rows.append(DriftRow(package, claim, groups, forge, status, reason))
    rows.sort(key=lambda r: (r.upstream.scope.value, r.package, r.upstream.condition.label))
    return Report(tuple(rows), tuple(hidden), recipe_note, channel_note)


def _host_names(recipe: RecipeView) -> dict[str, set[str]]:
    """Per configuration, the canonical names of every output's host requirements."""
    names: dict[str, set[str]] = {}
    for spec in recipe.specs:
        if spec.section == "host":
            names.setdefault(spec.config, set()).add(canonical(spec.name))
    return names


def with_problems(report: Report, problems: Sequence[str]) -> Report:
    return Report(
        report.rows, report.hidden, report.recipe_note, report.channel_note, tuple(problems)
    )


def conflicts(report: Report) -> list[DriftRow]:
    return [row for row in report.rows if row.status is Status.CONFLICT]
