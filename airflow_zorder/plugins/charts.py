"""Server-side SVG charts for the health pages: no JavaScript, no CDN, readable without a network.

Every mark carries its value in ``data-*`` attributes and a ``<title>`` tooltip, so a page can be
checked (by a test, or by a person hovering) against the stats it was drawn from.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")


@dataclass(frozen=True)
class Series:
    """A named line: ``points`` are ``(time, value)`` (value ``None`` = gap); ``ids`` label each point;
    ``titles``: each point's tooltip (default: name, value and time)."""

    name: str
    points: Sequence[tuple[dt.datetime, float | None]]
    ids: Sequence[str] = ()
    titles: Sequence[str] = ()


@dataclass(frozen=True)
class Marker:
    """A vertical line at ``at`` (e.g. a re-clustering run) with a short label and a tooltip."""

    at: dt.datetime
    label: str
    title: str = ""
    kind: str = "event"


@dataclass(frozen=True)
class RefLine:
    """A horizontal reference line (e.g. the ideal, or the policy's threshold); ``anchor``: its label at the
    plot's left (``"start"``) or right (``"end"``) end."""

    value: float
    label: str
    kind: str = "ref"
    anchor: str = "start"


@dataclass(frozen=True)
class Bar:
    """One bar of a bar chart."""

    label: str
    value: float
    title: str = ""
    attrs: dict[str, str] = field(default_factory=dict)


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.0f}" if float(v).is_integer() else f"{v:.1f}"
    return f"{v:.3g}"


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round tick values covering ``[lo, hi]`` (steps of 1, 2, 2.5 or 5 times a power of ten)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0, 1.0]
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks = []
    t = start
    while t <= hi + step * 1e-9:
        ticks.append(round(t, 12))
        t += step
    if ticks[-1] < hi:
        ticks.append(round(t, 12))
    return ticks


def _time_label(t: dt.datetime, span_s: float) -> str:
    if span_s < 2 * 86400:
        return t.strftime("%m-%d %H:%M")
    if span_s < 400 * 86400:
        return t.strftime("%Y-%m-%d")
    return t.strftime("%Y-%m")


def _svg_open(width: int, height: int, cls: str, label: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart {escape(cls)}" role="img" '
        f'aria-label="{escape(label)}" viewBox="0 0 {width} {height}" width="{width}" height="{height}">'
        f"<title>{escape(label)}</title>"
    )


_CHAR_W = 6.2  # about the width of one 11 px character: enough to keep marker labels apart
_LABEL_ROWS = 3  # marker labels are stacked in at most this many rows; more overlap (each keeps its tooltip)


def _label_places(xs: Sequence[float], labels: Sequence[str], right_end: float) -> list[tuple[int, bool]]:
    """Per marker, where its label goes: ``(row, ends_at_line)``.  Rows count upwards from the plot's top edge:
    the lowest row where the label does not run into the previous one of that row.  A label that would run past
    ``right_end`` ends at its line instead of starting there."""
    ends: list[float] = []
    places: dict[int, tuple[int, bool]] = {}
    for i in sorted(range(len(xs)), key=lambda k: xs[k]):
        w = _CHAR_W * len(labels[i]) + 6
        flip = xs[i] + w > right_end
        start = xs[i] - w if flip else xs[i]
        row = next((r for r, e in enumerate(ends) if start > e), len(ends))
        row = min(row, _LABEL_ROWS - 1)
        if row < len(ends):
            ends[row] = max(ends[row], start + w)
        else:
            ends.append(start + w)
        places[i] = (row, flip)
    return [places[i] for i in range(len(xs))]


def line_chart(
    series: Sequence[Series],
    *,
    markers: Sequence[Marker] = (),
    refs: Sequence[RefLine] = (),
    title: str,
    y_label: str = "",
    width: int = 760,
    height: int = 280,
    y_min: float | None = 0.0,
    time_range: tuple[dt.datetime, dt.datetime] | None = None,
) -> str:
    """A time-series line chart with vertical event markers and horizontal reference lines (SVG text);
    ``time_range``: the x axis spans at least it (charts drawn one above the other share their time axis)."""
    left, right, top, bottom = 56, 16, 22, 44
    pw = width - left - right
    times = [t for s in series for t, _ in s.points] + [m.at for m in markers]
    if times and time_range:
        times += list(time_range)
    vals = [v for s in series for _, v in s.points if v is not None] + [r.value for r in refs]
    out = [_svg_open(width, height, "line-chart", title)]
    if not times or not vals:
        out.append(
            f'<text class="empty" x="{width / 2}" y="{height / 2}" text-anchor="middle">no data yet</text></svg>'
        )
        return "".join(out)
    t0, t1 = min(times), max(times)
    span = (t1 - t0).total_seconds()
    if span <= 0:
        t0, t1, span = t0 - dt.timedelta(hours=1), t1 + dt.timedelta(hours=1), 7200.0
    lo = min(vals) if y_min is None else min(y_min, min(vals))
    ticks = nice_ticks(lo, max(vals) * 1.05 if max(vals) > 0 else max(vals) + 1)
    y0, y1 = ticks[0], ticks[-1]

    def x(t: dt.datetime) -> float:
        return left + pw * (t - t0).total_seconds() / span

    places = _label_places([x(m.at) for m in markers], [m.label for m in markers], float(width))
    top += 12 * max((row for row, _ in places), default=0)  # room for the stacked marker labels
    ph = height - top - bottom

    def y(v: float) -> float:
        return top + ph * (1 - (v - y0) / (y1 - y0))

    out.append('<g class="axis y-axis" font-size="11">')
    for tv in ticks:
        out.append(
            f'<line class="grid" x1="{left}" x2="{left + pw}" y1="{y(tv):.1f}" y2="{y(tv):.1f}"/>'
            f'<text x="{left - 6}" y="{y(tv) + 4:.1f}" text-anchor="end">{_fmt(tv)}</text>'
        )
    if y_label:
        out.append(
            f'<text class="axis-label" transform="translate(12,{top + ph / 2}) rotate(-90)" '
            f'text-anchor="middle">{escape(y_label)}</text>'
        )
    out.append('</g><g class="axis x-axis" font-size="11">')
    nt = 5
    for i in range(nt + 1):
        t = t0 + dt.timedelta(seconds=span * i / nt)
        anchor = "end" if i == nt else "middle"  # the last label ends at the axis' end, inside the chart
        out.append(
            f'<line class="tick" x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{top + ph}" y2="{top + ph + 4}"/>'
            f'<text x="{x(t):.1f}" y="{top + ph + 17}" text-anchor="{anchor}">{escape(_time_label(t, span))}</text>'
        )
    out.append(f'<line class="axis-line" x1="{left}" x2="{left + pw}" y1="{top + ph}" y2="{top + ph}"/></g>')
    for r in refs:
        lx, anchor = (left + pw - 4, "end") if r.anchor == "end" else (left + 4, "start")
        out.append(
            f'<g class="ref {escape(r.kind)}" data-value="{r.value!r}"><line x1="{left}" x2="{left + pw}" '
            f'y1="{y(r.value):.1f}" y2="{y(r.value):.1f}" stroke-dasharray="6 4"/>'
            f'<text x="{lx}" y="{y(r.value) - 4:.1f}" font-size="11" text-anchor="{anchor}">'
            f"{escape(r.label)}</text></g>"
        )
    for m, (row, flip) in zip(markers, places):
        tx, anchor = (x(m.at) - 3, "end") if flip else (x(m.at) + 3, "start")
        out.append(
            f'<g class="marker {escape(m.kind)}" data-at="{escape(m.at.isoformat())}">'
            f"<title>{escape(m.title or m.label)}</title>"
            f'<line x1="{x(m.at):.1f}" x2="{x(m.at):.1f}" y1="{top - 12 * row}" y2="{top + ph}" stroke-dasharray="3 3"/>'
            f'<text x="{tx:.1f}" y="{top - 6 - 12 * row}" font-size="11" text-anchor="{anchor}">'
            f"{escape(m.label)}</text></g>"
        )
    for i, s in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        out.append(f'<g class="series" data-series="{escape(s.name)}" stroke="{color}" fill="{color}">')
        run: list[str] = []
        segments: list[list[str]] = []
        for t, v in s.points:
            if v is None:
                if run:
                    segments.append(run)
                run = []
            else:
                run.append(f"{x(t):.1f},{y(v):.1f}")
        if run:
            segments.append(run)
        for seg in segments:
            if len(seg) > 1:
                out.append(f'<polyline fill="none" stroke-width="2" points="{" ".join(seg)}"/>')
        for j, (t, v) in enumerate(s.points):
            if v is None:
                continue
            pid = s.ids[j] if j < len(s.ids) else str(j)
            tip = s.titles[j] if j < len(s.titles) else f"{s.name}: {_fmt(v)} at {t.strftime('%Y-%m-%d %H:%M:%S')}"
            out.append(
                f'<circle class="point" cx="{x(t):.1f}" cy="{y(v):.1f}" r="3.5" data-id="{escape(pid)}" '
                f'data-value="{v!r}" data-at="{escape(t.isoformat())}">'
                f"<title>{escape(tip)}</title></circle>"
            )
        out.append("</g>")
    lx = left
    out.append('<g class="legend" font-size="12">')
    for i, s in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        out.append(
            f'<rect x="{lx}" y="{height - 14}" width="10" height="10" fill="{color}"/>'
            f'<text x="{lx + 14}" y="{height - 5}">{escape(s.name)}</text>'
        )
        lx += 24 + 7 * len(s.name)
    out.append("</g></svg>")
    return "".join(out)


def bar_chart(
    bars: Sequence[Bar],
    *,
    title: str,
    x_label: str = "",
    y_label: str = "",
    width: int = 420,
    height: int = 200,
    color: str = PALETTE[0],
) -> str:
    """A vertical bar chart (SVG text), e.g. a depth histogram."""
    left, right, top, bottom = 44, 8, 12, 40
    pw, ph = width - left - right, height - top - bottom
    out = [_svg_open(width, height, "bar-chart", title)]
    if not bars:
        out.append(f'<text class="empty" x="{width / 2}" y="{height / 2}" text-anchor="middle">no data</text></svg>')
        return "".join(out)
    ticks = nice_ticks(0.0, max(max(b.value for b in bars), 1.0), 4)
    top_v = ticks[-1]
    slot = pw / len(bars)
    out.append('<g class="axis y-axis" font-size="10">')
    for tv in ticks:
        yy = top + ph * (1 - tv / top_v)
        out.append(
            f'<line class="grid" x1="{left}" x2="{left + pw}" y1="{yy:.1f}" y2="{yy:.1f}"/>'
            f'<text x="{left - 4}" y="{yy + 3:.1f}" text-anchor="end">{_fmt(tv)}</text>'
        )
    out.append("</g>")
    out.append(f'<g class="bars" fill="{color}">')
    for i, b in enumerate(bars):
        h = ph * b.value / top_v
        attrs = "".join(f' data-{escape(k)}="{escape(v)}"' for k, v in b.attrs.items())
        out.append(
            f'<rect class="bar" x="{left + i * slot + 1:.1f}" y="{top + ph - h:.1f}" '
            f'width="{max(slot - 2, 1):.1f}" height="{h:.1f}" data-label="{escape(b.label)}" '
            f'data-value="{b.value!r}"{attrs}><title>{escape(b.title or f"{b.label}: {_fmt(b.value)}")}</title></rect>'
        )
    out.append("</g>")
    out.append('<g class="axis x-axis" font-size="10">')
    for i, b in enumerate(bars):
        out.append(
            f'<text x="{left + (i + 0.5) * slot:.1f}" y="{top + ph + 12}" text-anchor="middle">{escape(b.label)}</text>'
        )
    out.append(f'<line class="axis-line" x1="{left}" x2="{left + pw}" y1="{top + ph}" y2="{top + ph}"/>')
    if x_label:
        out.append(
            f'<text class="axis-label" x="{left + pw / 2}" y="{height - 4}" text-anchor="middle">'
            f"{escape(x_label)}</text>"
        )
    if y_label:
        out.append(
            f'<text class="axis-label" transform="translate(10,{top + ph / 2}) rotate(-90)" '
            f'text-anchor="middle">{escape(y_label)}</text>'
        )
    out.append("</g></svg>")
    return "".join(out)
