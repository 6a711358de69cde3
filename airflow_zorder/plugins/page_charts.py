"""The table page's charts (server-side SVG from :mod:`~airflow_zorder.plugins.charts`) from its data
(:func:`~airflow_zorder.plugins.page_data.detail`)."""

from __future__ import annotations

from typing import Any

from airflow_zorder.core.stats.stats_store import as_datetime
from airflow_zorder.plugins import charts
from airflow_zorder.plugins.rendering import fmt_ts


def history_chart(d: dict[str, Any]) -> str:
    """Per column, files a point query reads / ideal over the kept snapshots, with the re-clustering runs."""
    hist = d["history"]
    cols = [c["column"] for c in d["columns"]]
    series = [
        charts.Series(
            name=c,
            points=[
                (h["at"], ((h["evaluation"].get("columns") or {}).get(c) or {}).get("partition_ratio"))
                for h in hist
                if h["at"] is not None
            ],
            ids=[str(h["snapshot_id"]) for h in hist if h["at"] is not None],
        )
        for c in cols
    ]
    markers = []
    for e in d["cluster_events"]:
        at = as_datetime(e.get("at"))
        if at is None:
            continue
        parts = e.get("partitions") or []
        files = f"files {e.get('files_before')} -> {e.get('files_after')}" if e.get("files_before") is not None else ""
        markers.append(
            charts.Marker(
                at=at,
                kind="cluster",
                label=f"re-clustered ({e.get('curve') or '?'})",
                title=f"re-clustered {fmt_ts(at)}: {e.get('status') or ''}, curve {e.get('curve')}, "
                f"columns {', '.join(e.get('columns') or [])}, {len(parts)} partition(s) {files}",
            )
        )
    refs = [charts.RefLine(1.0, "ideal = 1", kind="ideal")]
    threshold = (d["evaluation"].get("policy") or {}).get("max_ratio_to_ideal")
    if threshold and not d["evaluation"].get("num_partitions"):
        # the sensor compares each partition with the threshold: a line is exact only without partitions
        refs.append(charts.RefLine(float(threshold), f"re-cluster above {threshold:g}x", kind="threshold"))
    return charts.line_chart(
        series,
        markers=markers,
        refs=refs,
        title="Files a point query reads, times the ideal",
        y_label="files read / ideal",
    )


def histogram_charts(d: dict[str, Any]) -> dict[str, str]:
    """Per column, the files by depth."""
    out = {}
    for c, hist in d["histograms"].items():
        keys = sorted(hist, key=int)
        # bucket 0 is always empty (every ranged file has depth >= 1); trailing empty buckets add nothing
        while keys and hist[keys[-1]] == 0 and int(keys[-1]) > 1:
            keys.pop()
        bars = [
            charts.Bar(
                label=str(int(k)),
                value=float(hist[k]),
                attrs={"bucket": k},
                title=f"{hist[k]} file(s) of depth {'<= ' if int(k) > 16 else ''}{int(k)}",
            )
            for k in keys
            if int(k) >= 1
        ]
        out[c] = charts.bar_chart(
            bars, title=f"Depth histogram of {c}", x_label="depth (files stacked at a value)", y_label="files"
        )
    return out
