"""The suite needs nothing outside the repository: conda-forge's files it compares with (the
pinning, the feedstock's reference configs, conda-smithy's schema) are kept in
tests/fixtures/reference, each exactly as upstream wrote it, and no test module reads a
folder beside the checkout (a clone alone has none: those tests skipped there)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from tools.smithy.forge_yml import SCHEMA_PATH

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "tests" / "fixtures" / "reference"
SUMS = REFERENCE / "SHA256SUMS"
# what reached the maintainers' data beside the checkout (written so that this file does not
# match itself)
OUTSIDE = re.compile(r"\.\./share[d]|share[d]_dir|SHARE[D]_DIR|parent\s*/\s*[\"']share[d][\"']")


def _listed() -> dict[Path, str]:
    sums = {}
    for line in SUMS.read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        sums[REPO / name] = digest
    return sums


def test_every_reference_file_is_listed_with_its_checksum() -> None:
    kept = {p for p in REFERENCE.rglob("*") if p.is_file()} - {SUMS, REFERENCE / "README.md"}
    assert kept, f"{REFERENCE} is empty"
    assert sorted(kept - set(_listed())) == []


def test_each_reference_file_is_upstreams_byte_for_byte() -> None:
    changed = [
        str(path.relative_to(REPO))
        for path, digest in _listed().items()
        if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != digest
    ]
    assert changed == [], "replace these whole from their source (README.md) and update SHA256SUMS"


def test_conda_smithys_schema_is_among_the_checked_files() -> None:
    assert SCHEMA_PATH.resolve() in _listed()


def test_the_readme_names_a_source_and_licence_for_each_folder() -> None:
    readme = (REFERENCE / "README.md").read_text()
    for path in _listed():
        inside = REFERENCE in path.parents
        name = f"{path.relative_to(REFERENCE).parts[0]}/" if inside else str(path.relative_to(REPO))
        row = next((line for line in readme.splitlines() if line.startswith(f"| `{name}")), "")
        assert "github.com/" in row and "BSD-3-Clause" in row, name


def test_no_test_module_reads_beside_the_checkout() -> None:
    readers = sorted(
        str(path.relative_to(REPO))
        for path in (REPO / "tests").rglob("*.py")
        if path.name != "conftest.py" and OUTSIDE.search(path.read_text(encoding="utf-8"))
    )
    assert readers == []
