"""Combine the build_artifacts/ of several machines: ``python -m tools review merge DIR...``.

A release built on N machines (``--shard K/N``, or one GitHub Actions job per
config) comes back as N build_artifacts/ folders.  Merging copies their
packages, logs and done markers into this checkout's build_artifacts/ and then
writes summary.json, SHA256SUMS and log_files.zip with the very functions a
local batch uses, so a reviewer cannot tell a merged release from one built on
a single machine, and ``review request`` works on either.

Nothing is copied until every input has been read and checked: a package that
exists in two folders with different contents is refused with one line, since
only one of them can be what the logs describe.  Nothing here deletes a
package; a log that a merged record replaces is kept under old-logs/.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tools.foundation.errors import UserError
from tools.foundation.files import atomic_copy
from tools.localbuild.batch.record import FAILED_EARLIER, FILTERED_OUT, package_entries
from tools.localbuild.records import artifacts as art

# Which record of a config wins when several machines report it: a finished build beats a
# config not built there (skipped, with its reason), which beats any attempt that failed.
_RANK = {"done": 0, "skipped": 1, "failed": 2, "interrupted": 3, "pending": 4}
BUILT = ("done",)
# Provenance that every config of one release shares, and what each is called in an error.
# The rendered build number is not among them: it carries the variant's offsets (+200 CUDA,
# +100 MKL, +50 magma), so a CPU and a CUDA config of one release differ there by design.
_SHARED = {
    "commit": "commit",
    "diff_sha256": "uncommitted diff",
    "recipe_version": "recipe version",
    "recipe_build_number": "recipe build number",
}
# What two machines' builds of the same config must also share.
_SAME_CONFIG = {**_SHARED, "build_number": "build number", "ci_support_sha256": "ci_support file"}


@dataclass(frozen=True)
class Source:
    """One machine's build_artifacts/ as its summary.json describes it."""

    path: Path
    started: str | None
    finished: str | None
    this_run: tuple[str, ...]
    records: Mapping[str, Mapping[str, object]]


@dataclass(frozen=True)
class Chosen:
    record: Mapping[str, object]
    source: Path


@dataclass(frozen=True)
class MergeResult:
    files: art.BatchFiles
    configs: Mapping[str, Mapping[str, object]]
    copied_packages: int
    sources: int

    @property
    def failed(self) -> list[str]:
        """Configs no machine built and no record explains (a failure not retried counts)."""
        return [
            name
            for name, r in self.configs.items()
            if r.get("status") not in ("done", "skipped") or r.get("reason") == FAILED_EARLIER
        ]


def artifacts_dir(directory: Path, *, flag: str = "review merge") -> Path:
    """DIR itself, or DIR/build_artifacts when DIR is a feedstock checkout."""
    if (directory / "build_artifacts").is_dir():
        return directory / "build_artifacts"
    if directory.is_dir():
        return directory
    raise UserError(f"{flag} {directory}: not a directory")


def load_source(path: Path, *, flag: str = "review merge") -> Source:
    summary = path / "summary.json"
    if not summary.exists():
        raise UserError(
            f"{flag} {path}: no summary.json; give the build_artifacts folder of a "
            "build-locally.py run (or a CI build artifact)"
        )
    document = art.load_summary(
        summary, named=str(summary), hint="rerun build-locally.py there to rewrite it"
    )
    if document.get("version") != art.SUMMARY_VERSION:
        raise UserError(
            f"{summary}: not a build-locally summary (version {art.SUMMARY_VERSION} "
            'with a "configs" mapping)'
        )
    configs = document["configs"]
    this_run = document.get("this_run")
    return Source(
        path=path,
        started=document.get("started") if isinstance(document.get("started"), str) else None,
        finished=document.get("finished") if isinstance(document.get("finished"), str) else None,
        this_run=tuple(str(n) for n in this_run) if isinstance(this_run, list) else (),
        records={k: v for k, v in configs.items() if isinstance(v, dict)},
    )


def _short(digest: str) -> str:
    return digest[:12]


def plan_packages(target: Path, sources: Sequence[Path]) -> list[tuple[str, Path]]:
    """(subdir/file, where to copy it from) for packages the target lacks.

    Raises on the first package present in two places with different contents.
    """
    seen: dict[str, tuple[str, Path]] = {}
    for place in (target, *sources):
        for path in art.package_files(place):
            name = path.relative_to(place).as_posix()
            digest = art.sha256_of(path)
            if name not in seen:
                seen[name] = (digest, place)
                continue
            first_digest, first_place = seen[name]
            if first_digest != digest:
                raise UserError(
                    f"review merge: {name} differs between {first_place} (sha256 "
                    f"{_short(first_digest)}…) and {place} ({_short(digest)}…); the same "
                    "package was built twice, keep the copy the logs describe and merge again"
                )
    return [(name, place) for name, (_, place) in sorted(seen.items()) if place != target]


def _packages_of(record: Mapping[str, object]) -> frozenset[tuple[str, str]]:
    return frozenset((str(p.get("path")), str(p.get("sha256"))) for p in package_entries(record))


def _rank(record: Mapping[str, object]) -> int:
    """Lower wins.  A config this machine merely did not select (or did not retry) says
    nothing about it, so any other machine's record of it wins."""
    if record.get("status") == "skipped" and record.get("reason") in (FILTERED_OUT, FAILED_EARLIER):
        return len(_RANK) + 1
    return _RANK.get(str(record.get("status")), len(_RANK))


def choose_records(sources: Sequence[Source]) -> dict[str, Chosen]:
    """Per config, the best record any source holds; earlier sources win ties.

    A config built on two machines must have produced the same packages on both;
    otherwise the merged summary could describe only one of them.
    """
    chosen: dict[str, Chosen] = {}
    for source in sources:
        for name, record in source.records.items():
            current = chosen.get(name)
            # A record that lists no packages (skipped after its summary was lost) says nothing.
            theirs = _packages_of(record) if record.get("status") in BUILT else frozenset()
            ours = (
                _packages_of(current.record)
                if current is not None and current.record.get("status") in BUILT
                else frozenset()
            )
            if theirs and ours and theirs != ours:
                raise UserError(
                    f"review merge: {name} was built in both {current.source} and {source.path} "
                    "with different packages; keep the build the logs should show and merge again"
                )
            if current is not None and record.get("status") in BUILT:
                _same_build(name, current.record, record)
            if current is None or _rank(record) < _rank(current.record):
                chosen[name] = Chosen(record, source.path)
    return dict(sorted(chosen.items()))


def _provenance(record: Mapping[str, object]) -> Mapping[str, object]:
    found = record.get("provenance")
    return found if isinstance(found, Mapping) else {}


def _machine(record: Mapping[str, object]) -> str:
    return str(record.get("machine") or "an unnamed machine")


def _same_build(config: str, first: Mapping[str, object], second: Mapping[str, object]) -> None:
    """Two machines' builds of one config must come from the same sources."""
    for key, what in _SAME_CONFIG.items():
        a, b = _provenance(first).get(key), _provenance(second).get(key)
        if a is not None and b is not None and a != b:
            raise UserError(
                f"review merge: {config} was built on {_machine(first)} and on {_machine(second)} "
                f"with a different {what} ({a} vs {b}); rebuild one of them from the other's "
                "sources and merge again"
            )


def check_one_release(records: Mapping[str, Mapping[str, object]]) -> None:
    """Every config built for a release comes from the same commit, diff and recipe; a merge
    of machines that built different sources is refused, naming both."""
    seen: dict[str, tuple[str, Mapping[str, object]]] = {}
    for config, record in records.items():
        if record.get("status") not in BUILT or not _provenance(record):
            continue
        for key, what in _SHARED.items():
            value = _provenance(record).get(key)
            if key != "diff_sha256" and value is None:
                continue
            if key not in seen:
                seen[key] = (config, record)
                continue
            other_config, other = seen[key]
            theirs = _provenance(other).get(key)
            if theirs != value:
                raise UserError(
                    f"review merge: {config} (built on {_machine(record)}) and {other_config} "
                    f"(built on {_machine(other)}) have a different {what} "
                    f"({value or 'none, a clean tree'} vs {theirs or 'none, a clean tree'}); "
                    f"one release comes from one {what}: rebuild and merge again"
                )


def _same_bytes(a: Path, b: Path) -> bool:
    return a.stat().st_size == b.stat().st_size and art.sha256_of(a) == art.sha256_of(b)


def _bring_log(target: Path, source: Path, config: str) -> None:
    theirs = art.log_path(source, config)
    if source.resolve() == target.resolve() or not theirs.is_file():
        return
    ours = art.log_path(target, config)
    if ours.exists():
        if _same_bytes(ours, theirs):
            return
        art.set_aside_old_log(target, config)  # an earlier attempt stays reviewable
    atomic_copy(theirs, ours)


def merge(
    root: Path,
    directories: Sequence[Path],
    *,
    say: Callable[[str], None] = lambda _: None,
    check: Callable[[Mapping[str, Mapping[str, object]]], None] = lambda _: None,
) -> MergeResult:
    """``check`` sees the records that would be merged before anything is copied, and may
    refuse them (build-locally's refuses packages of another engine than conda-forge's CI)."""
    target = root / "build_artifacts"
    resolved: list[Path] = []
    for directory in directories:
        path = artifacts_dir(directory).resolve()
        if path == target.resolve():
            say(f"merge: {directory} is this checkout's build_artifacts; it takes part anyway")
            continue
        if path not in resolved:
            resolved.append(path)
    if not resolved:
        raise UserError("review merge needs at least one build_artifacts folder besides this one")
    sources = [load_source(path) for path in resolved]
    # What this checkout built itself takes part first, so its own records win ties.
    if (target / "summary.json").is_file():
        sources.insert(0, load_source(target))
    # Every conflict is found before anything is copied.
    to_copy = plan_packages(target, resolved)
    chosen = choose_records(sources)
    check_one_release({name: pick.record for name, pick in chosen.items()})
    check({name: pick.record for name, pick in chosen.items()})

    target.mkdir(exist_ok=True)
    for name, place in to_copy:
        atomic_copy(place / name, target / name)
    records: dict[str, dict[str, object]] = {}
    for config, pick in chosen.items():
        _bring_log(target, pick.source, config)
        if pick.record.get("status") in BUILT and art.marker_path(pick.source, config).exists():
            art.marker_path(target, config).touch()
        record = dict(pick.record)
        log = art.log_path(target, config)
        record["log"] = log.relative_to(root).as_posix() if log.is_file() else None
        records[config] = record

    starts = [s.started for s in sources if s.started]
    ends = [s.finished for s in sources if s.finished]
    this_run = sorted({name for s in sources for name in s.this_run})
    document = art.summary_document(
        feedstock=root.name,
        started=min(starts) if starts else "",
        finished=max(ends) if ends else "",
        this_run=this_run,
        configs=records,
    )
    files = art.write_batch_files(target, document)
    return MergeResult(
        files=files, configs=records, copied_packages=len(to_copy), sources=len(resolved)
    )
