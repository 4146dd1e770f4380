"""The report's rows: per config of one or more build_artifacts/ folders, the record that wins
(as ``review merge`` chooses it), its timing, packages, ccache hit rate, machine and the
check of the commit its packages embed."""

from __future__ import annotations

import calendar
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from tools.localbuild.engines.watch.progress import format_duration
from tools.localbuild.records.configs import discover, labels
from tools.localbuild.records.provenance import Provenance
from tools.review.embedded import NOT_CHECKED, read_embedded
from tools.review.merge import choose_records, load_source
from tools.review.upload import SUMMARY, open_batch


@dataclass(frozen=True)
class Row:
    config: str
    label: str
    status: str
    machine: str  # "-" for a config not built: machines are counted from the others
    started: float | None  # epoch seconds
    seconds: float | None
    packages: int
    ccache: str  # "92%" or "-"
    reason: str = ""  # why a skipped config was not built
    earlier: bool = False  # built by an earlier run (a resume kept it)
    provenance: Provenance | None = None
    commit_check: str = "-"  # the packages' embedded commit against the record's


def _epoch(text: object) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def row_of(
    config: str,
    record: Mapping[str, object],
    *,
    label: str,
    machine: str,
    folders: Sequence[Path] = (),
) -> Row:
    packages = record.get("packages")
    cache = record.get("ccache")
    rate = _number(cache.get("hit_rate")) if isinstance(cache, dict) else None
    status = str(record.get("status") or "pending")
    built = status != "skipped"
    source = Provenance.from_json(record.get("provenance"))
    return Row(
        config=config,
        label=label,
        status=status,
        machine=str(record.get("machine") or machine) if built else "-",
        started=_epoch(record.get("started")) if built else None,
        seconds=_number(record.get("duration_seconds")) if built else None,
        packages=len(packages) if isinstance(packages, list) else 0,
        ccache="-" if rate is None else f"{rate:.0%}",  # summary.json keeps the fraction
        reason=str(record.get("reason") or ""),
        earlier=record.get("earlier_run") is True,
        provenance=source,
        commit_check=commit_check(record, source, folders) if status == "done" else "-",
    )


def commit_check(
    record: Mapping[str, object], source: Provenance | None, folders: Sequence[Path]
) -> str:
    """Each package of ``record`` and the commit it embeds, grouped by commit, against the one
    the record names: ``✅ 0123456789ab: a.conda, b.conda``."""
    expected = source.commit if source is not None else None
    entries = record.get("packages")
    found: dict[str, str | None] = {}
    for entry in entries if isinstance(entries, list) else []:
        name = str(entry.get("path")) if isinstance(entry, dict) else ""
        path = next((f / name for f in folders if name and (f / name).is_file()), None)
        if path is None:
            continue
        embedded = read_embedded(path)
        if embedded.error == NOT_CHECKED:
            return NOT_CHECKED
        found[name] = embedded.commit if not embedded.error else f"unreadable: {embedded.error}"
    if not found:
        return "not checked (no package here)"
    groups: dict[str | None, list[str]] = {}
    for name, sha in found.items():
        groups.setdefault(sha, []).append(name.rsplit("/", 1)[-1])
    cells = []
    for sha, names in groups.items():
        files = ", ".join(names)
        if sha == expected:
            cells.append(f"✅ {sha[:12] if sha else '(none recorded)'}: {files}")
        elif sha is None and source is not None and source.packages_carry_no_commit:
            cells.append(f"⚠️ none (its engine embeds none, as the record says): {files}")
        else:
            what = sha[:12] if sha else "no commit"
            cells.append(f"❌ {what}, the record {expected[:12] if expected else 'none'}: {files}")
    return "<br>".join(cells)


def _machine_of(folder: Path, several: bool) -> str:
    """Who built a record that does not say: the folder's name when several were given."""
    if not several:
        return "this machine"
    folder = folder.parent if folder.suffix == ".zip" else folder
    return folder.parent.name if folder.name == "build_artifacts" else folder.name


def collect(root: Path, folders: Sequence[Path]) -> tuple[list[Row], list[str]]:
    """Rows sorted by machine then start, and the SHA256SUMS lines of every folder, once each
    (each folder a batch folder or its log_files.zip)."""
    given = list(folders) or [root / "build_artifacts"]
    with ExitStack() as stack:
        views = [
            stack.enter_context(open_batch(f, command="review report", needs=SUMMARY)).view
            for f in given
        ]
        return _collect(root, views, [_machine_of(f, len(given) > 1) for f in given])


def _collect(
    root: Path, resolved: Sequence[Path], machines: Sequence[str]
) -> tuple[list[Row], list[str]]:
    sources = [load_source(f, flag="review report") for f in resolved]
    chosen = choose_records(sources)
    names = sorted({*discover(root), *chosen})
    label_of = labels(root, names)
    machine_of = dict(zip(resolved, machines))
    rows = [
        row_of(
            name,
            pick.record,
            label=label_of.get(name, name),
            machine=machine_of[pick.source],
            folders=[pick.source, *resolved],
        )
        for name, pick in chosen.items()
    ]
    rows.sort(
        key=lambda r: (r.machine == "-", r.machine, r.started is None, r.started or 0.0, r.label)
    )
    sums: dict[str, None] = {}
    for folder in resolved:
        path = folder / "SHA256SUMS"
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    sums.setdefault(line.strip(), None)
    return rows, list(sums)


def duration_text(seconds: float | None) -> str:
    return "-" if seconds is None else format_duration(seconds)


def time_span(rows: Sequence[Row]) -> tuple[float, float] | None:
    timed = [r for r in rows if r.started is not None and r.seconds is not None]
    if not timed:
        return None
    return (
        min(r.started for r in timed if r.started is not None),
        max((r.started or 0.0) + (r.seconds or 0.0) for r in timed),
    )
