"""What ``review publish`` refuses first, in a fork's terms: a batch that did not finish, and
packages in build_artifacts/ that no config of the batch built.

``review publish`` makes the checks a CFEP-03 reviewer makes (``review verify``), whose words are a
review's ("pass --commit with the PR's head").  A fork publishing its own build has no pull
request; what stops it after a failed build is the config that failed, and what to do is
rebuild it or drop it from the matrix.  These checks run before the reviewer's, and each
refusal names every config or file at fault.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from tools.localbuild.batch.record import DONE, SKIPPED, package_entries
from tools.localbuild.records import artifacts as art
from tools.localbuild.records.configs import discover, labels
from tools.localbuild.records.provenance import Provenance

TAILOR = 'docs/fork.md, "1. Tailor"'


def problems(root: Path, artifacts: Path) -> list[str]:
    """Why build_artifacts/ cannot be published as it is, one sentence each (none: go on
    to the reviewer's checks)."""
    records = art.read_summary(artifacts)
    matrix = discover(root)
    label_of = labels(root, sorted({*matrix, *records}))
    found = []
    unfinished = [
        _unfinished(label_of.get(c, c), records.get(c)) for c in matrix if _open(records.get(c))
    ]
    if unfinished:
        first = label_of.get(next(c for c in matrix if _open(records.get(c))), "")
        found.append(
            f"{len(unfinished)} config(s) of your matrix did not build: {', '.join(unfinished)}; "
            f"`python -m tools review why '{first}'` shows the error; fix it and run the "
            "build again (it builds only what is unfinished), or drop the config from your "
            f"matrix ({TAILOR}) and build again"
        )
    stray = _stray(artifacts, records)
    if stray:
        found.append(
            f"build_artifacts/ holds {len(stray)} package(s) that no config of this batch "
            f"built: {', '.join(stray)}; move {'it' if len(stray) == 1 else 'them'} out of "
            "build_artifacts/ (from another build, or copied in?)"
        )
    commits = _commits(records)
    if len(commits) > 1:
        built = ", ".join(f"{label_of.get(c, c)} at {sha[:12]}" for c, sha in commits.items())
        found.append(
            f"the configs were built from different commits ({built}); build them again at "
            "one commit (`--force`)"
        )
    return found


def _open(record: Mapping[str, object] | None) -> bool:
    return (record or {}).get("status") not in (DONE, SKIPPED)


def _unfinished(label: str, record: Mapping[str, object] | None) -> str:
    if record is None:
        return f"{label} (not built yet)"
    return f"{label} ({record.get('status')}: {record.get('note') or 'not built'})"


def _stray(artifacts: Path, records: Mapping[str, Mapping[str, object]]) -> list[str]:
    """The packages under build_artifacts/<subdir>/ that no record lists."""
    recorded = {str(p.get("path")) for record in records.values() for p in package_entries(record)}
    present = [p.relative_to(artifacts).as_posix() for p in art.package_files(artifacts)]
    return [f"build_artifacts/{name}" for name in present if name not in recorded]


def _commits(records: Mapping[str, Mapping[str, object]]) -> dict[str, str]:
    """Per built config, the commit its record says it was built from, when they differ."""
    found = {}
    for config, record in records.items():
        source = Provenance.from_json(record.get("provenance"))
        if record.get("status") == DONE and source is not None and source.commit:
            found[config] = source.commit
    return found if len(set(found.values())) > 1 else {}
