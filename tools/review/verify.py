"""``python -m tools review verify DIR [--commit SHA]``: the CFEP-03 reviewer's check of an
upload.

CFEP-03 trusts the core member who approves a delegate's local builds; the admin bot later
checks only that each file's sha256 matches.  This command checks what that person must, and
trusts no single file of the upload (crosscheck.py):

- every package's sha256 against SHA256SUMS, its record in summary.json and its config's log,
  and no package left out; loose files against their copies in log_files.zip;
- every config of this checkout's matrix built, or explained by its record (a skipped
  config's reason);
- the records' commit, and the commit each package embeds (info/about.json), against
  ``--commit`` (the PR's head); a record from a dirty tree falls short;
- each log's head (commit, engine, channels, toolkit, .ci_support digest, tests) against its
  record, the build's own output in it, and its end line saying done with the marker;
- the records' toolkit and .ci_support digests against this checkout's;
- the engine each record claims against what its log and packages show;
- ``tools check --config`` on each config's packages, its findings shown;
- each package's CEP 27 signature (``<package>.sigs``, signatures.py), offline, against
  ``--identity``, ``--issuer`` and ``--target-channel`` when given.

DIR is what a delegate posts: the packages (in their subdir folders), SHA256SUMS,
summary.json and the logs, or log_files.zip in place of the last three (upload.py).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tools.foundation.errors import CommandError, ProblemsFound
from tools.foundation.proc import call
from tools.localbuild.batch.loop import end_line
from tools.localbuild.batch.record import DONE, SKIPPED, package_entries
from tools.localbuild.records import artifacts as art
from tools.localbuild.records import ci_engine
from tools.localbuild.records.configs import discover, labels
from tools.localbuild.records.provenance import NO_PACKAGE_COMMIT, Provenance
from tools.review import crosscheck, signatures
from tools.review.cfep3 import read_sums
from tools.review.crosscheck import Finding
from tools.review.embedded import read_embedded
from tools.review.rebuild import Rebuilt
from tools.review.upload import open_batch

# SHA256SUMS' own rule for a package's path (cfep3.read_sums): a channel subdir and a file.
_PACKAGE_PATH = re.compile(r"^(?:noarch|(?:linux|osx|win)-[a-z0-9]+)/[^/\\]+$")
# (config, packages) -> None, or the problem and the lines that show it
Checker = Callable[[str, list[Path]], tuple[str, tuple[str, ...]] | None]


def verify(
    root: Path,
    directory: Path,
    commit: str | None,
    *,
    say: Callable[[str], None],
    check: Checker | None = None,
    allow_other_engine: bool = False,
    rebuild: Callable[[], Rebuilt] | None = None,
    claim: signatures.Claim | None = None,
) -> int:
    """The cross-checks of docs/cfep03.md; ``rebuild``: a config's rebuild and comparison
    (review/rebuild.py), whose findings join the others and whose line the verdict's;
    ``claim``: what the signatures are held to (none: any signer, sigstore's own root)."""
    check = check or tools_check(root)
    with open_batch(directory, command="review verify") as upload:
        document = art.load_summary(
            upload.summary, named=str(upload.summary), hint="ask the delegate for the original"
        )
        records = {k: v for k, v in document["configs"].items() if isinstance(v, dict)}
        sums = read_sums(upload.sums)
        matrix = discover(root)
        label_of = labels(root, sorted({*matrix, *records}))
        expected, source = _expected_commit(commit, records)
        logs = crosscheck.read_logs(upload.logs, records)
        signed = signatures.review(
            upload.packages_dir, [n for _, n in sums], records, claim or signatures.Claim()
        )
        findings = [
            *crosscheck.loose_against_zip(upload),
            *check_sums(upload.packages_dir, sums),
            *crosscheck.package_digests(upload, {n: d for d, n in sums}, records, logs),
            *check_matrix(matrix, records, label_of),
            *check_commits(upload.packages_dir, records, expected, label_of, allow_other_engine),
            *check_logs(upload.logs, records, label_of),
            *(
                finding
                for config, facts in logs.items()
                for finding in crosscheck.log_against_record(
                    config, label_of.get(config, config), records[config], facts
                )
            ),
            *crosscheck.against_checkout(root, records, lambda c: label_of.get(c, c)),
            *check_engine(root, records, label_of, allow_other_engine, say),
            *signed.findings,
        ]
        for config, record in records.items():
            paths = [upload.packages_dir / str(p.get("path")) for p in _packages(record)]
            present = [p for p in paths if p.is_file()]
            if record.get("status") == DONE and present and config in matrix:
                failed = check(config, present)
                if failed:
                    findings.append(Finding(label_of.get(config, config), *failed))
    rebuilt = rebuild() if rebuild is not None else None
    findings += rebuilt.findings if rebuilt is not None else []
    for finding in findings:
        say(finding.line())
        for line in finding.detail:
            say(f"    {line}")
    tests = crosscheck.tests_note(records, lambda c: label_of.get(c, c))
    if tests:
        say(f"NOTE {tests}")
    for line in signed.notes:
        say(line)
    what = f"commit {expected[:12]}" if expected else "no commit"
    held = coverage(matrix, records, label_of)
    if findings:
        raise ProblemsFound(
            f"NOT verified: {len(findings)} problem(s) with {directory} against {what} "
            f"({source}); first: {findings[0].subject}: {findings[0].problem}; the upload "
            f"holds {held}"
        )
    carried = (
        "carry no commit (their engine cannot write one; --allow-other-engine)"
        if _carry_no_commit(records)
        else "embed the commit"
    )
    say(
        f"verified: {root.name} at {what} ({source}): {held.built}, {len(sums)} packages "
        f"match SHA256SUMS, summary.json and their logs and {carried}, logs agree with the "
        f"records and end in success, `tools check` passes; {tests or 'tests ran'}; "
        f"{signed.verdict}" + (f"; {held.explained}" if held.explained else "")
    )
    if rebuilt is not None:
        say(str(rebuilt.verified))
    return 0


def _carry_no_commit(records: Mapping[str, Mapping[str, object]]) -> bool:
    return any(
        (p := Provenance.from_json(r.get("provenance"))) is not None and p.packages_carry_no_commit
        for r in records.values()
        if r.get("status") == DONE
    )


def check_engine(
    root: Path,
    records: Mapping[str, Mapping[str, object]],
    label_of: Mapping[str, str],
    allowed: bool,
    say: Callable[[str], None],
) -> list[Finding]:
    """One finding for the configs another engine or recipe than conda-forge's CI built (the
    embedded rattler-build, conda-build outside the container), unless --allow-other-engine
    lets them through, which is then said."""
    ci = ci_engine.of_feedstock(root)
    found = ci_engine.foreign(records, ci)
    if not found:
        return []
    line = ci_engine.refusal("review verify", found, ci, label_of)
    if allowed:
        say(f"NOTE {ci_engine.OVERRIDE}: {line.split(': ', 1)[1].split('; rebuild')[0]}")
        return []
    return [Finding("engine", line.removeprefix("review verify: "))]


@dataclass(frozen=True)
class Coverage:
    """How much of the matrix an upload holds, in words for the verdict."""

    built: str  # "3 of 4 configs built"
    missing: str  # "missing: <label> (<why>), ..." or ""
    explained: str  # "not built, as recorded: <label> (<reason>), ..." or ""

    def __str__(self) -> str:
        return "; ".join(part for part in (self.built, self.missing, self.explained) if part)


def coverage(
    matrix: list[str], records: Mapping[str, Mapping[str, object]], label_of: Mapping[str, str]
) -> Coverage:
    """The matrix's configs the upload built, those it lacks (no record, or a build that did
    not finish) and those its records explain (skipped, with the reason)."""
    built, missing, explained = 0, [], []
    for config in matrix:
        record, label = records.get(config), label_of.get(config, config)
        status = record.get("status") if record is not None else None
        if status == DONE:
            built += 1
        elif record is None:
            missing.append(f"{label} (no record)")
        elif status == SKIPPED:
            explained.append(f"{label} ({record.get('reason') or 'no reason'})")
        else:
            missing.append(f"{label} ({status}: {record.get('note') or 'not built'})")
    return Coverage(
        f"{built} of {len(matrix)} configs built",
        f"missing: {', '.join(missing)}" if missing else "",
        f"not built, as recorded: {', '.join(explained)}" if explained else "",
    )


def _packages(record: Mapping[str, object]) -> list[Mapping[str, object]]:
    """A record's packages whose path is ``<subdir>/<file>``: nothing else is read."""
    return [p for p in package_entries(record) if _PACKAGE_PATH.match(str(p.get("path")))]


def _expected_commit(
    commit: str | None, records: Mapping[str, Mapping[str, object]]
) -> tuple[str | None, str]:
    if commit:
        return commit, "--commit"
    found = sorted(
        {
            p.commit
            for r in records.values()
            if r.get("status") == DONE
            and (p := Provenance.from_json(r.get("provenance"))) is not None
            and p.commit
        }
    )
    if len(found) == 1:
        return found[0], "the records' commit; pass --commit with the PR's head"
    return None, "no single commit in the records; pass --commit with the PR's head"


def _matches(expected: str | None, actual: str | None) -> bool:
    """A short sha (from --commit) names the commit whose full sha starts with it."""
    return bool(expected and actual and actual.startswith(expected))


def check_sums(packages_dir: Path, sums: list[tuple[str, str]]) -> Iterator[Finding]:
    """Every SHA256SUMS line has its package, and every package its line (the digests
    themselves are crosscheck.package_digests')."""
    listed = {}
    for digest, name in sums:
        listed[name] = digest
        path = packages_dir / name
        if not path.is_file():
            yield Finding(name, "listed in SHA256SUMS but missing from the upload")
    for path in art.package_files(packages_dir):
        name = path.relative_to(packages_dir).as_posix()
        if name not in listed:
            yield Finding(name, "a package the SHA256SUMS file does not list")


def check_matrix(
    matrix: list[str], records: Mapping[str, Mapping[str, object]], label_of: Mapping[str, str]
) -> Iterator[Finding]:
    for config in matrix:
        record = records.get(config)
        label = label_of.get(config, config)
        if record is None:
            yield Finding(label, f"missing: no record of {config} (neither built nor explained)")
        elif record.get("status") == SKIPPED and not record.get("reason"):
            yield Finding(label, "skipped without a reason")
        elif record.get("status") not in (DONE, SKIPPED):
            yield Finding(label, f"{record.get('status')}: {record.get('note') or 'not built'}")
    for config in sorted(set(records) - set(matrix)):
        yield Finding(config, "a record for a config this checkout's matrix does not have")


def check_commits(
    packages_dir: Path,
    records: Mapping[str, Mapping[str, object]],
    expected: str | None,
    label_of: Mapping[str, str],
    allow_other_engine: bool = False,
) -> Iterator[Finding]:
    """Each record's commit, and each package's embedded one.  A package that embeds none is
    what the embedded engine makes (its record says so: a finding, unless --allow-other-engine
    takes such packages, the log's commit line then standing for them); under a record that
    claims conda-forge's CI engine, whose scripts always embed it, it is an engine lie."""
    for config, record in records.items():
        if record.get("status") != DONE:
            continue
        label = label_of.get(config, config)
        source = Provenance.from_json(record.get("provenance"))
        if source is None:
            yield Finding(label, "no provenance recorded (rebuild with this build-locally.py)")
            continue
        if source.dirty:
            yield Finding(label, f"built from a dirty tree (diff sha256 {source.diff_sha256})")
        if not _matches(expected, source.commit):
            yield Finding(label, f"recorded commit {source.commit}, expected {expected}")
        for package in _packages(record):
            path = packages_dir / str(package.get("path"))
            if not path.is_file():
                continue  # check_sums names it
            embedded = read_embedded(path)
            if embedded.error:
                yield Finding(str(package.get("path")), embedded.error)
            elif embedded.commit is None and source.packages_carry_no_commit:
                if not allow_other_engine:
                    why = f"embeds no commit, as its record says: {NO_PACKAGE_COMMIT}"
                    yield Finding(str(package.get("path")), why)
            elif embedded.commit is None and source.ci_engine:
                yield Finding(
                    "engine",
                    f"{package.get('path')}: its record claims conda-forge's CI engine "
                    f"({source.engine}), whose scripts embed the commit, but the package embeds "
                    "none, as the embedded engine's packages do",
                )
            elif not _matches(expected, embedded.commit):
                yield Finding(
                    str(package.get("path")),
                    f"from another commit: it embeds {embedded.commit or 'none'}, "
                    f"expected {expected}",
                )


def check_logs(
    logs: Path, records: Mapping[str, Mapping[str, object]], label_of: Mapping[str, str]
) -> Iterator[Finding]:
    for config, record in records.items():
        if record.get("status") != DONE:
            continue
        label = label_of.get(config, config)
        log = art.log_path(logs, config)
        if not log.is_file():
            yield Finding(label, f"no log ({log.name})")
            continue
        lines = log.read_text(encoding="utf-8", errors="replace").rstrip("\n").splitlines()
        last = lines[-1] if lines else ""
        if not last.endswith(f"### build-locally: {end_line(DONE, True)}"):
            yield Finding(label, f"log cut short or not a success: it ends {last[-80:]!r}")
        marker = art.marker_path(logs, config)
        if any(logs.glob("conda-forge-build-done-*")) and not marker.exists():
            yield Finding(label, f"the record says done but {marker.name} is missing")


def tools_check(root: Path) -> Checker:
    """``python -m tools check --config CONFIG`` on a config's packages, in this checkout: the
    last line, and its FAIL lines to show under it."""

    def run(config: str, packages: list[Path]) -> str | None:
        argv = [sys.executable, "-m", "tools", "check", "--config", config, "--status", "fail"]
        try:
            result = call(
                *argv,
                *map(str, packages),
                cwd=root,
                capture=True,
                check=False,
                quiet=True,
                env=dict(os.environ),
                timeout=600,
            )
        except CommandError as exc:
            return f"`tools check` could not run: {exc}"
        if result.returncode == 0:
            return None
        tail = result.stderr.strip().splitlines() or result.stdout.strip().splitlines() or [""]
        # The check's report (--status fail: each failed finding, its path and detail,
        # grouped by check; docs/check.md), which says what is wrong and where.
        shown = tuple(
            line.rstrip()
            for line in result.stdout.splitlines()
            if line.strip() and not line.startswith("summary:")
        )
        return f"`tools check --config {config}` failed: {tail[-1][:200]}", shown[:40]

    return run
