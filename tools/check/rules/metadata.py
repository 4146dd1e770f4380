"""info/index.json and info/run_exports.json against the rendered recipe."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

import rattler
from rattler.exceptions import (
    InvalidMatchSpecError,
    InvalidPackageNameError,
    InvalidVersionSpecError,
)

from tools.check.archive import Package
from tools.check.context import Context, package_python
from tools.check.findings import Finding, failed, passed, warned
from tools.check.rules import each_package

IDS = (
    "metadata.depends",
    "metadata.constrains",
    "metadata.run-exports",
    "metadata.output",
)


def _parse(spec: str) -> tuple[str, str | None, str | None]:
    """(name, version, build) of a match spec; a bad spec keeps its first word as name."""
    try:
        parsed = rattler.MatchSpec(spec)
    except (InvalidMatchSpecError, InvalidPackageNameError):
        parts = spec.split()
        return (parts[0] if parts else spec), None, None
    version = str(parsed.version) if parsed.version is not None else None
    build = str(parsed.build) if parsed.build is not None else None
    return parsed.name.normalized, version, build


def _norm_version(version: str | None) -> str | None:
    if version is None:
        return None
    try:
        return str(rattler.VersionSpec(version))
    except InvalidVersionSpecError:
        return version.replace(" ", "")


def compare_specs(
    check: str, label: str, rendered: Sequence[str], actual: Sequence[str]
) -> list[Finding]:
    """Every rendered spec must appear (by name, with its version and build) in ``actual``.

    Names only in ``actual`` are fine: conda-build adds run_exports of host
    dependencies (libstdcxx, python_abi …) that the recipe never spells out.
    """
    findings: list[Finding] = []
    have: dict[str, list[tuple[str, str | None, str | None]]] = {}
    for spec in actual:
        name, version, build = _parse(spec)
        have.setdefault(name, []).append((spec, version, build))
    problems = 0
    for spec in rendered:
        name, version, build = _parse(spec)
        if name not in have:
            problems += 1
            findings.append(
                failed(check, label, f"rendered {spec!r} is missing from info/index.json")
            )
            continue
        candidates = have[name]
        version_matches = version is None or any(
            _norm_version(v) == _norm_version(version) for _, v, _ in candidates
        )
        build_matches = build is None or any(
            b is not None and fnmatch.fnmatchcase(b, build) for _, _, b in candidates
        )
        if not (version_matches and build_matches):
            problems += 1
            findings.append(
                warned(
                    check,
                    label,
                    f"rendered {spec!r}, package has {', '.join(s for s, _, _ in candidates)!r}",
                )
            )
    if not problems:
        extra = sorted(set(have) - {_parse(s)[0] for s in rendered})
        added = f"; added at build time: {', '.join(extra)}" if extra else ""
        findings.append(passed(check, label, f"all {len(rendered)} rendered specs present{added}"))
    return findings


def check_metadata(ctx: Context) -> list[Finding]:
    return each_package(ctx, lambda package: _metadata(package, ctx), lambda p: p.kind == "conda")


def _metadata(package: Package, ctx: Context) -> list[Finding]:
    output = ctx.expect.output_for(package.name, package_python(package, ctx.expect), package.build)
    if output is None:
        return [_not_an_output(package, ctx)] if ctx.expect.config is not None else []
    return [
        *compare_specs("metadata.depends", package.label, output.run, package.depends),
        *compare_specs(
            "metadata.constrains",
            package.label,
            output.run_constrained,
            package.constrains,
        ),
        *_run_exports(package, output.declares_run_exports),
    ]


def _run_exports(package: Package, declared: bool) -> list[Finding]:
    present = bool(package.run_exports) and any(package.run_exports.values())
    if declared and not present:
        return [
            failed(
                "metadata.run-exports",
                package.label,
                "the recipe declares run_exports, but info/run_exports.json is missing or empty",
            )
        ]
    if present and not declared:
        return [
            warned(
                "metadata.run-exports",
                package.label,
                "info/run_exports.json exists, but the recipe declares none for this output",
            )
        ]
    state = "present as declared" if declared else "none declared, none shipped"
    return [passed("metadata.run-exports", package.label, f"run_exports {state}")]


def _not_an_output(package: Package, ctx: Context) -> Finding:
    names = ", ".join(sorted({o.name for o in ctx.expect.outputs})) or "none"
    return failed(
        "metadata.output",
        package.label,
        f"{package.name} is not an output config {ctx.expect.config} builds (its outputs: "
        f"{names}); check it with the config it was built from",
    )
