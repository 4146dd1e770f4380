"""conda-smithy's CFEP-9 migrations: which migration files apply, and the variant algebra
(``variant_add``) that applies them to a combined conda-build spec."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.foundation.errors import UserError
from tools.recipe.variant_config import Spec, ensure_list, load_variant_yaml, zip_groups


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
    closed: tuple[Path, ...]  # feedstock files conda-smithy would delete
    replaced: tuple[str, ...]  # feedstock files superseded by the pinning's copy
    why_closed: tuple[str, ...] = ()  # per closed file: why, and how to keep it

    def reason(self, path: Path) -> str:
        for closed, why in zip(self.closed, self.why_closed, strict=False):
            if closed == path:
                return why
        return ""


def plan_migrations(
    feedstock: Iterable[MigrationFile], pinning: Iterable[MigrationFile] | None
) -> MigrationPlan:
    """conda-smithy's ``set_migration_fns``: keep local, take the pinning's copy, or close."""
    feedstock = sorted(feedstock, key=lambda m: m.name)
    if pinning is None:
        return MigrationPlan(tuple(m.path for m in feedstock), (), ())
    pinning = list(pinning)
    upstream = {(m.name, m.timestamp): m for m in pinning}
    by_name = {m.name: m for m in pinning}
    apply, closed, replaced, why = [], [], [], []
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
            why.append(_why_closed(mig, by_name.get(mig.name)))
    return MigrationPlan(tuple(apply), tuple(closed), tuple(replaced), tuple(why))


def _why_closed(mig: MigrationFile, theirs: MigrationFile | None) -> str:
    """conda-smithy deletes a timestamped migration the pinning does not carry open: say
    which of the two cases it is, and the two ways to keep the file."""
    if theirs is None:
        found = f"the pinning has no open migration named {mig.path.name}"
    else:
        found = (
            f"the pinning's {mig.path.name} has migrator_ts {theirs.timestamp}, "
            f"this one {mig.timestamp}"
        )
    return (
        f"{found}, so conda-smithy takes it for a closed migration and deletes it; to keep "
        "it, update the pinning to one that carries it, or set `use_local: true` under "
        "`__migrator:`"
    )


def _ordered_index(ordering: Sequence[str], value: Any, key: str) -> int:
    # conda-smithy indexes the ordering the same way and fails with a bare ValueError; a
    # migration's ordering must list every value the pinning or an earlier migration has.
    try:
        return list(ordering).index(value)
    except ValueError:
        raise UserError(
            f"its `__migrator: ordering: {key}:` does not list {value!r}, a value the pinning "
            "or an earlier migration has; add it to the ordering (conda-forge's migrations list "
            "every value, oldest first)"
        ) from None


def _version_key(value: Any, ordering: Sequence[str] | None = None, key: str = "") -> Any:
    from rattler import Version
    from rattler.exceptions import InvalidVersionError

    if ordering is not None:
        return (0, _ordered_index(ordering, value, key))
    text = str(value).replace(" ", ".").replace("*", "1")
    try:
        return (1, Version(text))
    except InvalidVersionError:  # not a version: compare as text, as conda-smithy falls back to
        return (2, str(value))


def _sort_key(ordering: Sequence[str] | None, key: str):
    return lambda v: _version_key(v, ordering, key)


def _key_add(left: list, right: list, ordering: Sequence[str] | None, key: str) -> list:
    if ordering is None:
        common = min(len(left), len(right))
        out = [
            theirs if _version_key(ours) < _version_key(theirs) else ours
            for ours, theirs in zip(left[:common], right[:common])
        ]
        for values in (left, right):
            out.extend(values[common:])
        return out
    merged = sorted({_ordered_index(ordering, v, key) for v in (*left, *right)})
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
                raise UserError(
                    f"migration zips {key} with {primary}, but {key} has several values"
                )
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
        rows = sorted(rows, key=lambda row: _version_key(row[pk], ordering.get(primary), primary))
        for i, key in enumerate(group):
            result[key] = [row[i] for row in rows]
    for key in set(ordering) - new_zip - {primary}:
        result[key] = _key_add(ensure_list(v1[key]), ensure_list(v2[key]), ordering[key], key)
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
    keys = sorted(set(v1[primary]), key=_sort_key(ordering, primary))
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
        for right_group in sorted(zr, key=len, reverse=True):
            for left_group in sorted(zl, key=len, reverse=True):
                if left_group <= right_group:
                    zl.remove(left_group)
                    zr.remove(right_group)
                    out.append(right_group)
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
        merged = _key_add(pl, pr, ordering.get(pk), pk)
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
        joint_values[key] = _key_add(
            ensure_list(v1[key]), ensure_list(v2[key]), ordering.get(key), key
        )
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

    for name, migration in sorted(migrations, key=order):
        migration = {k: v for k, v in migration.items() if k != "migrator_ts"}
        if migration:
            try:
                spec = variant_add(spec, migration)
            except UserError as exc:
                raise UserError(f"{name}: {exc}") from None
    return spec
