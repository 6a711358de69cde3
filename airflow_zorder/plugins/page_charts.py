"""The table page's charts (server-side SVG from :mod:`~airflow_zorder.plugins.charts`) from its data
(:func:`~airflow_zorder.plugins.page_data.detail`)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from airflow_zorder.core.stats.stats_store import as_datetime
from airflow_zorder.plugins import charts
from airflow_zorder.plugins.rendering import fmt_bytes, fmt_num, fmt_ratio, fmt_ts


def time_range(d: dict[str, Any]) -> tuple[dt.datetime, dt.datetime] | None:
    """The span of the snapshots and the re-clustering runs: the time axis the page's charts share."""
    times = [h["at"] for h in d["history"] if h["at"] is not None]
    times += [t for t in (as_datetime(e.get("at")) for e in d["cluster_events"]) if t is not None]
    times += [r["at"] for r in d.get("runs") or [] if r.get("at") is not None]
    return (min(times), max(times)) if times else None


def _run_line(r: dict[str, Any]) -> str:
    """One run's cost in words, e.g. 'incremental, rewrote 12 files (1.5 MiB), added 600 KiB, write amplification
    2.50, 3.10x -> 1.20x the ideal'."""
    wa = "–" if r.get("write_amplification") is None else fmt_num(r["write_amplification"])
    added = "unknown" if r.get("bytes_added") is None else fmt_bytes(r["bytes_added"])
    return (
        f"{r.get('mode')}, rewrote {r.get('files_rewritten')} files ({fmt_bytes(r.get('bytes_rewritten'))}), "
        f"added since the previous run {added}, write amplification {wa}, "
        f"{fmt_ratio(r.get('ratio_before'))} -> {fmt_ratio(r.get('ratio_after'))} the ideal"
    )


def history_chart(d: dict[str, Any]) -> str:
    """Per column, files a point query reads / ideal over the kept snapshots, with the re-clustering runs."""
    hist = d["history"]
    runs = {r["run_id"]: r for r in d.get("runs") or [] if r.get("run_id")}
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
        run = runs.get(e.get("run_id"))
        markers.append(
            charts.Marker(
                at=at,
                kind="cluster",
                label=f"re-clustered ({e.get('curve') or '?'})",
                title=f"re-clustered {fmt_ts(at)}: {e.get('status') or ''}, curve {e.get('curve')}, "
                f"columns {', '.join(e.get('columns') or [])}, {len(parts)} partition(s) {files}"
                + (f"; {_run_line(run)}" if run else ""),
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
        time_range=time_range(d),
    )


def runs_chart(d: dict[str, Any]) -> str:
    """Each re-clustering run's write amplification (bytes rewritten / bytes added since the previous run), on
    the health chart's time axis; a run whose bytes added are unknown is a gap."""
    runs = [r for r in d.get("runs") or [] if r.get("at") is not None]
    series = charts.Series(
        name="write amplification",
        points=[(r["at"], r.get("write_amplification")) for r in runs],
        ids=[str(r.get("run_id") or i) for i, r in enumerate(runs)],
        titles=[f"run {r.get('run_id')} at {fmt_ts(r['at'])}: {_run_line(r)}" for r in runs],
    )
    return charts.line_chart(
        [series],
        refs=[charts.RefLine(1.0, "1 = each added byte rewritten once", kind="ideal", anchor="end")],
        title="Write amplification per run: bytes rewritten / bytes added since the previous run",
        y_label="rewritten / added",
        height=200,
        time_range=time_range(d),
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
