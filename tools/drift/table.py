"""Drift rows: upstream claims against the recipe's specs and conda-forge's versions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tools.drift import compare, python_row, run_exports
from tools.drift.groups import (
    RecipeView,
    applicable_configs,
    recipe_groups,
    select_claims,
)
from tools.drift.model import (
    SEVERITY,
    ChannelPackage,
    DriftRow,
    Kind,
    RecipeGroup,
    Scope,
    Status,
    UpstreamClaim,
)
from tools.drift.names import canonical, conda_names


@dataclass(frozen=True)
class Report:
    rows: tuple[DriftRow, ...]
    hidden: tuple[str, ...]  # one line per claim left out of the table, with why
    recipe_note: str | None = None  # why the recipe column is unknown, if it is
    channel_note: str | None = None
    # Problems with the comparison itself (the wheel is another release, the sha256 did not
    # follow a version bump): printed after the table, and --check fails on them.
    problems: tuple[str, ...] = ()


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
