"""``python -m tools review report [DIR...]``: what a CFEP-03 reviewer reads, and a picture of it.

From one or more build_artifacts/ folders (a merged one, or each machine's own), two files
in this feedstock's build_artifacts/:

- ``report.md``, the pull-request comment: per config its label, status, duration,
  packages, ccache hit rate and machine; the totals; the SHA256SUMS lines (also printed);
- ``timeline.svg``, one row per config grouped by the machine that built it, a bar from
  its start to its end with the duration written beside it.  It is self-contained (no
  fonts, styles or scripts from elsewhere), so it renders the same in a browser, in a
  GitHub comment upload and in an image viewer.

Several folders are read the way ``review merge`` reads them (merge.py): per config the best
record wins (done, then skipped, then the attempts that failed).
"""

from __future__ import annotations

import calendar
import html
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from tools.errors import UserError
from tools.files import atomic_write_text
from tools.localbuild.configs import discover, labels
from tools.localbuild.engines.watch.progress import format_duration
from tools.localbuild.provenance import DIRTY_WARNING, Provenance
from tools.localbuild.review.embedded import NOT_CHECKED, read_embedded
from tools.localbuild.review.merge import choose_records, load_source
from tools.localbuild.review.upload import SUMMARY, open_batch

STATUS_COLOURS = {
    "done": "#2e7d32",
    "skipped": "#81c784",
    "failed": "#c62828",
    "interrupted": "#ef6c00",
    "pending": "#9e9e9e",
}
STATUS_MARKS = {"done": "✅", "skipped": "☑️", "failed": "❌", "interrupted": "⏸️"}


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


def _duration(seconds: float | None) -> str:
    return "-" if seconds is None else format_duration(seconds)


def _span(rows: Sequence[Row]) -> tuple[float, float] | None:
    timed = [r for r in rows if r.started is not None and r.seconds is not None]
    if not timed:
        return None
    return (
        min(r.started for r in timed if r.started is not None),
        max((r.started or 0.0) + (r.seconds or 0.0) for r in timed),
    )


def _provenance_lines(rows: Sequence[Row]) -> list[str]:
    """Where the packages came from: each fact once, or every value when configs differ."""
    known = [r.provenance for r in rows if r.provenance is not None]
    if not known:
        return ["**Provenance:** not recorded (built before build-locally recorded it)."]

    def values(pick) -> str:
        found = sorted({str(pick(p)) for p in known if pick(p) is not None})
        return ", ".join(f"`{v}`" for v in found) or "unknown"

    def numbers(pick) -> str:
        found = sorted({pick(p) for p in known if pick(p) is not None})
        return ", ".join(f"`{v}`" for v in found) or "unknown"

    dirty = "**dirty** (uncommitted changes)" if any(p.dirty for p in known) else "clean"
    return [
        f"**Provenance:** commit {values(lambda p: p.commit)}, tree {dirty}; "
        f"recipe version {values(lambda p: p.recipe_version)}, build number "
        f"{values(lambda p: p.recipe_build_number)} (per config, offsets included: "
        f"{numbers(lambda p: p.build_number)}); toolkit {values(lambda p: p.toolkit)}; "
        f"engine {values(lambda p: p.engine)}; image {_images(known)}.",
    ]


def _images(known: Sequence[Provenance]) -> str:
    """The container images used; a build outside a container used none, which is no
    unknown."""
    images = sorted({p.image for p in known if p.image})
    outside = sum(1 for p in known if not p.image)
    parts = [f"`{i}`" for i in images]
    if outside:
        parts.append(f"none for {outside} config(s) built outside a container")
    return ", ".join(parts)


def _status_cell(r: Row) -> str:
    text = f"{STATUS_MARKS.get(r.status, '')} {r.status}".strip()
    return f"{text} (earlier run)" if r.earlier and r.status == "done" else text


def markdown(rows: Sequence[Row], sums: Sequence[str]) -> str:
    dirty = [r.label for r in rows if r.provenance is not None and r.provenance.dirty]
    lines = []
    if dirty:
        lines += [
            f"> [!WARNING]\n> {DIRTY_WARNING}: {len(dirty)} config(s) ({', '.join(dirty)}) "
            "were built from uncommitted changes, so no commit describes their packages.",
            "",
        ]
    lines += [
        "### Local builds for CFEP-03",
        "",
        *_provenance_lines(rows),
        "",
        "| config | status | duration | packages | ccache hits | machine | embedded commit "
        "| reason |",
        "|---|---|---:|---:|---:|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.label} | {_status_cell(r)} | {_duration(r.seconds)} | {r.packages} | "
            f"{r.ccache} | {r.machine} | {r.commit_check} | {r.reason or '-'} |"
        )
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.status] = counts.get(r.status, 0) + 1
    built = sum(r.seconds or 0.0 for r in rows if r.status != "skipped")
    machines = len({r.machine for r in rows if r.machine != "-"})
    span = _span(rows)
    wall = f", {format_duration(span[1] - span[0])} from first start to last end" if span else ""
    earlier = sum(1 for r in rows if r.earlier and r.status == "done")
    kept = f", {earlier} of them built by an earlier run" if earlier else ""
    lines += [
        "",
        f"**Total:** {len(rows)} configs ({', '.join(f'{n} {s}' for s, n in counts.items())}"
        f"{kept}), {sum(r.packages for r in rows)} packages, {format_duration(built)} of build "
        f"time on {machines} machine(s){wall}." + (f" **{DIRTY_WARNING}.**" if dirty else ""),
        "",
        f"<details><summary>SHA256SUMS ({len(sums)} packages)</summary>",
        "",
        "```",
        *sums,
        "```",
        "",
        "</details>",
    ]
    return "\n".join(lines) + "\n"


# -- the timeline --------------------------------------------------------------------------

ROW = 26
LEFT = 260  # the label column
PLOT = 760
RIGHT = 120  # room for the last bar's duration and status
TOP = 66


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def _tick_step(seconds: float) -> float:
    """At most about ten grid lines, at round times."""
    for step in (1, 5, 10, 30, 60, 300, 600, 1800, 3600, 7200, 14400, 21600, 43200, 86400):
        if seconds / step <= 10:
            return float(step)
    return 172800.0


def timeline_svg(rows: Sequence[Row], *, title: str = "build timeline") -> str:
    """One row per config, grouped by machine; bars from start to end, durations beside."""
    span = _span(rows) or (0.0, 1.0)
    start, end = span[0], max(span[1], span[0] + 1.0)
    scale = PLOT / (end - start)
    body: list[str] = []
    y = TOP
    machine = None
    for r in rows:
        if r.machine != machine:
            machine = r.machine
            y += 6
            body.append(
                f'<text x="8" y="{y + 14}" class="machine">{_esc(machine)}</text>'
                f'<line x1="8" x2="{LEFT + PLOT + RIGHT - 8}" y1="{y + 19}" y2="{y + 19}" '
                'stroke="#bbb"/>'
            )
            y += ROW
        colour = STATUS_COLOURS.get(r.status, "#9e9e9e")
        body.append(f'<text x="20" y="{y + 17}" class="label">{_esc(r.label)}</text>')
        tip = f"{r.label} ({r.config}): {r.status}, {_duration(r.seconds)}"
        if r.started is not None and r.seconds is not None:
            x = LEFT + (r.started - start) * scale
            width = max(r.seconds * scale, 2.0)
            body.append(
                f'<rect x="{x:.1f}" y="{y + 4}" width="{width:.1f}" height="{ROW - 8}" rx="3" '
                f'fill="{colour}"><title>{_esc(tip)}</title></rect>'
                f'<text x="{x + width + 4:.1f}" y="{y + 17}" class="dur">'
                f"{_duration(r.seconds)} {_esc(r.status)}</text>"
            )
        else:
            body.append(
                f'<text x="{LEFT}" y="{y + 17}" class="dur" fill="{colour}">'
                f"{_esc(r.status)}{f' ({_esc(r.reason)})' if r.reason else ''}"
                f"<title>{_esc(tip)}</title></text>"
            )
        y += ROW
    axis: list[str] = []
    step = _tick_step(end - start)
    tick = 0.0
    while tick <= end - start + 1e-6:
        x = LEFT + tick * scale
        axis.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP - 8}" y2="{y}" stroke="#e0e0e0"/>'
            f'<text x="{x:.1f}" y="{TOP - 12}" class="tick">+{format_duration(tick)}</text>'
        )
        tick += step
    width = LEFT + PLOT + RIGHT
    height = y + 16
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(start)) if _span(rows) else "-"
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Arial, sans-serif">',
            "<style>.label{font-size:13px;fill:#222}.machine{font-size:14px;font-weight:bold;"
            "fill:#222}.dur{font-size:11px;fill:#444}.tick{font-size:11px;fill:#666;"
            "text-anchor:middle}.title{font-size:16px;font-weight:bold}</style>",
            f'<rect width="{width}" height="{height}" fill="#fff"/>',
            f'<text x="8" y="20" class="title">{_esc(title)}</text>'
            f'<text x="8" y="36" class="dur">{len(rows)} configs, started {started}, '
            f"{format_duration(end - start) if _span(rows) else '-'} in all</text>",
            *axis,
            *body,
            "</svg>",
        ]
    )


def write_report(
    root: Path, folders: Sequence[Path], say: Callable[[str], None], note: Callable[[str], None]
) -> int:
    rows, sums = collect(root, folders)
    if not rows:
        raise UserError("review report: the summary lists no configs; build some first")
    text = markdown(rows, sums)
    target = root / "build_artifacts"
    target.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target / "report.md", text)
    svg = timeline_svg(rows, title=f"{root.name}: build timeline")
    atomic_write_text(target / "timeline.svg", svg + "\n")
    say(text.rstrip("\n"))
    note(f"wrote {target / 'report.md'} and {target / 'timeline.svg'}")
    if any(r.provenance is not None and r.provenance.dirty for r in rows):
        note(f"{DIRTY_WARNING}: report.md leads with it")
    return 0
