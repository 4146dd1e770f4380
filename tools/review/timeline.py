"""``timeline.svg``: one row per config grouped by the machine that built it, a bar from its
start to its end with the duration written beside it; self-contained (no fonts, styles or
scripts from elsewhere), so it renders the same in a browser, a GitHub comment and an image
viewer."""

from __future__ import annotations

import html
import time
from collections.abc import Sequence

from tools.localbuild.engines.watch.progress import format_duration
from tools.review.rows import Row, duration_text, time_span

STATUS_COLOURS = {
    "done": "#2e7d32",
    "skipped": "#81c784",
    "failed": "#c62828",
    "interrupted": "#ef6c00",
    "pending": "#9e9e9e",
}

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
    span = time_span(rows) or (0.0, 1.0)
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
        tip = f"{r.label} ({r.config}): {r.status}, {duration_text(r.seconds)}"
        if r.started is not None and r.seconds is not None:
            x = LEFT + (r.started - start) * scale
            width = max(r.seconds * scale, 2.0)
            body.append(
                f'<rect x="{x:.1f}" y="{y + 4}" width="{width:.1f}" height="{ROW - 8}" rx="3" '
                f'fill="{colour}"><title>{_esc(tip)}</title></rect>'
                f'<text x="{x + width + 4:.1f}" y="{y + 17}" class="dur">'
                f"{duration_text(r.seconds)} {_esc(r.status)}</text>"
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
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(start)) if time_span(rows) else "-"
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
            f"{format_duration(end - start) if time_span(rows) else '-'} in all</text>",
            *axis,
            *body,
            "</svg>",
        ]
    )
