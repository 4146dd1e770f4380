"""summary.json's typed records (tools/localbuild/records/summary_schema.py) are what the writers
write, key for key, and what build-locally.py --help describes."""

from __future__ import annotations

from tools.localbuild.batch.record import DONE, ConfigResult
from tools.localbuild.engines.ccache import CcacheStats
from tools.localbuild.options.command_line import EPILOG
from tools.localbuild.records.artifacts import Package, summary_document
from tools.localbuild.records.provenance import Provenance
from tools.localbuild.records.summary_schema import (
    CcacheRecord,
    ConfigRecord,
    PackageRecord,
    ProvenanceRecord,
    SummaryRecord,
    describe,
)

PROVENANCE = Provenance(
    commit="0" * 40,
    dirty=False,
    diff_sha256=None,
    recipe_version="2.13.0",
    recipe_build_number=3,
    build_number=203,
    ci_support_sha256="a" * 64,
    toolkit="tools 1234",
    engine="docker 27.3.1",
    image="quay.io/condaforge/linux-anvil-x86_64:alma9",
    machine="builder-1",
)
RESULT = ConfigResult(
    "linux_64_x",
    DONE,
    seconds=12.0,
    returncode=0,
    packages=(Package("linux-64/x.conda", "b" * 64, 1),),
    ccache=CcacheStats(hits=1, misses=1),
    provenance=PROVENANCE,
)


def test_a_config_record_has_the_keys_its_typed_record_declares() -> None:
    written = RESULT.to_json()
    assert list(written) == list(ConfigRecord.__annotations__)
    package = PackageRecord.__annotations__
    assert list(written["packages"][0]) == [
        k for k in package if k in PackageRecord.__required_keys__
    ]
    assert list(PackageRecord.__optional_keys__) == ["signature"]  # review sign adds it
    assert list(written["ccache"]) == list(CcacheRecord.__annotations__)
    assert list(written["provenance"]) == list(ProvenanceRecord.__annotations__)


def test_the_document_has_the_keys_its_typed_record_declares() -> None:
    document = summary_document(
        feedstock="f", started="s", finished="e", this_run=["c"], configs={"c": RESULT.to_json()}
    )
    assert list(document) == list(SummaryRecord.__annotations__)


def test_the_help_describes_summary_json_from_the_record() -> None:
    described = describe()
    assert '"status": done|failed|interrupted|skipped|pending' in described
    assert '"ccache": {"hits", "misses", "hit_rate"} or null' in described
    assert " ".join(described.split()) in " ".join(EPILOG.split())
