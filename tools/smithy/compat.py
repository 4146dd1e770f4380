"""What conda-smithy's rerender of a v1 ``recipe.yaml`` receives from rattler-build-conda-compat.

conda-smithy (``configure_feedstock.py``, ``_render_ci_provider``) renders a feedstock whose
conda-forge.yml says ``conda_build_tool: rattler-build`` through compat's ``render.py``
(rattler-build-conda-compat 1.4.10, @2f2d3e9) instead of conda-build, then splits the CI
jobs with the same ``_collapse_subpackage_variants`` as for meta.yaml
(:func:`tools.smithy.jobs.collapse`). compat hands it one ``MetaData`` per package that
``rattler-build build --render-only`` lists; this module is what smithy reads of each,
computed as compat computes it:

- ``render_recipes`` runs rattler-build with the build platform equal to the target and the
  whole migrated spec as the one ``-m`` file (the caller renders: tools/render/v1.py);
- ``get_used_vars``/``get_used_variant``: the keys (and values) of the package's
  ``build_configuration.variant``, ``-`` read as ``_``, minus the names in
  ``build_configuration.subpackages`` (the outputs rendered up to this one), minus
  ``target_platform`` for a noarch package; booleans written ``true``/``false``;
- ``render``/``rattler_get_package_variants``: the spec reduced to the used keys and every
  zipped key (``_reduce_variants``), combined over conda-build's defaults, exploded and
  filtered (``filter_combined_spec_to_used_keys``), the unused keys put back at their first
  value: the package's ``input_variants``; those agreeing with its used variant are its
  ``variants``, the first its ``variant``;
- ``get_used_loop_vars``: the used keys that vary over its ``input_variants``.

Pure functions over specs; no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tools.foundation.errors import UserError
from tools.recipe.variant_config import (
    DEFAULT_VARIANT,
    Spec,
    combine_specs,
    default_variant,
    ensure_list,
    explode,
    zip_groups,
)
from tools.smithy.jobs import ALWAYS_KEEP, MPI_KEYS


@dataclass(frozen=True)
class RenderedPackage:
    """One entry of ``rattler-build build --render-only``'s JSON, as far as compat reads it."""

    name: str
    version: str
    build_string: str
    noarch: bool
    variant: Mapping[str, Any]  # build_configuration.variant: the keys the package uses
    subpackages: tuple[str, ...]  # build_configuration.subpackages: outputs rendered so far
    feedstock_name: str | None = None  # recipe.extra.feedstock-name


@dataclass(frozen=True)
class CompatMeta:
    """compat's ``MetaData`` of one rendered package, as ``_collapse_subpackage_variants`` and
    ``dump_subspace_config_files`` read it (the attribute names of tools/smithy/jobs.py)."""

    dist: str  # name-version-build_string: what smithy sorts the packages by
    noarch: bool
    used_vars: frozenset[str]
    top_level_vars: frozenset[str]  # get_used_vars(force_top_level=True): the same set
    top_level_loop_vars: frozenset[str]
    variant: Mapping[str, Any]
    variants: tuple[Mapping[str, Any], ...]
    input_variants: tuple[Mapping[str, Any], ...]
    feedstock_name: str | None


def _normalized(key: str) -> str:
    return key.replace("-", "_")


def used_variant(package: RenderedPackage) -> dict[str, Any]:
    """compat's ``get_used_variant``."""
    subpackages = {_normalized(p) for p in package.subpackages}
    used: dict[str, Any] = {}
    for key, value in package.variant.items():
        key = _normalized(key)
        if key in subpackages:
            continue  # output names are no variant keys of the package
        # conda-build's variants are strings: compat writes booleans back as they read
        used[key] = "true" if value is True else "false" if value is False else value
    if package.noarch:
        used.pop("target_platform", None)
    return used


def _reduce_variants(used_vars: set[str], spec: Spec) -> tuple[Spec, Spec]:
    """compat's ``_reduce_variants``: the spec's used and zipped keys, and the first value of
    every other key (put back after exploding, so the package variants have every key)."""
    keep = set(used_vars) | {"zip_keys"}
    keep |= {k for group in zip_groups(spec.get("zip_keys")) for k in group}
    reduced = {k: v for k, v in spec.items() if k in keep}
    if not reduced:
        return dict(spec), {}
    unused = {}
    for key, value in spec.items():
        if key not in reduced:
            unused[key] = value[0] if isinstance(value, list) and value else value
    return reduced, unused


def _extend_keys(spec: Mapping[str, Any]) -> set[str]:
    """conda-build's ``_get_extend_keys``: keys merged, never filtered."""
    keys = {"zip_keys", "extend_keys", *DEFAULT_VARIANT["extend_keys"]}
    return keys | set(ensure_list(spec.get("extend_keys")))


def package_variants(used_vars: set[str], spec: Spec, subdir: str) -> list[dict[str, Any]]:
    """compat's ``rattler_get_package_variants``: conda-build's defaults under the reduced spec
    (``get_package_combined_spec``: no variant file of the recipe's), exploded, filtered on
    the reduced spec's values (``filter_combined_spec_to_used_keys``), unused keys put back."""
    reduced, unused = _reduce_variants(used_vars, spec)
    combined = combine_specs([("internal_defaults", default_variant(subdir)), ("spec", reduced)])
    variants = explode(combined)
    extend = _extend_keys(combined)
    for key, values in reduced.items():
        if key in extend or isinstance(values, Mapping):
            continue
        kept = [v for v in variants if v.get(key) is not None and v.get(key) in values]
        variants = kept or variants  # a filter that kills every variant is ignored
    for variant in variants:
        variant.update(unused)
    return variants


def loop_vars(variants: Sequence[Mapping[str, Any]], among: set[str]) -> set[str]:
    """conda-build's ``get_vars`` limited to ``among`` (compat's ``get_used_loop_vars``
    intersects it with the used keys): the keys whose value differs between the variants."""
    first, *others = variants
    special = {"pin_run_as_build", "zip_keys", "ignore_version"}
    special |= set(ensure_list(first.get("extend_keys")))
    return {
        key
        for key in (among & set(first)) - special
        if any(first[key] != other.get(key) for other in others)
    }


def compat_meta(
    package: RenderedPackage,
    spec: Spec,
    subdir: str,
    computed: dict[frozenset[str], tuple[tuple[dict[str, Any], ...], frozenset[str]]] | None = None,
) -> CompatMeta:
    """compat's ``render`` of one package: its variants, as smithy's split reads them.
    ``computed`` keeps the package variants and loop keys of each set of used keys: the
    packages of one platform share a handful of them."""
    used = used_variant(package)
    used_vars = frozenset(used)
    computed = {} if computed is None else computed
    if used_vars not in computed:
        everything = tuple(package_variants(set(used_vars), spec, subdir))
        computed[used_vars] = everything, frozenset(loop_vars(everything, set(used_vars)))
    everything, loops = computed[used_vars]
    wanted = {k: str(v) for k, v in used.items()}
    agreeing = tuple(
        variant
        for variant in everything
        if all(str(variant[k]) == v for k, v in wanted.items() if k in variant)
    )
    if not agreeing:
        # compat takes package_variants[0] and fails with an IndexError here
        raise UserError(
            f"{package.name} {package.build_string} ({subdir}): rattler-build rendered it with "
            f"variant values the combined spec does not have ({dict(used)}); "
            "conda-smithy's rerender stops here too"
        )
    return CompatMeta(
        dist=f"{package.name}-{package.version}-{package.build_string}",
        noarch=package.noarch,
        used_vars=used_vars,
        top_level_vars=used_vars,
        top_level_loop_vars=loops,
        variant=agreeing[0],
        variants=agreeing,
        input_variants=everything,
        feedstock_name=package.feedstock_name,
    )


# Keys conda-smithy keeps in a CI job's file whether or not a package uses them
# (``_collapse_subpackage_variants``' always-kept keys, target_platform and the runner labels,
# ``python_min`` when the recipe names it, the MPI family, and c_stdlib_version, which the osx
# deployment target merges with).
_SMITHY_KEYS = frozenset(
    {
        *ALWAYS_KEEP,
        "target_platform",
        "github_actions_labels",
        "python_min",
        "c_stdlib_version",
        *MPI_KEYS,
    }
)


def compat_metas(
    packages: Sequence[RenderedPackage], spec: Spec, subdir: str, *, keep_noarch: bool
) -> list[CompatMeta]:
    """The metas smithy keeps for a platform, sorted by ``dist`` as ``_render_ci_provider``
    sorts them; noarch packages only where conda-forge.yml's ``noarch_platforms`` builds them.

    compat puts every key no package uses back into each variant at its first value, and
    smithy then keeps only the used, zipped and always-kept keys of them: the others (most of
    the pinning's 500) are left out here from the start, which changes no file and saves most
    of what a real rerender spends."""
    kept = [p for p in packages if keep_noarch or not p.noarch]
    relevant = set(_SMITHY_KEYS) | {"zip_keys"}
    for package in kept:
        relevant |= set(used_variant(package))
    relevant |= {k for group in zip_groups(spec.get("zip_keys")) for k in group}
    trimmed = {k: v for k, v in spec.items() if k in relevant}
    computed: dict = {}
    metas = [compat_meta(p, trimmed, subdir, computed) for p in kept]
    return sorted(metas, key=lambda m: m.dist)


def feedstock_name(metas: Sequence[CompatMeta]) -> str:
    """The repository name ``dump_subspace_config_files`` shortens Windows paths by:
    ``extra.feedstock-name`` of the first package, else ``meta["package"]["name"]``, which a
    compat MetaData built from rattler-build's JSON does not have (its recipe is under
    ``recipe``), so ``None``, as smithy formats it."""
    first = metas[0].feedstock_name if metas else None
    return first if first else "None"
