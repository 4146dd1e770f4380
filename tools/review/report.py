"""``python -m tools review report [DIR...]``: what a CFEP-03 reviewer reads, and a picture of it.

From one or more build_artifacts/ folders (a merged one, or each machine's own), two files
in this feedstock's build_artifacts/:

- ``report.md``, the pull-request comment: per config its label, status, duration,
  packages, ccache hit rate and machine; the totals; who signed each package (its
  ``<package>.sigs``, verified offline against sigstore-python's production root: the
  identity and issuer its certificate names, or why it fails); the SHA256SUMS lines (also
  printed);
- ``timeline.svg``, one row per config grouped by the machine that built it, a bar from
  its start to its end with the duration written beside it.  It is self-contained (no
  fonts, styles or scripts from elsewhere), so it renders the same in a browser, in a
  GitHub comment upload and in an image viewer.

Several folders are read the way ``review merge`` reads them (merge.py): per config the best
record wins (done, then skipped, then the attempts that failed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from tools.foundation.errors import UserError
from tools.foundation.files import atomic_write_text
from tools.localbuild.engines.watch.progress import format_duration
from tools.localbuild.records.provenance import DIRTY_WARNING, Provenance
from tools.review.rows import Row, collect, duration_text, time_span
from tools.review.signatures import signed_by
from tools.review.timeline import timeline_svg
from tools.review.upload import packages_dir

STATUS_MARKS = {"done": "✅", "skipped": "☑️", "failed": "❌", "interrupted": "⏸️"}


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


def _signature_lines(signers: Mapping[str, str], sums: Sequence[str]) -> list[str]:
    """Who signed each package (``review sign``), or that none is signed."""
    if not signers:
        return [
            f"**Signatures:** none of the {len(sums)} packages is signed "
            "(`python -m tools review sign`, docs/cfep03.md).",
            "",
        ]
    lines = ["| package | signed by (identity, issuer) |", "|---|---|"]
    lines += [f"| {name} | {cell} |" for name, cell in signers.items()]
    return [*lines, ""]


def markdown(
    rows: Sequence[Row], sums: Sequence[str], signers: Mapping[str, str] | None = None
) -> str:
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
            f"| {r.label} | {_status_cell(r)} | {duration_text(r.seconds)} | {r.packages} | "
            f"{r.ccache} | {r.machine} | {r.commit_check} | {r.reason or '-'} |"
        )
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.status] = counts.get(r.status, 0) + 1
    built = sum(r.seconds or 0.0 for r in rows if r.status != "skipped")
    machines = len({r.machine for r in rows if r.machine != "-"})
    span = time_span(rows)
    wall = f", {format_duration(span[1] - span[0])} from first start to last end" if span else ""
    earlier = sum(1 for r in rows if r.earlier and r.status == "done")
    kept = f", {earlier} of them built by an earlier run" if earlier else ""
    lines += [
        "",
        f"**Total:** {len(rows)} configs ({', '.join(f'{n} {s}' for s, n in counts.items())}"
        f"{kept}), {sum(r.packages for r in rows)} packages, {format_duration(built)} of build "
        f"time on {machines} machine(s){wall}." + (f" **{DIRTY_WARNING}.**" if dirty else ""),
        "",
        *_signature_lines(signers or {}, sums),
        f"<details><summary>SHA256SUMS ({len(sums)} packages)</summary>",
        "",
        "```",
        *sums,
        "```",
        "",
        "</details>",
    ]
    return "\n".join(lines) + "\n"


def write_report(
    root: Path, folders: Sequence[Path], say: Callable[[str], None], note: Callable[[str], None]
) -> int:
    rows, sums = collect(root, folders)
    if not rows:
        raise UserError("review report: the summary lists no configs; build some first")
    folders = [packages_dir(f) for f in folders] or [root / "build_artifacts"]
    text = markdown(rows, sums, signed_by(folders, [line.split()[-1] for line in sums]))
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
