"""What rattler-build-conda-compat hands conda-smithy of a v1 recipe's render
(tools/smithy/compat.py), one rule of compat's render.py each; the whole path is held against
the real conda-smithy by tests/e2e/test_matrix_v1_smithy.py."""

from __future__ import annotations

from tools.smithy.compat import (
    RenderedPackage,
    compat_meta,
    compat_metas,
    feedstock_name,
    package_variants,
    used_variant,
)

SPEC = {
    "python": ["3.12.* *_cpython", "3.13.* *_cp313"],
    "is_python_min": ["true", "false"],
    "zlib": ["1"],
    "flavor": ["a", "b"],
    "unused_key": ["first", "second"],
    "target_platform": ["linux-64"],
    "zip_keys": [["python", "is_python_min"]],
}


def _package(
    name: str, variant: dict, subpackages=(), noarch=False, build="h0_0"
) -> RenderedPackage:
    return RenderedPackage(name, "1.0", build, noarch, variant, tuple(subpackages))


def test_an_output_name_among_the_used_keys_is_dropped_once_rendered() -> None:
    variant = {"libfoo": "1.0 h1_0", "py-bar": "2", "zlib": "1"}
    used = used_variant(_package("py-bar", variant, subpackages=("libfoo", "py-bar")))
    assert used == {"zlib": "1"}


def test_an_output_rendered_later_keeps_its_key() -> None:
    # build_configuration.subpackages holds the outputs rendered up to this one only
    used = used_variant(_package("first", {"later_output": "5"}, subpackages=("first",)))
    assert used == {"later_output": "5"}


def test_dashes_read_as_underscores_and_booleans_as_conda_build_strings() -> None:
    used = used_variant(_package("x", {"some-key": True, "other": False}, subpackages=("x",)))
    assert used == {"some_key": "true", "other": "false"}


def test_a_noarch_package_uses_no_target_platform() -> None:
    package = _package("x", {"target_platform": "linux-64", "zlib": "1"}, noarch=True)
    assert used_variant(package) == {"zlib": "1"}


def test_package_variants_explode_used_and_zipped_keys_and_take_the_first_of_the_rest() -> None:
    variants = package_variants({"zlib"}, SPEC, "linux-64")
    # python and is_python_min are zipped: exploded although unused; flavor is not used
    assert [(v["python"], v["is_python_min"]) for v in variants] == [
        ("3.12.* *_cpython", "true"),
        ("3.13.* *_cp313", "false"),
    ]
    assert {v["flavor"] for v in variants} == {"a"}
    assert {v["unused_key"] for v in variants} == {"first"}
    assert {v["target_platform"] for v in variants} == {"linux-64"}


def test_a_meta_keeps_the_variants_of_its_used_values_and_loops_over_the_varying_used_keys() -> (
    None
):
    package = _package("p", {"python": "3.13.* *_cp313", "flavor": "b"}, subpackages=("p",))
    meta = compat_meta(package, SPEC, "linux-64")
    assert [v["python"] for v in meta.variants] == ["3.13.* *_cp313"]
    assert {v["flavor"] for v in meta.variants} == {"b"}
    assert meta.variant == meta.variants[0]
    # input_variants: every combination of the used and zipped keys
    assert len(meta.input_variants) == 4
    assert meta.top_level_loop_vars == {"python", "flavor"}


def test_metas_are_sorted_by_dist_and_noarch_kept_only_where_asked() -> None:
    packages = [
        _package("zeta", {"zlib": "1"}, subpackages=("zeta",)),
        _package("alpha", {"zlib": "1"}, subpackages=("zeta", "alpha")),
        _package("data", {}, subpackages=("zeta", "alpha", "data"), noarch=True),
    ]
    kept = compat_metas(packages, SPEC, "linux-64", keep_noarch=False)
    assert [m.dist for m in kept] == ["alpha-1.0-h0_0", "zeta-1.0-h0_0"]
    assert len(compat_metas(packages, SPEC, "linux-64", keep_noarch=True)) == 3


def test_the_feedstock_name_of_a_recipe_without_one_is_none_as_smithy_formats_it() -> None:
    assert feedstock_name(
        compat_metas([_package("a", {})], SPEC, "linux-64", keep_noarch=False)
    ) == ("None")
