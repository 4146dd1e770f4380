"""Drift reports as a terminal table, a Markdown table and a JSON document."""

from __future__ import annotations

from collections.abc import Mapping

from tools.drift.model import DriftRow, Kind, RecipeGroup, Scope, Status, UpstreamClaim
from tools.drift.table import Report


def upstream_cell(claim: UpstreamClaim) -> str:
    text = claim.text if claim.kind is Kind.TESTED else claim.spec or "any"
    extras = []
    if claim.extra:
        extras.append(f"[{claim.extra}]")
    if claim.condition.label:
        extras.append(f"({claim.condition.label})")
    return " ".join([text, *extras])


def recipe_cell(row: DriftRow, separator: str) -> str:
    if not row.recipe:
        return "?"
    if len(row.recipe) == 1 and not row.recipe[0].label:
        return _group_text(row.recipe[0])
    # Several groups without a label: the same configurations name the package in several
    # outputs or sections with different specs; say where.
    return separator.join(
        f"{_group_text(g)} ({g.label or ', '.join(g.where)})"
        if g.label or g.where
        else _group_text(g)
        for g in row.recipe
    )


def _group_text(group: RecipeGroup) -> str:
    if not group.present:
        return "absent"
    spec = group.spec or "any"
    return f"{spec} (run_constrained)" if group.constrained else spec


def forge_cell(row: DriftRow) -> str:
    return (row.conda_forge.latest or "?") if row.conda_forge else "?"


def markdown(report: Report) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = [
        "| package | upstream | recipe | conda-forge | status | why | upstream source "
        "| compared with |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in report.rows:
        lines.append(
            "| "
            + " | ".join(
                cell(x)
                for x in (
                    f"`{row.package}`",
                    upstream_cell(row.upstream),
                    recipe_cell(row, "<br>"),
                    forge_cell(row),
                    f"**{row.status.value}**"
                    if row.status not in (Status.OK, Status.UNKNOWN)
                    else row.status.value,
                    row.reason,
                    row.upstream.source,
                    _compared_with(row.upstream),
                )
            )
            + " |"
        )
    notes = _notes(report)
    if notes:
        lines.append("")
        lines.extend(f"_{note}_" for note in notes)
    return "\n".join(lines) + "\n"


def _notes(report: Report) -> list[str]:
    notes = [f"problem: {problem}" for problem in report.problems]
    if report.recipe_note:
        notes.append(f"recipe column unknown: {report.recipe_note}")
    if report.channel_note:
        notes.append(f"conda-forge column unknown: {report.channel_note}")
    if report.hidden:
        notes.append(f"{len(report.hidden)} upstream claims left out (`--all` shows them)")
    return notes


def _compared_with(claim: UpstreamClaim) -> str:
    return "run" if claim.scope is Scope.RUN else "build/host"


def text_table(report: Report) -> str:
    header = ("package", "vs", "upstream", "recipe", "conda-forge", "status", "why")
    body = [
        (
            row.package,
            _compared_with(row.upstream),
            upstream_cell(row.upstream),
            recipe_cell(row, "; "),
            forge_cell(row),
            row.status.value,
            row.reason,
        )
        for row in report.rows
    ]
    widths = [max(len(r[i]) for r in (header, *body)) for i in range(len(header) - 1)]
    lines = []
    for record in (header, *body):
        lines.append(
            "  ".join(v.ljust(w) for v, w in zip(record, widths, strict=False)) + "  " + record[-1]
        )
    notes = [note if note.startswith("problem: ") else f"note: {note}" for note in _notes(report)]
    return "\n".join(lines + notes) + "\n"


def as_json(report: Report, inputs: Mapping[str, object]) -> dict:
    return {
        "version": 1,
        "inputs": dict(inputs),
        "recipe_note": report.recipe_note,
        "channel_note": report.channel_note,
        "problems": list(report.problems),
        "rows": [
            {
                "package": row.package,
                "status": row.status.value,
                "reason": row.reason,
                "compared_with": _compared_with(row.upstream),
                "upstream": {
                    "name": row.upstream.package,
                    "kind": row.upstream.kind.value,
                    "spec": row.upstream.spec,
                    "text": row.upstream.text,
                    "source": row.upstream.source,
                    "extra": row.upstream.extra,
                    "condition": row.upstream.condition.label or None,
                },
                "recipe": [
                    {
                        "spec": g.spec,
                        "present": g.present,
                        "configs": list(g.configs),
                        "label": g.label or None,
                        "where": list(g.where),
                        "constrained": g.constrained,
                    }
                    for g in row.recipe
                ],
                "conda_forge": (
                    {
                        "name": row.conda_forge.name,
                        "latest": row.conda_forge.latest,
                        "versions": len(row.conda_forge.versions),
                        "source": row.conda_forge.source,
                    }
                    if row.conda_forge
                    else None
                ),
            }
            for row in report.rows
        ],
        "hidden": list(report.hidden),
    }
