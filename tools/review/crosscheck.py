"""``review verify``'s cross-checks: no single file of an upload is trusted.

A delegate's upload says the same things in several places: a package's sha256 is in
SHA256SUMS, in its record in summary.json and in its config's log; the log's head repeats the
record's provenance (commit, engine, channels, toolkit, .ci_support digest); log_files.zip holds
copies of the loose files; the checkout under review has its own toolkit and .ci_support files.
Each fact is compared wherever it appears, and a disagreement is one finding naming both sides.
An edit that keeps every copy consistent (a package re-hashed into all three lists and the log
rewritten to match) passes here: that is what rebuilding a config and comparing the bytes is for.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tools.localbuild.batch.loop import provenance_fields
from tools.localbuild.batch.record import DONE, package_entries
from tools.localbuild.records import artifacts as art
from tools.localbuild.records import ci_engine
from tools.localbuild.records.provenance import Provenance, file_sha256, toolkit_version
from tools.review.logread import LogFacts, read_log
from tools.review.upload import Batch


@dataclass(frozen=True)
class Finding:
    subject: str  # a file, a config's label, or the cause ("engine")
    problem: str
    detail: tuple[str, ...] = ()  # lines shown under it (a `tools check` failure's findings)

    def line(self) -> str:
        return f"FAIL {self.subject}: {self.problem}"


def _short(digest: str | None) -> str:
    return f"{digest[:12]}…" if digest else "none"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def loose_against_zip(batch: Batch) -> Iterator[Finding]:
    """A file both loose and in log_files.zip must be the same file: a loose summary.json or
    SHA256SUMS beside an untouched zip would otherwise silently win."""
    for name, loose in sorted(batch.loose.items()):
        zipped = batch.zipped.get(name)
        if zipped is None or batch.archive is None:
            continue
        ours, theirs = _digest(loose), _digest(zipped)
        if ours != theirs:
            yield Finding(
                name,
                f"the loose {loose} (sha256 {_short(ours)}) differs from the copy in "
                f"{batch.archive} (sha256 {_short(theirs)}); one of them was edited",
            )


def package_digests(
    batch: Batch,
    sums: Mapping[str, str],
    records: Mapping[str, Mapping[str, object]],
    logs: Mapping[str, LogFacts],
) -> Iterator[Finding]:
    """Each package's sha256, as the file has it, against SHA256SUMS, its record and its log."""
    for config, record in records.items():
        if record.get("status") != DONE:
            continue
        facts = logs.get(config)
        for entry in package_entries(record):
            name = str(entry.get("path"))
            path = batch.packages_dir / name
            if not path.is_file():
                continue  # check_sums names it
            actual = art.sha256_of(path)
            claims = {
                "SHA256SUMS": sums.get(name),
                "summary.json": entry.get("sha256"),
                f"{config}'s log": facts.packages.get(name) if facts else actual,
            }
            wrong = [f"{where} says {_short(str(d) if d else None)}"
                     for where, d in claims.items() if d != actual]  # fmt: skip
            if wrong:
                yield Finding(name, f"tampered: its sha256 is {_short(actual)}; {', '.join(wrong)}")
        if facts is not None:
            listed = {str(e.get("path")) for e in package_entries(record)}
            for name in sorted(set(facts.packages) - listed):
                yield Finding(name, f"{config}'s log lists it, its record in summary.json does not")


def log_against_record(
    config: str, label: str, record: Mapping[str, object], facts: LogFacts
) -> Iterator[Finding]:
    """The log's head against what the batch writes there for this record's provenance
    (commit, tree, recipe, .ci_support digest, toolkit, engine, recipe file, machine, channels,
    tests), where the build ran, and the build's own output."""
    source = Provenance.from_json(record.get("provenance"))
    if source is None:
        return
    if facts.values("config") != [config]:
        yield Finding(label, f"its log has no head naming {config}: not the batch's log of it")
        return
    expected: dict[str, list[str]] = {}
    for key, value in provenance_fields(source):
        expected.setdefault(key, []).append(value)
    for key in dict.fromkeys(("warning", *expected)):  # an uncalled-for warning is one too
        values, found = expected.get(key, []), facts.values(key)
        if values == ["?"] and not found:
            continue  # a record from before the field existed, and a log from then
        if sorted(found) != sorted(values):
            said = repr(" / ".join(found)) if found else "nothing"
            wanted = repr(" / ".join(values)) if values else "nothing"
            yield Finding(label, f"its log's {key} line says {said}, its record {wanted}")
    where = facts.values("where")
    if source.ci_engine is True and where and where[0] not in ci_engine.CI_DISPATCHES:
        yield Finding(
            "engine",
            f"{label}: the record claims conda-forge's CI engine ({source.engine}), but its log "
            f"says it was built by the {where[0]} engine",
        )
    if facts.output_lines == 0:
        yield Finding(label, "its log holds no build output, only build-locally's own lines")


def read_logs(logs_dir: Path, records: Mapping[str, Mapping[str, object]]) -> dict[str, LogFacts]:
    found = {}
    for config, record in records.items():
        log = art.log_path(logs_dir, config)
        if record.get("status") == DONE and log.is_file():
            found[config] = read_log(log)
    return found


def against_checkout(
    root: Path,
    records: Mapping[str, Mapping[str, object]],
    label_of: Callable[[str], str],
    toolkit: str | None = None,
) -> Iterator[Finding]:
    """The records' toolkit digest and .ci_support digest against this checkout's: the
    reviewer's checkout at the PR's head must be what the delegate built from."""
    own = root / "tools"  # the checkout's toolkit, else (a feedstock without one) the running
    toolkit = toolkit or toolkit_version(own if (own / "__init__.py").is_file() else None)
    for config, record in records.items():
        source = Provenance.from_json(record.get("provenance"))
        if record.get("status") != DONE or source is None:
            continue
        if source.toolkit and source.toolkit != toolkit:
            yield Finding(
                label_of(config),
                f"built with {source.toolkit}, this checkout's is {toolkit}: not the toolkit "
                "under review",
            )
        ours = file_sha256(root / ".ci_support" / f"{config}.yaml")
        if ours and source.ci_support_sha256 != ours:
            yield Finding(
                label_of(config),
                f"built from a .ci_support/{config}.yaml with sha256 "
                f"{_short(source.ci_support_sha256)}, this checkout's is {_short(ours)}",
            )


def tests_note(
    records: Mapping[str, Mapping[str, object]], label_of: Callable[[str], str]
) -> str | None:
    """Which built configs did not run the engine's test phase, in one line (None: all did)."""
    skipped = []
    for config, record in records.items():
        source = Provenance.from_json(record.get("provenance"))
        if record.get("status") != DONE:
            continue
        tests = source.tests if source is not None else None
        if tests != "run":
            skipped.append(f"{label_of(config)} ({tests or 'not recorded'})")
    return f"tests did not run: {', '.join(skipped)}" if skipped else None
