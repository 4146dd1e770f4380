"""The recipe model: meta.yaml text + a list of variants -> one record per output variant.

This follows conda-build's own algorithm (``distribute_variants`` and
``get_output_metadata_set``) closely, because that algorithm *is* the specification of
what a CI job builds:

1. the top level is rendered with the first variant to find the keys it uses; one
   top-level variant per distinct combination of those keys (``_distribute``);
2. per top-level variant, every output is rendered for each combination of the keys the
   whole recipe uses, and outputs are deduplicated on the keys *they* use
   (``_output_set``) -- so a ``pytorch`` output that uses ``python`` appears once per
   Python while ``libtorch`` appears once;
3. build strings get conda-build's hash (sha1 of the JSON of the used keys) in place of
   ``h{{ PKG_HASH }}``; ``pin_subpackage`` is resolved against the sibling outputs.

The stages below it: :mod:`~tools.recipe.evaluate` (text + variant -> parsed dict, over
:mod:`~tools.recipe.loader`), :mod:`~tools.recipe.metadata` (conda-build's MetaData: used
keys, hash, build string).  Inputs are strings; there is no I/O here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tools.recipe import jinja
from tools.recipe.evaluate import Recipe, RecipeSource, Target
from tools.recipe.metadata import Meta, output_dicts
from tools.recipe.requirements import (
    apply_pin_expressions,
    as_str_list,
    expand_requirements,
    insert_variant_versions,
)
from tools.recipe.selectors import select_lines
from tools.recipe.variant_hash import filter_variants, reduce_variants

__all__ = ["OutputVariant", "RecipeSource", "Target", "render"]

REQUIREMENT_KINDS = ("build", "host", "run", "run_constrained")


@dataclass(frozen=True)
class OutputVariant:
    """One package a variant set produces, with everything conda-build knows about it."""

    name: str
    version: str
    build_number: int
    build_string: str
    skip: bool
    noarch: str | None
    requirements: Mapping[str, tuple[str, ...]]
    run_exports: Mapping[str, tuple[str, ...]]
    test: Mapping[str, Any]
    script: str | None
    variant: Mapping[str, Any]
    used_vars: frozenset[str]
    hash_input: Mapping[str, str]
    # For the CI-job split (conda-smithy's view of this output).
    top_level_vars: frozenset[str]
    top_level_loop_vars: frozenset[str]
    variants: tuple[Mapping[str, Any], ...] = field(repr=False, default=())
    top_skip: bool = False
    skip_reason: str = ""  # for a skipped output: the meta.yaml line that skips it, explained
    # build/ignore_run_exports (by name) and build/ignore_run_exports_from (by package), in
    # the shape of a v1 recipe's requirements/ignore_run_exports.
    ignore_run_exports: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # The solver's down-weighting, as the package's index.json lists it (build/track_features).
    track_features: tuple[str, ...] = ()


@dataclass
class _Rendered:
    meta: Meta
    top: Meta


def render(
    source: RecipeSource,
    variants: Sequence[Mapping[str, Any]],
    target: Target,
    *,
    ci_split: bool = True,
    fast_yaml: bool = True,
) -> list[OutputVariant]:
    """Every (non-skipped and skipped) output variant of the recipe for ``variants``.

    ``ci_split=False`` leaves ``top_level_vars``/``top_level_loop_vars`` empty: only the
    CI-job split needs them, and they cost a third of a render.  ``fast_yaml=False`` parses
    every variant the slow way (see :mod:`tools.recipe.evaluate`); the result is the same.
    """
    if not variants:
        return []
    recipe = Recipe(source, target, fast=fast_yaml)
    variants = [dict(v) for v in variants]
    rendered: list[_Rendered] = []
    for top in _distribute(recipe, variants):
        for meta in _output_set(top):
            rendered.append(_Rendered(meta, top))
    return _finish(rendered, ci_split)


def _distribute(recipe: Recipe, variants: list[dict[str, Any]]) -> list[Meta]:
    first = Meta.top_level(recipe, variants[0], variants=variants, input_variants=variants)
    used = first.used_loop_vars()
    tops: dict[tuple, Meta] = {}
    for variant in reduce_variants(variants, used):
        subset = variants
        for key in used:
            subset = filter_variants(subset, key, variant[key]) or subset
        top = Meta.top_level(recipe, variant, variants=subset, input_variants=variants)
        key = (
            top.name(),
            top.version(),
            tuple((k, str(variant.get(k))) for k in sorted(top.used_vars())),
        )
        tops[key] = top
    return list(tops.values())


def _output_set(top: Meta) -> list[Meta]:
    used = top.used_loop_vars(force_global=True)
    loop = reduce_variants(top.variants, used) or top.variants[:1]
    found: dict[tuple, Meta] = {}
    for variant in loop:
        ref = Meta.top_level(
            top.recipe, variant, variants=top.variants, input_variants=top.input_variants
        )
        for out in output_dicts(ref):
            reqs = expand_requirements(out.get("requirements"))
            if reqs:
                for env in ("build", "host", "run"):
                    insert_variant_versions(reqs, variant, env)
                out["requirements"] = reqs
            meta = ref.for_output(out)
            key = (meta.name(), tuple((k, str(variant.get(k))) for k in sorted(meta.used_vars())))
            found[key] = meta  # a repeat replaces the value but keeps the first position
    return list(found.values())


def _finish(rendered: list[_Rendered], ci_split: bool = True) -> list[OutputVariant]:
    # Build strings first: pin_subpackage(exact=True) needs its sibling's.
    strings = {id(r.meta): r.meta.build_string() for r in rendered}
    results = []
    for item in rendered:
        meta = item.meta
        siblings = [r.meta for r in rendered if r.top is item.top]
        reqs = {
            kind: tuple(_resolve(meta, spec, siblings, strings) for spec in specs)
            for kind, specs in meta.requirements().items()
        }
        reqs = {kind: reqs.get(kind, ()) for kind in REQUIREMENT_KINDS} | {
            k: v for k, v in reqs.items() if k not in REQUIREMENT_KINDS
        }
        exports = meta.build().get("run_exports") or {}
        if not isinstance(exports, Mapping):
            exports = {"weak": exports}
        run_exports = {
            str(k): tuple(_resolve(meta, s, siblings, strings) for s in as_str_list(v))
            for k, v in exports.items()
        }
        test = meta.meta.get("test") or {}
        script = meta.out.get("script") if meta.is_output else meta.build().get("script")
        results.append(
            OutputVariant(
                name=meta.name(),
                version=meta.version(),
                build_number=meta.build_number(),
                build_string=strings[id(meta)],
                skip=meta.skip() or item.top.skip(),
                noarch=meta.noarch(),
                requirements=reqs,
                run_exports=run_exports,
                test=dict(test),
                script=script if isinstance(script, str) else None,
                variant=dict(meta.variant),
                used_vars=meta.used_vars(),
                hash_input=meta.hash_contents(),
                top_level_vars=meta.used_vars(force_top_level=True) if ci_split else frozenset(),
                top_level_loop_vars=(
                    frozenset(meta.used_loop_vars(force_top_level=True))
                    if ci_split
                    else frozenset()
                ),
                variants=tuple(meta.variants),
                top_skip=item.top.skip(),
                skip_reason=skip_reason(meta, item.top) if meta.skip() or item.top.skip() else "",
                ignore_run_exports=_ignore_run_exports(meta.build()),
                track_features=tuple(as_str_list(meta.build().get("track_features"))),
            )
        )
    return results


_SKIP_LINE = re.compile(r"^\s*skip\s*:")
_OUTPUT_START = re.compile(r"^\s*-\s+name\s*:")
_EXPRESSION = re.compile(r"{{\s*([A-Za-z_]\w*)\s*}}")
_WORD = re.compile(r"[A-Za-z_]\w*")


def skip_reason(meta: Meta, top: Meta) -> str:
    """Why ``meta`` is skipped, for people: the ``skip:`` line that applies (the top level's
    when the whole recipe is skipped, else the output's), a ``{% set %}`` it names, and the
    values they read: variant keys (``is_rc=False``) and conda-build's selector names
    (``py=310``)."""
    raw = meta.recipe.source.meta_text
    raw_lines = raw.splitlines()
    selected = select_lines(raw, meta.names(), source=meta.recipe.source.path)
    kept = list(enumerate(selected.text.splitlines(), start=1))
    outputs_at = next(
        (n for n, line in enumerate(raw_lines, start=1) if line.startswith("outputs:")),
        len(raw_lines) + 1,
    )
    skips = [selected.source_line(i) for i, line in kept if _SKIP_LINE.match(line)]
    if top.skip():
        chosen = [n for n in skips if n < outputs_at]
    else:
        starts = [
            selected.source_line(i)
            for i, line in kept
            if _OUTPUT_START.match(line) and selected.source_line(i) > outputs_at
        ]
        names = meta.output_names
        index = names.index(meta.name()) if meta.name() in names else -1
        if 0 <= index < len(starts):
            end = starts[index + 1] if index + 1 < len(starts) else len(raw_lines) + 1
            chosen = [n for n in skips if starts[index] < n < end]
        else:
            chosen = [n for n in skips if n > outputs_at]
    if not chosen:
        return "build/skip is true"
    line = " ".join(raw_lines[chosen[0] - 1].split())
    parts = [f"{meta.recipe.source.path}:{chosen[0]}: {line}"]
    read = line
    for name in _EXPRESSION.findall(line):
        found = re.search(rf"{{%-?\s*set\s+{name}\s*=\s*(.*?)\s*-?%}}", raw)
        if found:
            parts.append(f"{name} = {found[1]}")
            read += " " + found[1]
    # the selector names (py=310, linux=False) as well as the variant's values and the version
    names = {k: v for k, v in meta.names().items() if isinstance(v, (str, int, bool))}
    values = {**names, "version": meta.version(), **meta.variant}
    shown = [
        f"{word}={values[word]}"
        for word in dict.fromkeys(_WORD.findall(read))
        if word in values and not isinstance(values[word], (dict, list))
    ]
    if shown:
        parts.append(", ".join(shown))
    return "; ".join(parts)


def _ignore_run_exports(build: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    found = {
        "by_name": tuple(as_str_list(build.get("ignore_run_exports"))),
        "from_package": tuple(as_str_list(build.get("ignore_run_exports_from"))),
    }
    return {kind: names for kind, names in found.items() if names}


def _resolve(meta: Meta, spec: str, siblings: list[Meta], strings: dict[int, str]) -> str:
    match = jinja.PIN_MARKER_RE.match(spec)
    if not match:
        return spec
    name, exact, min_pin, max_pin = match.groups()
    candidates = [s for s in siblings if s.name() == name]
    chosen = None
    if len(candidates) == 1:
        chosen = candidates[0]
    else:
        for other in candidates:
            used = {k: other.variant.get(k) for k in other.used_vars()}
            shared = set(used) & set(meta.variant)
            if not shared or all(used[k] == meta.variant[k] for k in shared):
                chosen = other
                break
    if chosen is None:
        return name
    if exact == "1":
        return f"{name} {chosen.version()} {strings[id(chosen)]}"
    return f"{name} {apply_pin_expressions(chosen.version(), min_pin, max_pin)}"
