"""conda-smithy's CI-job split: rendered outputs and their variants in, one config per CI job.

It follows conda-smithy's ``_collapse_subpackage_variants`` / ``dump_subspace_config_files``
(facts in ../shared/reference/feedstock-facts.md §2): keys that every output uses at top level
and that vary split jobs; the file holds every used key plus a few always-kept ones, trimmed
``zip_keys``/``pin_run_as_build``, and the first ``docker_image``.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tools.foundation.errors import UserError
from tools.recipe.variant_config import Spec, ensure_list, explode, freeze, squish, zip_groups

# conda-smithy keeps these in every .ci_support file when the variant set has them.
ALWAYS_KEEP = frozenset(
    {
        "zip_keys",
        "pin_run_as_build",
        "MACOSX_DEPLOYMENT_TARGET",
        "MACOSX_SDK_VERSION",
        "macos_min_version",
        "macos_machine",
        "channel_sources",
        "channel_targets",
        "docker_image",
        "build_number_decrement",
    }
)


# The keys an ``mpi`` variant brings along (``_collapse_subpackage_variants``' MPI hack).
MPI_KEYS = ("mpich", "openmpi", "msmpi", "mpi_serial", "impi")

# Keys kept even when no recipe text names them.
_STRUCTURAL = (
    frozenset(
        {
            "zip_keys",
            "pin_run_as_build",
            "extend_keys",
            "ignore_version",
            "ignore_build_only_deps",
            "target_platform",
            "github_actions_labels",
            "CONDA_BUILD_SYSROOT",
            "python_min",
            "mpi",
            "mpich",
            "openmpi",
            "msmpi",
            "mpi_serial",
            "impi",
            "replacements",
        }
    )
    | ALWAYS_KEEP
)
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
    keep = {k for k in spec if k in _STRUCTURAL or _TOOLCHAIN_KEY.match(k) or k in corpus}
    out = {k: v for k, v in spec.items() if k in keep}
    groups = [[k for k in g if k in keep] for g in zip_groups(spec.get("zip_keys"))]
    groups = [g for g in groups if g]
    if groups:
        out["zip_keys"] = groups
    else:
        out.pop("zip_keys", None)
    return out


def merge_deployment_target(variants: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """On osx, c_stdlib_version and MACOSX_DEPLOYMENT_TARGET become their maximum."""
    from rattler import Version
    from rattler.exceptions import InvalidVersionError

    out = []
    for variant in variants:
        variant = dict(variant)
        if (
            str(variant.get("target_platform", "")).startswith("osx")
            and "c_stdlib_version" in variant
        ):
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
                    "c_stdlib_version/MACOSX_DEPLOYMENT_TARGET/MACOSX_SDK_VERSION "
                    "must each be one version"
                ) from exc
            variant.update(
                c_stdlib_version=stdlib, MACOSX_DEPLOYMENT_TARGET=stdlib, MACOSX_SDK_VERSION=sdk
            )
        out.append(variant)
    return out


def _unique(variants: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    seen: dict[tuple, dict[str, Any]] = {}
    for v in variants:
        seen.setdefault(freeze(v), dict(v))
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
    name: str  # file name without .yaml
    short: str  # CI job / artifact name


def job_name(
    platform_arch: str, config: Mapping[str, Any], loop_vars: Iterable[str], feedstock: str
) -> JobName:
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
class CiJob:
    name: str
    short_name: str
    platform: str  # target subdir, e.g. linux-aarch64
    build_platform: str  # e.g. linux-64
    loop_vars: tuple[str, ...]
    config: Mapping[str, Any]


def collapse(
    outputs: Sequence[Any],
    input_variants: Sequence[Mapping[str, Any]],
    *,
    github_actions: bool,
    noarch_only: bool = False,
    recipe_text: str = "",
) -> tuple[list[Spec], set[str]]:
    """conda-smithy's ``_collapse_subpackage_variants`` over our rendered outputs."""
    used: set[str] = set()
    all_variants: list[Mapping[str, Any]] = []
    for out in outputs:
        used |= set(out.used_vars)
        all_variants.extend(out.variants)
        all_variants.append(out.variant)
    if "mpi" in used:
        used |= set(MPI_KEYS)
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
