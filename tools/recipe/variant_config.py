"""conda-build's variant configuration: conda_build_config.yaml files and variant sets.

The data model is conda-build's: a *spec* maps keys to lists of string values (plus the
pass-through keys ``zip_keys``, ``pin_run_as_build``, ``extend_keys`` ...); *exploding* a
spec gives one variant dict per combination, with ``zip_keys`` groups varying together;
*squishing* goes back.  File parsing keeps every scalar a string (YAML's base schema), as
conda-build does, so ``12.0`` stays ``"12.0"``.

This sits below the recipe model (which reduces variant sets with it) and above the recipe
text modules (selectors, namespace); conda-smithy's semantics live in :mod:`tools.smithy`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml

from tools.foundation.errors import UserError
from tools.foundation.files import load_yaml_text, yaml_error_message
from tools.recipe.namespace import DEFAULT_NUMPY, DEFAULT_PYTHON, selector_namespace
from tools.recipe.selectors import select_lines

Spec = dict[str, Any]

# conda-build's built-in defaults, the lowest layer of every combined spec.
DEFAULT_VARIANT: Spec = {
    "python": DEFAULT_PYTHON,
    "numpy": DEFAULT_NUMPY,
    "perl": "5.26.2",
    "lua": "5",
    "r_base": "3.5",
    "cpu_optimization_target": "nocona",
    "pin_run_as_build": {
        "python": {"min_pin": "x.x", "max_pin": "x.x"},
        "r-base": {"min_pin": "x.x", "max_pin": "x.x"},
    },
    "ignore_version": [],
    "ignore_build_only_deps": ["python", "numpy"],
    "extend_keys": ["pin_run_as_build", "ignore_version", "ignore_build_only_deps", "extend_keys"],
    "cran_mirror": "https://cran.r-project.org",
}
_DEFAULT_COMPILERS = {
    "linux": {"c_compiler": "gcc", "cxx_compiler": "gxx", "fortran_compiler": "gfortran"},
    "osx": {"c_compiler": "clang", "cxx_compiler": "clangxx", "fortran_compiler": "gfortran"},
    "win": {
        "c_compiler": "vs2017",
        "cxx_compiler": "vs2017",
        "fortran_compiler": "gfortran",
        "vc": "14",
    },
}


# -- reading files ------------------------------------------------------------------------

# conda-build reads variant files with PyYAML's BaseLoader: every scalar stays a string.
_BASE_LOADER = getattr(yaml, "CBaseLoader", yaml.BaseLoader)


def _load_base(text: str) -> Any:
    return yaml.load(text, Loader=_BASE_LOADER)


def load_variant_yaml(text: str, *, source: str | None = None) -> Any:
    """Parse variant-file YAML the way conda-build does: every scalar stays a string.

    With ``source`` (the file's name) malformed YAML, merge-conflict markers included, is a
    UserError naming the file and line; without it the caller handles ``yaml.YAMLError``.
    """
    if source is None:
        return _load_base(text)
    return load_yaml_text(text, source, _load_base)


RERENDER = "rerender the feedstock (python -m tools matrix --pinning PATH --write)"


def parse_variant_file(text: str, source: str) -> dict[str, Any]:
    """A CI job's variant file (``.ci_support/<config>.yaml``), which a rerender writes:
    a non-empty mapping of keys to value lists.  An empty, truncated or damaged one is
    blamed on the file itself, with what to do: rerender."""
    data = load_yaml_text(text, source, _load_base, hint=RERENDER)
    if data is None:
        raise UserError(f"{source}: empty variant file; {RERENDER}")
    if not isinstance(data, dict):
        raise UserError(f"{source}: not a mapping of variant keys; {RERENDER}")
    return data


def trim_empty(spec: dict[str, Any]) -> dict[str, Any]:
    """Drop keys whose value ended up empty after selectors (conda-build's trim_empty_keys)."""
    for key in list(spec):
        value = spec[key]
        if isinstance(value, dict):
            trim_empty(value)
        if value in ([], "", None, {}) or (key == "zip_keys" and not value):
            del spec[key]
    if "zip_keys" in spec and not any(spec["zip_keys"]):
        del spec["zip_keys"]
    return spec


def parse_cbc(
    text: str,
    subdir: str,
    *,
    source: str,
    build_subdir: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Spec:
    """A conda_build_config.yaml (or migration) text after selectors, all scalars strings."""
    names = selector_namespace(subdir, {}, build_subdir=build_subdir or subdir, environ=environ)
    selected = select_lines(text, names, source=source)
    try:
        data = load_variant_yaml(selected.text)
    except yaml.YAMLError as exc:
        message = yaml_error_message(source, exc, selected.text, line_of=selected.source_line)
        raise UserError(message) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"{source}: a variant file must be a mapping of keys to value lists")
    return trim_empty(_plain(data))


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def ensure_list(value: Any) -> list:
    """``value`` as a list: None is empty, a list/tuple/set is copied, a scalar is wrapped."""
    if value is None:
        return []
    if isinstance(value, (list, tuple, set)):
        return list(value)
    return [value]


def freeze(variant: Mapping[str, Any]) -> tuple:
    """A hashable identity of a variant dict (nested mappings and lists included)."""

    def frozen(v: Any) -> Any:
        if isinstance(v, Mapping):
            return tuple(sorted((k, frozen(x)) for k, x in v.items()))
        if isinstance(v, (list, tuple)):
            return tuple(frozen(x) for x in v)
        return v

    return tuple(sorted((k, frozen(v)) for k, v in variant.items()))


def _is_zip_keys(value: Any) -> bool:
    if not isinstance(value, list):
        return False
    if all(isinstance(v, str) for v in value):
        return True
    return all(isinstance(g, list) and all(isinstance(k, str) for k in g) for g in value)


def zip_groups(value: Any) -> list[tuple[str, ...]]:
    """``zip_keys`` as a list of groups (a flat list is one group)."""
    if not value:
        return []
    if all(isinstance(v, str) for v in value):
        return [tuple(value)]
    return [tuple(group) for group in value if group]


def default_variant(subdir: str) -> Spec:
    spec = {k: (v.copy() if isinstance(v, (dict, list)) else v) for k, v in DEFAULT_VARIANT.items()}
    spec["pin_run_as_build"] = {k: dict(v) for k, v in DEFAULT_VARIANT["pin_run_as_build"].items()}
    spec["target_platform"] = subdir
    spec.update(_DEFAULT_COMPILERS.get(subdir.split("-")[0], {}))
    return spec


def validate_spec(source: str, spec: Mapping[str, Any]) -> None:
    """conda-build's per-file checks (``conda_build.variants.validate_spec``), one line each."""
    for key in spec:
        if "-" in key:
            raise UserError(f"{source}: key {key!r} contains '-'; variant keys use '_'")
    zips = spec.get("zip_keys")
    if zips and not _is_zip_keys(zips):
        raise UserError(f"{source}: zip_keys must be a list of keys or a list of lists of keys")
    seen: set[str] = set()
    for group in zip_groups(zips):
        for key in group:
            # Each file is checked alone: zipping a key that only another file (the pinning)
            # sets is refused, as `conda smithy rerender` and conda-build refuse it.
            if key not in spec:
                raise UserError(
                    f"{source}: zip_keys entry {key} in group {list(group)} does not have any "
                    f"settings in this file; set {key} here too or leave it out of the group"
                )
        lengths = {len(ensure_list(spec[k])) for k in group if k in spec}
        if len(lengths) > 1:
            raise UserError(
                f"{source}: the zip_keys group {list(group)} has lists of different lengths"
            )
        for key in group:
            if key in seen:
                raise UserError(
                    f"{source}: {key} appears in two zip_keys groups; a key may be zipped once"
                )
            seen.add(key)


# -- combining, exploding, squishing ---------------------------------------------------------


def extend_keys_of(specs: Iterable[Mapping[str, Any]]) -> set[str]:
    """Keys whose values are merged across variant files rather than replaced."""
    keys = set(DEFAULT_VARIANT["extend_keys"])
    for spec in specs:
        keys.update(ensure_list(spec.get("extend_keys")))
    return keys


def combine_specs(specs: Sequence[tuple[str, Mapping[str, Any]]]) -> Spec:
    """Layer specs, later ones winning; a zipped key can only be replaced with its whole group."""
    extend = extend_keys_of(s for _, s in specs)
    zips: list[tuple[str, ...]] = []
    for _, spec in specs:
        for group in zip_groups(spec.get("zip_keys")):
            if group not in zips:
                zips.append(group)
    values: Spec = {}
    for source, spec in specs:
        for key, value in spec.items():
            if key in extend:
                if isinstance(value, Mapping):
                    if isinstance(values.get(key), Mapping):
                        values[key] = {**values[key], **value}
                    else:
                        values[key] = dict(value)
                else:
                    merged = ensure_list(values.get(key, []))
                    for item in ensure_list(value):
                        if item not in merged:
                            merged.append(item)
                    values[key] = merged
            elif key == "zip_keys":
                values["zip_keys"] = [list(g) for g in zips]
            elif isinstance(value, Mapping):
                values[key] = dict(value)
            else:
                group = next((g for g in zips if key in g), (key,))
                if all(k in spec for k in group):
                    for k in group:
                        if len(ensure_list(spec[k])) != len(ensure_list(value)):
                            raise UserError(
                                f"{source}: {key} and {k} are zipped but have "
                                f"{len(ensure_list(value))} and {len(ensure_list(spec[k]))} values"
                            )
                        values[k] = ensure_list(spec[k])
                elif key in values:
                    same_length = all(
                        not (k in spec and len(ensure_list(spec[k])) != len(ensure_list(value)))
                        and not (
                            k in values and len(ensure_list(values[k])) != len(ensure_list(value))
                        )
                        for k in group
                    )
                    if same_length:
                        values[key] = ensure_list(value)
                    missing = [v for v in ensure_list(value) if v not in ensure_list(values[key])]
                    if missing:
                        absent = [k for k in group if k not in spec]
                        raise UserError(
                            f"{source}: {key} is zipped with {absent}, "
                            "which this file does not set; "
                            f"set the whole group or only choose among {ensure_list(values[key])}"
                        )
                else:
                    values[key] = ensure_list(value)
    return values


def _passthru(spec: Mapping[str, Any]) -> set[str]:
    zipped = {k for g in zip_groups(spec.get("zip_keys")) for k in g}
    keys = {"replacements", "extend_keys", "zip_keys"} | extend_keys_of([spec])
    return (keys - zipped) & set(spec)


def explode(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every combination of the spec's values, zipped groups varying together."""
    groups = [g for g in zip_groups(spec.get("zip_keys")) if all(k in spec for k in g)]
    passthru = _passthru(spec)
    fixed = {k: spec[k] for k in passthru if spec[k] or spec[k] == ""}
    zipped = {k for g in groups for k in g}
    axes: list[tuple[tuple[str, ...], list[tuple]]] = []
    for key, value in spec.items():
        if key in passthru or key in zipped:
            continue
        items = [(v,) for v in ensure_list(value)]
        if items:
            axes.append(((key,), items))
    for group in groups:
        rows = list(zip(*(ensure_list(spec[k]) for k in group)))
        if rows:
            axes.append((group, rows))
    out = []
    for combo in itertools.product(*(rows for _, rows in axes)):
        variant = {k: (v.copy() if isinstance(v, (list, dict)) else v) for k, v in fixed.items()}
        for (keys, _), row in zip(axes, combo):
            variant.update(zip(keys, row))
        out.append(variant)
    return out


def squish(variants: Sequence[Mapping[str, Any]]) -> Spec:
    """The inverse of :func:`explode`: each key's distinct values, in first-seen order."""
    if not variants:
        return {}
    groups = zip_groups(variants[0].get("zip_keys"))
    zipped = {k for g in groups for k in g}
    out: Spec = {}
    for variant in variants:
        for key, value in variant.items():
            if key == "zip_keys":
                continue
            if isinstance(value, Mapping):
                merged = dict(out.get(key, {}))
                merged.update(value)
                out[key] = merged
            elif isinstance(value, list):
                current = out.setdefault(key, [])
                current.extend(v for v in value if v not in current)
            else:
                current = out.setdefault(key, [])
                if key in zipped or value not in current:
                    current.append(value)
    for group in groups:
        if not all(k in out for k in group):
            continue
        rows: list[tuple] = []
        for row in zip(*(out[k] for k in group)):
            if row not in rows:
                rows.append(row)
        for index, key in enumerate(group):
            out[key] = [row[index] for row in rows]
    out["zip_keys"] = [list(g) for g in groups]
    return out
