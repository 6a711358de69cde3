"""The SVG charts on their own: marks carry their values, positions follow them, text is escaped, gaps stay gaps."""

from __future__ import annotations

import datetime as dt
import math
import xml.etree.ElementTree as ET

import pytest

from airflow_zorder.plugins import charts

NS = {"s": "http://www.w3.org/2000/svg"}
T = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def svg(text: str) -> ET.Element:
    return ET.fromstring(text)  # well-formed XML, or this raises


@pytest.mark.parametrize("lo,hi", [(0, 1), (0, 2.37), (0.8, 1.02), (0, 1234), (-3, 7), (5, 5)])
def test_nice_ticks_cover_the_range_in_round_steps(lo, hi):
    ticks = charts.nice_ticks(lo, hi)
    assert ticks[0] <= lo and ticks[-1] >= hi and 2 <= len(ticks) <= 12
    steps = {round(b - a, 9) for a, b in zip(ticks, ticks[1:])}
    assert len(steps) == 1
    step = steps.pop()
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert round(mantissa, 6) in (1, 2, 2.5, 5, 10)


def test_line_chart_points_markers_and_gaps():
    s = charts.Series(
        "a<b",
        [(T, 2.0), (T + dt.timedelta(days=1), None), (T + dt.timedelta(days=2), 1.0), (T + dt.timedelta(days=3), 1.5)],
        ids=["1", "2", "3", "4"],
    )
    m = charts.Marker(T + dt.timedelta(hours=36), "re-clustered", kind="cluster")
    root = svg(charts.line_chart([s], markers=[m], refs=[charts.RefLine(1.0, "ideal")], title="t & t"))
    points = root.findall(".//s:circle", NS)
    assert [p.get("data-id") for p in points] == ["1", "3", "4"]  # the None is not drawn
    assert [float(p.get("data-value")) for p in points] == [2.0, 1.0, 1.5]
    ys = [float(p.get("cy")) for p in points]
    assert ys[0] < ys[2] < ys[1]  # higher values are drawn higher
    xs = [float(p.get("cx")) for p in points]
    assert xs == sorted(xs)
    (line,) = root.findall(".//s:polyline", NS)  # one segment: (3, 4); the lone first point has none
    assert len(line.get("points").split()) == 2
    marker = root.find(".//s:g[@class='marker cluster']", NS)
    mx = float(marker.find("s:line", NS).get("x1"))
    assert xs[0] < mx < xs[1]  # 1.5 days in, between day 0 and day 2
    assert root.find(".//s:g[@data-series='a<b']", NS) is not None  # escaped in the source, intact in the DOM
    assert root.find("s:title", NS).text == "t & t"


def test_bar_chart_heights_follow_values_and_empty_charts_say_so():
    bars = [charts.Bar("1", 4), charts.Bar("2", 0), charts.Bar("3", 8)]
    root = svg(charts.bar_chart(bars, title="h"))
    rects = root.findall(".//s:rect[@class='bar']", NS)
    h = [float(r.get("height")) for r in rects]
    assert h[1] == 0 and h[2] == pytest.approx(2 * h[0])
    assert "no data" in charts.bar_chart([], title="h")
    assert "no data yet" in charts.line_chart([], title="h")


def test_close_marker_labels_are_stacked_and_charts_share_a_time_axis():
    s = charts.Series("wa", [(T, 1.0), (T + dt.timedelta(hours=3), 2.5)], ids=["r1", "r2"], titles=["one", "two"])
    near = [charts.Marker(T + dt.timedelta(hours=h), "re-clustered (hilbert)", kind="cluster") for h in (0, 3)]
    span = (T - dt.timedelta(days=1), T + dt.timedelta(days=1))
    root = svg(charts.line_chart([s], markers=near, title="t", time_range=span))
    texts = [m.find("s:text", NS) for m in root.findall(".//s:g[@class='marker cluster']", NS)]
    assert float(texts[0].get("y")) != float(texts[1].get("y"))  # 3 h apart on a 2-day axis: one above the other
    assert [p.find("s:title", NS).text for p in root.findall(".//s:circle", NS)] == ["one", "two"]
    # the same time range: the same x for the same time, whatever else each chart holds
    other = svg(charts.line_chart([charts.Series("b", [(T, 7.0)])], title="u", time_range=span))
    assert root.findall(".//s:circle", NS)[0].get("cx") == other.find(".//s:circle", NS).get("cx")
    # the last time label ends at the axis' end (inside the chart), the others are centred
    anchors = [t.get("text-anchor") for t in root.findall(".//s:g[@class='axis x-axis']/s:text", NS)]
    assert anchors[-1] == "end" and set(anchors[:-1]) == {"middle"}
