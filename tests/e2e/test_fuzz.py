"""Damaged real inputs through the real commands: never a traceback, a long message or a
stray write.

A fixed campaign (seed and case count below; tests/helpers/fuzz.py has the inputs,
mutators and rules), so a failure reproduces exactly; ``python benchmarks/fuzz_report.py``
runs a larger one.  It runs in about half a minute on two cores.
"""

from __future__ import annotations

import pytest
from helpers.fuzz import REPO, Campaign, summary, tree_digest

SEED = 20261123
CASES_PER_KIND = {
    "conda": 8,
    "tar.bz2": 6,
    "wheel": 6,
    "emulate-link": 6,
    "meta.yaml": 10,
    "conda_build_config.yaml": 6,
    "ci_support": 6,
    "conda-forge.yml": 4,
    "CMakeCache.txt": 6,
}


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    before = tree_digest(REPO)
    fuzz = Campaign(tmp_path_factory.mktemp("fuzz"), seed=SEED)
    fuzz.run(CASES_PER_KIND)
    return fuzz, before


def _failures(campaign, kind):
    fuzz, _ = campaign
    return [
        f"case {o.case}: {o.command} -> {o.code}: {'; '.join(o.problems)}"
        for o in fuzz.outcomes
        if o.kind == kind and not o.passed
    ]


@pytest.mark.parametrize("kind", list(CASES_PER_KIND))
def test_damaged_input_ends_in_a_short_message_and_exit_0_1_or_2(campaign, kind):
    assert _failures(campaign, kind) == []


def test_every_planned_case_ran(campaign):
    fuzz, _ = campaign
    assert summary(fuzz.outcomes)[0] == sum(CASES_PER_KIND.values())


def test_the_campaign_changed_no_file_of_the_repository(campaign):
    _, before = campaign
    assert tree_digest(REPO) == before
