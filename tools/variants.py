"""Variant configuration: conda_build_config.yaml files, CFEP-9 migrations, and the
CI-job split conda-smithy derives from them.

The data model is conda-build's: a *spec* maps keys to lists of string values (plus the
pass-through keys ``zip_keys``, ``pin_run_as_build``, ``extend_keys`` ...); *exploding* a
spec gives one variant dict per combination, with ``zip_keys`` groups varying together;
*squishing* goes back.  File parsing keeps every scalar a string (YAML's base schema), as
conda-build does, so ``12.0`` stays ``"12.0"``.

The job split follows conda-smithy's ``_collapse_subpackage_variants`` /
``dump_subspace_config_files`` (facts in ../shared/reference/feedstock-facts.md §2):
keys that every output uses at top level and that vary split jobs; the file holds every
used key plus a few always-kept ones, trimmed ``zip_keys``/``pin_run_as_build``, and the
first ``docker_image``.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tools.errors import UserError
from tools.files import yaml_error_message
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
    "win": {"c_compiler": "vs2017", "cxx_compiler": "vs2017", "fortran_compiler": "gfortran",
            "vc": "14"},
}

# conda-smithy keeps these in every .ci_support file when the variant set has them.
ALWAYS_KEEP = frozenset({
    "zip_keys", "pin_run_as_build", "MACOSX_DEPLOYMENT_TARGET", "MACOSX_SDK_VERSION",
    "macos_min_version", "macos_machine", "channel_sources", "channel_targets",
    "docker_image", "build_number_decrement",
})
FALLBACK_DOCKER_IMAGE = "quay.io/condaforge/linux-anvil-comp7"


# -- reading files ------------------------------------------------------------------------

# conda-build reads variant files with PyYAML's BaseLoader: every scalar stays a string.
_BASE_LOADER = getattr(yaml, "CBaseLoader", yaml.BaseLoader)


def load_variant_yaml(text: str, *, source: str | None = None) -> Any:
    """Parse variant-file YAML the way conda-build does: every scalar stays a string.

    With ``source`` (the file's name) malformed YAML, merge-conflict markers included, is a
    UserError naming the file and line; without it the caller handles ``yaml.YAMLError``.
    """
    if source is None:
        return yaml.load(text, Loader=_BASE_LOADER)
    try:
        return yaml.load(text, Loader=_BASE_LOADER)
    except yaml.YAMLError as exc:
        raise UserError(yaml_error_message(source, exc, text)) from None


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


def parse_cbc(text: str, subdir: str, *, source: str, build_subdir: str | None = None,
              environ: Mapping[str, str] | None = None) -> Spec:
    """A conda_build_config.yaml (or migration) text after selectors, all scalars strings."""
    names = selector_namespace(subdir, {}, build_subdir=build_subdir or subdir, environ=environ)
    selected = select_lines(text, names, source=source)
    try:
        data = load_variant_yaml(selected.text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = selected.source_line(mark.line + 1) if mark else "?"
        raise UserError(f"{source}:{line}: not valid YAML after selectors") from exc
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
    if value is None:
        return []
    if isinstance(value, (list, tuple, set)):
        return list(value)
    return [value]


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
            raise UserError(f"{source}: the zip_keys group {list(group)} has lists of different lengths")
        for key in group:
            if key in seen:
                raise UserError(f"{source}: {key} appears in two zip_keys groups; a key may be zipped once")
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
                        values[key] = {**values[key], **{k: v for k, v in value.items()}}
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
                        and not (k in values and len(ensure_list(values[k])) != len(ensure_list(value)))
                        for k in group
                    )
                    if same_length:
                        values[key] = ensure_list(value)
                    missing = [v for v in ensure_list(value) if v not in ensure_list(values[key])]
                    if missing:
                        absent = [k for k in group if k not in spec]
                        raise UserError(
                            f"{source}: {key} is zipped with {absent}, which this file does not set; "
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


# -- CFEP-9 migrations -----------------------------------------------------------------------

@dataclass(frozen=True)
class MigrationFile:
    path: Path
    name: str
    timestamp: str | None
    number: str
    use_local: bool


def read_migration_file(path: Path) -> MigrationFile:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read migration file ({exc.__class__.__name__})") from exc
    data = load_variant_yaml(text, source=str(path)) or {}
    if not isinstance(data, dict):
        raise UserError(f"{path}: a migration file must be a mapping")
    migrator = data.get("__migrator") or {}
    ts = data.get("migrator_ts")
    return MigrationFile(
        path=path,
        name=path.name,
        timestamp=str(ts) if ts is not None else None,
        number=str(migrator.get("migration_number", "1")),
        use_local=str(migrator.get("use_local", "false")).lower() == "true",
    )


@dataclass(frozen=True)
class MigrationPlan:
    apply: tuple[Path, ...]
    closed: tuple[Path, ...]      # feedstock files conda-smithy would delete
    replaced: tuple[str, ...]     # feedstock files superseded by the pinning's copy


def plan_migrations(feedstock: Iterable[MigrationFile], pinning: Iterable[MigrationFile] | None) -> MigrationPlan:
    """conda-smithy's ``set_migration_fns``: keep local, take the pinning's copy, or close."""
    feedstock = sorted(feedstock, key=lambda m: m.name)
    if pinning is None:
        return MigrationPlan(tuple(m.path for m in feedstock), (), ())
    upstream = {(m.name, m.timestamp): m for m in pinning}
    apply, closed, replaced = [], [], []
    for mig in feedstock:
        if mig.use_local or mig.timestamp is None:
            apply.append(mig.path)
        elif (mig.name, mig.timestamp) in upstream:
            theirs = upstream[(mig.name, mig.timestamp)]
            if theirs.number == mig.number:
                apply.append(theirs.path)
                replaced.append(mig.name)
            else:
                apply.append(mig.path)
        else:
            closed.append(mig.path)
    return MigrationPlan(tuple(apply), tuple(closed), tuple(replaced))


def _version_key(value: Any, ordering: Sequence[str] | None = None) -> Any:
    from rattler import Version
    from rattler.exceptions import InvalidVersionError

    if ordering is not None:
        try:
            return (0, ordering.index(value))
        except ValueError as exc:
            raise UserError(f"migration ordering does not list the value {value!r}") from exc
    text = str(value).replace(" ", ".").replace("*", "1")
    try:
        return (1, Version(text))
    except InvalidVersionError:  # not a version: compare as text, as conda-smithy falls back to
        return (2, str(value))


def _sort_key(ordering: Sequence[str] | None):
    return lambda v: _version_key(v, ordering)


def _key_add(left: list, right: list, ordering: Sequence[str] | None = None) -> list:
    if ordering is None:
        common = min(len(left), len(right))
        out = [r if _version_key(l) < _version_key(r) else l for l, r in zip(left[:common], right[:common])]
        for values in (left, right):
            out.extend(values[common:])
        return out
    merged = sorted({ordering.index(v) for v in left} | {ordering.index(v) for v in right})
    longer = max(len(left), len(right))
    if len(merged) < longer:
        if len(merged) == 1:
            return [left[0]] * longer
        raise UserError("ambiguous migration merge: duplicate values under an ordering")
    return [ordering[i] for i in merged[-longer:]]


def _op_key_add(v1: Spec, v2: Spec) -> Spec:
    migrator = v2["__migrator"]
    primary = migrator["primary_key"]
    extra_zip = ensure_list(migrator.get("additional_zip_keys"))
    ordering = migrator.get("ordering") or {}
    if primary not in v2:
        return v1
    if primary not in v1:
        raise UserError(f"migration adds values of {primary}, which the variant set does not have")
    result = {k: (list(v) if isinstance(v, list) else v) for k, v in v1.items()}
    result["zip_keys"] = [list(g) for g in v1.get("zip_keys", [])]
    new_zip: set[str] = set()
    group = [primary]
    for chunk in result["zip_keys"]:
        if primary in chunk:
            group = chunk
    if extra_zip:
        for chunk in result["zip_keys"]:
            if primary in chunk:
                for key in extra_zip:
                    if key not in chunk:
                        chunk.append(key)
                        new_zip.add(key)
                group = list(chunk)
                break
        else:
            group = [primary, *extra_zip]
            result["zip_keys"].append(group)
            new_zip.update(extra_zip)
    for index in range(len(ensure_list(v2[primary]))):
        left = dict(result)
        count = len(left[primary])
        for key in new_zip:
            if len(ensure_list(left[key])) != 1:
                raise UserError(f"migration zips {key} with {primary}, but {key} has several values")
            left[key] = [ensure_list(left[key])[0]] * count
        for key in group:
            if key not in v2:
                raise UserError(f"migration must give {key}, which is zipped with {primary}")
        existing = list(zip(*(ensure_list(left[k]) for k in group)))
        new = tuple(ensure_list(v2[k])[index] for k in group)
        if new in existing:
            continue
        pk = group.index(primary)
        rows = sorted(set(existing) | {new}, key=lambda row: _version_key(row, None))
        rows = sorted(rows, key=lambda row: _version_key(row[pk], ordering.get(primary)))
        for i, key in enumerate(group):
            result[key] = [row[i] for row in rows]
    for key in set(ordering) - new_zip - {primary}:
        result[key] = _key_add(ensure_list(v1[key]), ensure_list(v2[key]), ordering[key])
    return result


def _op_key_remove(v1: Spec, v2: Spec) -> Spec:
    migrator = v2["__migrator"]
    primary = migrator["primary_key"]
    ordering = (migrator.get("ordering") or {}).get(primary)
    if primary not in v2 or primary not in v1:
        return v1
    target = ensure_list(v2[primary])[0]
    if target not in v1[primary]:
        return v1
    keys = sorted(set(v1[primary]), key=_sort_key(ordering))
    keys.remove(target)
    position = {i: v1[primary].index(v) for i, v in enumerate(keys)}
    result = dict(v1)
    result[primary] = keys
    for chunk in v1.get("zip_keys", []):
        if primary in chunk:
            for key in chunk:
                if key != primary:
                    result[key] = [v1[key][j] for _, j in sorted(position.items())]
    return result


def variant_add(v1: Spec, v2: Spec) -> Spec:
    """CFEP-9 variant algebra: apply migration ``v2`` to the combined spec ``v1``."""
    migrator = v2.get("__migrator") or {}
    operation = migrator.get("operation")
    if operation == "key_add":
        return _op_key_add(v1, v2)
    if operation == "key_remove":
        return _op_key_remove(v1, v2)
    if operation:
        raise UserError(f"unknown migration operation {operation!r} (known: key_add, key_remove)")
    ordering = migrator.get("ordering") or {}
    primary = ensure_list(migrator.get("primary_key"))
    left = set(v1) - set(v2)
    right = set(v2) - set(v1) - {"__migrator"}
    joint = set(v1) & set(v2)
    special: Spec = {}
    if "pin_run_as_build" in joint:
        joint.discard("pin_run_as_build")
        special["pin_run_as_build"] = {**v1["pin_run_as_build"], **v2["pin_run_as_build"]}
    if "zip_keys" in joint:
        joint.discard("zip_keys")
        zl = [frozenset(g) for g in zip_groups(v1["zip_keys"])]
        zr = [frozenset(g) for g in zip_groups(v2["zip_keys"])]
        out = []
        for r in sorted(zr, key=len, reverse=True):
            for l in sorted(zl, key=len, reverse=True):
                if l <= r:
                    zl.remove(l)
                    zr.remove(r)
                    out.append(r)
                    break
        out.extend(zl)
        out.extend(zr)
        special["zip_keys"] = sorted((sorted(g) for g in out), key=lambda g: (len(g), str(g)))
    joint_values: Spec = {}
    handled: set[str] = set()
    groups = zip_groups(v1.get("zip_keys")) + zip_groups(v2.get("zip_keys"))
    for pk in primary:
        if pk not in v2:
            continue
        pl, pr = ensure_list(v1[pk]), ensure_list(v2[pk])
        merged = _key_add(pl, pr, ordering.get(pk))
        joint_values[pk] = merged
        group = next((set(g) for g in groups if pk in g), set())
        if not group:
            continue
        chosen = [i for i, v in enumerate(pl + pr) if v in merged]
        for key in group - {pk}:
            both = ensure_list(v1[key]) + ensure_list(v2[key])
            joint_values[key] = [v for i, v in enumerate(both) if i in chosen]
        handled |= group
    for key in joint - handled:
        joint_values[key] = _key_add(ensure_list(v1[key]), ensure_list(v2[key]), ordering.get(key))
    return {
        **{k: v for k, v in v1.items() if k in left},
        **{k: v for k, v in v2.items() if k in right},
        **joint_values,
        **special,
    }


def apply_migrations(spec: Spec, migrations: Sequence[tuple[str, Spec]]) -> Spec:
    """Apply migrations in ``migrator_ts`` order (then file name), as conda-smithy does."""
    def order(item: tuple[str, Spec]) -> tuple[float, str]:
        try:
            ts = float(item[1].get("migrator_ts", -1.0))
        except (TypeError, ValueError) as exc:
            raise UserError(f"{item[0]}: migrator_ts must be a number") from exc
        return ts, item[0]

    for _, migration in sorted(migrations, key=order):
        migration = {k: v for k, v in migration.items() if k != "migrator_ts"}
        if migration:
            spec = variant_add(spec, migration)
    return spec


# Keys kept even when no recipe text names them.
_STRUCTURAL = frozenset({
    "zip_keys", "pin_run_as_build", "extend_keys", "ignore_version", "ignore_build_only_deps",
    "target_platform", "github_actions_labels", "CONDA_BUILD_SYSROOT", "python_min",
    "mpi", "mpich", "openmpi", "msmpi", "mpi_serial", "impi", "replacements",
}) | ALWAYS_KEEP
_TOOLCHAIN_KEY = re.compile(r"(.*?)_(compiler|stdlib)(_version)?$|cdt_")


def prune_spec(spec: Spec, texts: Iterable[str]) -> Spec:
    """Drop keys no recipe text can use, before exploding.

    conda-build only counts a key as used when its name (or, for compilers, the language)
    occurs in the recipe or a build script, so a key absent from all of them never reaches
    a .ci_support file; keeping it would only multiply the variants to render (the global
    pinning has hundreds of keys).
    """
    corpus = "\n".join(texts)
    corpus = corpus + "\n" + corpus.replace("-", "_")
    keep = {
        k for k in spec
        if k in _STRUCTURAL or _TOOLCHAIN_KEY.match(k) or k in corpus
    }
    out = {k: v for k, v in spec.items() if k in keep}
    groups = [[k for k in g if k in keep] for g in zip_groups(spec.get("zip_keys"))]
    groups = [g for g in groups if g]
    if groups:
        out["zip_keys"] = groups
    else:
        out.pop("zip_keys", None)
    return out


# -- conda-smithy's CI-job split -------------------------------------------------------------

def merge_deployment_target(variants: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """On osx, c_stdlib_version and MACOSX_DEPLOYMENT_TARGET become their maximum."""
    from rattler import Version
    from rattler.exceptions import InvalidVersionError

    out = []
    for variant in variants:
        variant = dict(variant)
        if str(variant.get("target_platform", "")).startswith("osx") and "c_stdlib_version" in variant:
            stdlib = variant["c_stdlib_version"]
            macdt = variant.get("MACOSX_DEPLOYMENT_TARGET", stdlib)
            sdk = variant.get("MACOSX_SDK_VERSION", stdlib)
            try:
                if Version(stdlib) < Version(macdt):
                    stdlib = macdt
                if Version(sdk) < Version(stdlib):
                    sdk = stdlib
            except InvalidVersionError as exc:
                raise UserError(
                    "c_stdlib_version/MACOSX_DEPLOYMENT_TARGET/MACOSX_SDK_VERSION must each be one version"
                ) from exc
            variant.update(c_stdlib_version=stdlib, MACOSX_DEPLOYMENT_TARGET=stdlib, MACOSX_SDK_VERSION=sdk)
        out.append(variant)
    return out


def _freeze(variant: Mapping[str, Any]) -> tuple:
    def frozen(v: Any) -> Any:
        if isinstance(v, Mapping):
            return tuple(sorted((k, frozen(x)) for k, x in v.items()))
        if isinstance(v, (list, tuple)):
            return tuple(frozen(x) for x in v)
        return v

    return tuple(sorted((k, frozen(v)) for k, v in variant.items()))


def _unique(variants: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    seen: dict[tuple, dict[str, Any]] = {}
    for v in variants:
        seen.setdefault(_freeze(v), dict(v))
    return list(seen.values())


def _used_values_by_input_order(inputs: Spec, used: Spec, keep: set[str]) -> tuple[Spec, set[str]]:
    """Values of the kept keys: zipped rows in input order, limited to rows some output used."""
    values = {k: inputs[k] for k in keep if k in inputs}
    zipped: set[str] = set()
    for keyset in zip_groups(inputs.get("zip_keys")):
        zipped |= set(keyset)
        if not all(k in inputs for k in keyset):
            continue
        rows = list(zip(*(inputs[k] for k in keyset)))
        present = [k for k in keyset if k in used]
        if not present:
            continue
        index = [keyset.index(k) for k in present]
        trimmed = [tuple(row[i] for i in index) for row in rows]
        wanted = set(zip(*(used[k] for k in present)))
        final = [row for row in trimmed if row in wanted]
        for i, key in enumerate(present):
            if key in keep:
                values[key] = [row[i] for row in final]
    for key, value in used.items():
        if key in keep and key not in zipped:
            values[key] = value
    return values, zipped


def _trim_zip_keys(values: Spec) -> None:
    groups = [[k for k in g if k in values] for g in zip_groups(values.get("zip_keys"))]
    groups = [g for g in groups if len(g) > 1]
    if groups:
        values["zip_keys"] = groups
    else:
        values.pop("zip_keys", None)


def _trim_pin_run_as_build(values: Spec) -> None:
    pins = values.get("pin_run_as_build") or {}
    kept = {k: v for k, v in pins.items() if k.replace("-", "_") in values}
    if kept:
        values["pin_run_as_build"] = kept
    else:
        values.pop("pin_run_as_build", None)


def _sort_config(config: Spec, groups: Sequence[Sequence[str]]) -> None:
    """Deterministic value order: zipped rows sorted together, other lists sorted."""
    order: dict[str, list[int]] = {}
    for group in groups:
        group = [k for k in group if k in config]
        if not group:
            continue
        rows = [tuple(config[k][i] for k in group) for i in range(len(config[group[0]]))]
        positions = sorted(range(len(rows)), key=rows.__getitem__)
        for key in group:
            order[key] = positions
    for key, value in list(config.items()):
        if key == "pin_run_as_build" and isinstance(value, Mapping):
            config[key] = {
                pkg: {pin: value[pkg][pin] for pin in sorted(value[pkg], reverse=True)}
                for pkg in sorted(value)
            }
        elif isinstance(value, (list, tuple, set)):
            items = list(value)
            if key in order:
                config[key] = [items[i] for i in order[key]]
            else:
                config[key] = sorted(items)


def break_up(loop_vars: set[str], values: Spec) -> list[Spec]:
    """One config per combination of the job-splitting keys (zipped keys split together)."""
    values = {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in values.items()}
    groups = zip_groups(values.get("zip_keys"))
    handled: set[str] = set()
    zipped_configs: list[list[Spec]] = []
    dimensions: list[list[Spec]] = []
    for key in sorted(loop_vars):
        if key in handled:
            continue
        group = next((g for g in groups if key in g), None)
        if group is not None:
            handled.update(group)
            by_top: dict[tuple, list[Spec]] = {}
            for index in range(len(values[key])):
                top = tuple(values[k][index] for k in group if k in loop_vars)
                by_top.setdefault(top, []).append({k: [values[k][index]] for k in group})
            merged = []
            for parts in by_top.values():
                combined: Spec = {}
                for part in parts:
                    for k, v in part.items():
                        combined.setdefault(k, []).extend(v)
                merged.append(combined)
            zipped_configs.append(merged)
            for k in group:
                del values[k]
        else:
            dimensions.append([{key: [v]} for v in values[key]])
            del values[key]
    groups_now = zip_groups(values.get("zip_keys"))
    _sort_config(values, groups_now)
    for configs in zipped_configs:
        for config in configs:
            _sort_config(config, groups_now)
    dimensions.extend(zipped_configs)
    if values:
        dimensions.append([values])
    out = []
    for combo in itertools.product(*dimensions):
        config: Spec = {}
        for part in combo:
            config.update(part)
        out.append(config)
    return out


def package_key(config: Mapping[str, Any], loop_vars: Iterable[str]) -> str:
    key = "".join(f"{k}{config[k][0]}" for k in sorted(loop_vars) if k != "target_platform")
    return key.replace("*", "_").replace(" ", "_")


@dataclass(frozen=True)
class JobName:
    name: str        # file name without .yaml
    short: str       # CI job / artifact name


def job_name(platform_arch: str, config: Mapping[str, Any], loop_vars: Iterable[str], feedstock: str) -> JobName:
    """File and job names (feedstock-facts.md §2.2): sanitised, short form, Windows path cap."""
    name = f"{platform_arch}_{package_key(config, loop_vars)}"
    name = re.sub(r"[<>:?*,\"\/\|\\]", "", name)
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    short = name if len(name) < 49 else f"{name[:40]}_h{digest}"
    repo = f"{feedstock}-feedstock"
    outer = len(f"C:/Users/runnerx/_work/{repo}/{repo}/.ci_support/")
    if outer + len(f"{name}.yaml") > 259:
        name = name[: 259 - outer - 15] + "_h" + digest
    return JobName(name, short)


@dataclass(frozen=True)
class ForgeSettings:
    """What of conda-forge.yml the job split needs."""

    build_platform: Mapping[str, str] = field(default_factory=dict)   # linux_aarch64 -> linux_64
    providers: Mapping[str, str | None] = field(default_factory=dict)
    github_actions: bool = False
    os_version: Mapping[str, str] = field(default_factory=dict)
    fallback_image: str = FALLBACK_DOCKER_IMAGE

    def build_of(self, platform_arch: str) -> str:
        return self.build_platform.get(platform_arch, platform_arch)

    def platforms(self) -> list[str]:
        found = []
        for plat in ("linux_64", "osx_64", "win_64"):
            if self.providers.get(plat, "azure") not in (None, "None", False):
                found.append(plat)
        for plat, provider in self.providers.items():
            if plat not in found and provider not in (None, "None", False):
                found.append(plat)
        return sorted(found)


def read_forge_settings(data: Mapping[str, Any]) -> ForgeSettings:
    providers = dict(data.get("provider") or {})
    gha = any(v == "github_actions" for v in providers.values()) or bool(
        (data.get("github_actions") or {}).get("self_hosted")
    )
    docker = data.get("docker") or {}
    return ForgeSettings(
        build_platform={str(k): str(v) for k, v in (data.get("build_platform") or {}).items()},
        providers=providers,
        github_actions=gha,
        os_version={str(k): str(v) for k, v in (data.get("os_version") or {}).items() if v},
        fallback_image=str(docker.get("fallback_image") or FALLBACK_DOCKER_IMAGE),
    )


@dataclass(frozen=True)
class CiJob:
    name: str
    short_name: str
    platform: str          # target subdir, e.g. linux-aarch64
    build_platform: str    # e.g. linux-64
    loop_vars: tuple[str, ...]
    config: Mapping[str, Any]


def collapse(outputs: Sequence[Any], input_variants: Sequence[Mapping[str, Any]], *,
             github_actions: bool, noarch_only: bool = False, recipe_text: str = "") -> tuple[list[Spec], set[str]]:
    """conda-smithy's ``_collapse_subpackage_variants`` over our rendered outputs."""
    used: set[str] = set()
    all_variants: list[Mapping[str, Any]] = []
    for out in outputs:
        used |= set(out.used_vars)
        all_variants.extend(out.variants)
        all_variants.append(out.variant)
    if "mpi" in used:
        used |= {"mpich", "openmpi", "msmpi", "mpi_serial", "impi"}
    if re.search(r"(?m)^.*\{\{ python_min \}\}", recipe_text):
        used.add("python_min")
    all_variants = _unique(merge_deployment_target(all_variants))
    loop_vars = set.intersection(*(set(o.top_level_loop_vars) for o in outputs))
    top_vars = set.intersection(*(set(o.top_level_vars) for o in outputs))
    if "target_platform" in used:
        loop_vars.add("target_platform")
    inputs = squish(merge_deployment_target(input_variants))
    used_values = squish(all_variants)
    preserve = loop_vars - used
    keep = set(ALWAYS_KEEP)
    if not noarch_only:
        keep.add("target_platform")
    if github_actions:
        keep.add("github_actions_labels")
    used |= keep | top_vars
    values, zipped = _used_values_by_input_order(inputs, used_values, used)
    for key in preserve:
        if key not in zipped:
            values[key] = inputs[key]
    _trim_zip_keys(values)
    _trim_pin_run_as_build(values)
    values = squish(_unique(explode(values)))
    _trim_zip_keys(values)
    _trim_pin_run_as_build(values)
    configs = break_up(loop_vars, values)
    kept = [c for c in configs if not _config_skipped(c, loop_vars, outputs)]
    return kept, loop_vars


def _config_skipped(config: Mapping[str, Any], loop_vars: set[str], outputs: Sequence[Any]) -> bool:
    for out in outputs:
        variant = out.variant
        for key in loop_vars:
            if key not in variant:
                break
            value = variant[key]
            if isinstance(value, (list, set)) and set(config[key]) - set(value):
                break
            if isinstance(value, (int, float, str)) and set(config[key]) - {value}:
                break
        else:
            return False
    return True


def finalize_config(config: Spec, build_platform: str, fallback_image: str) -> Spec:
    """Linux builds: keep only the first docker image (and the first of keys zipped with it)."""
    config = dict(config)
    if build_platform.startswith("linux"):
        images = ensure_list(config.get("docker_image"))
        config["docker_image"] = [images[0]] if images else [fallback_image]
        for group in zip_groups(config.get("zip_keys")):
            if "docker_image" in group:
                for key in group:
                    if key != "docker_image":
                        config[key] = [config[key][0]]
    return config
