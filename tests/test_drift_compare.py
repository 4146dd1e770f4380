"""Relating two conda version specs: the method behind ok / looser / stricter / conflict."""

from __future__ import annotations

import pytest

from tools.drift import compare
from tools.foundation.errors import UserError


def test_identical_ranges_are_equivalent() -> None:
    assert compare.relate(">=1.13.3", ">=1.13.3").equivalent


def test_prefix_match_equals_the_range_conda_forge_writes_for_it() -> None:
    # conda's 1.13.* admits 1.13dev0 and >=1.13 does not; that pre-release quirk is not drift.
    assert compare.relate("1.13.*", ">=1.13,<1.14.0a0").equivalent


def test_unpinned_recipe_admits_what_upstream_rejects_just_below_its_bound() -> None:
    relation = compare.relate(">=1.13.3", None)
    assert not relation.upstream_only
    assert compare.pick_witness(relation.recipe_only, relation.both) == "1.13.2"


def test_exclusion_upstream_makes_is_found_between_bounds() -> None:
    # The 2.5.1 README's sympy row: upstream >=1.13.1,!=1.13.2, a recipe that forgot the hole.
    relation = compare.relate(">=1.13.1,!=1.13.2", ">=1.13.1")
    assert relation.recipe_only == ("1.13.2",)
    assert not relation.upstream_only


def test_exact_upstream_pin_inside_a_recipe_range_makes_the_recipe_looser() -> None:
    relation = compare.relate("==1.13.1", ">=1.13.1,!=1.13.2")
    assert relation.both == ("1.13.1",)
    assert "1.13.3" in relation.recipe_only and not relation.upstream_only


def test_recipe_upper_bound_rejects_newer_versions_upstream_admits() -> None:
    relation = compare.relate(">=77.0.3", ">=77.0.3,<82")
    assert compare.pick_witness(relation.upstream_only, relation.both) == "82"
    assert not relation.recipe_only


def test_ranges_without_common_version_are_disjoint() -> None:
    assert compare.relate(">=2", "<1").disjoint
    assert compare.relate("==3.8.0", "3.9.*").disjoint


def test_alternatives_and_prefix_exclusions_use_conda_semantics() -> None:
    relation = compare.relate("1.2.*|1.4.*", "!=1.3.*")
    assert not relation.upstream_only  # every 1.2.x and 1.4.x lies outside 1.3.*
    assert "1.5" in relation.recipe_only  # the recipe admits 1.5, upstream does not
    assert not [v for v in relation.recipe_only if v.startswith("1.3")]  # both reject 1.3.x


def test_channel_versions_become_candidates_and_preferred_witnesses() -> None:
    relation = compare.relate(">=4.10", None, extra_versions=("4.7.1", "4.12.2"))
    assert compare.pick_witness(relation.recipe_only, relation.both, real=("4.7.1",)) == "4.7.1"


def test_candidates_include_a_version_strictly_between_each_pair() -> None:
    points = compare.candidates([">1.2,<1.3"])
    between = [p for p in points if compare.newer(p, "1.2") and compare.newer("1.3", p)]
    assert between, points


def test_literals_ignore_operators_wildcards_and_build_strings() -> None:
    assert compare.literals(">=1.13.1,!=1.13.2|2.0.*") == ("1.13.1", "1.13.2", "2.0")


def test_admits_checks_one_version() -> None:
    assert compare.admits("3.8.*", "3.8.0")
    assert not compare.admits("==12.9", "12.9.1")


def test_invalid_spec_is_a_user_error() -> None:
    with pytest.raises(UserError, match="invalid conda version spec"):
        compare.relate(">=abc!!", None)
