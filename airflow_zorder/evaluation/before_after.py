"""Before/after comparison of a re-clustering run, from the stats jobs' and the clustering job's results.

Input: the statistics job's result before and after (each with its ``clustering`` summary, as the
``SparkCollectFileStatsOperator`` returns it), or two sensor decisions (Delta tables), and the clustering
job's result. Output: a JSON dict
(per column: expected fraction of files a point query reads, average depth, before and after) and
its text table. Airflow-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_zorder.core.policy.formatting import format_percent

_FIGURES = ("expected_fraction", "average_depth", "ratio_to_ideal")


def before_after_table(
    before: Mapping[str, Any], clustered: Mapping[str, Any] | None, after: Mapping[str, Any]
) -> dict[str, Any]:
    """Per-column figures before and after, rows and files, and the clustering run's time."""
    cb, ca = before.get("clustering") or {}, after.get("clustering") or {}
    clustered = clustered or {}
    columns = list(ca.get("columns") or cb.get("columns") or [])
    per_column = {}
    for c in columns:
        b = (cb.get("per_column") or {}).get(c) or {}
        a = (ca.get("per_column") or {}).get(c) or {}
        per_column[c] = {f"{k}_{when}": d.get(k) for k in _FIGURES for when, d in (("before", b), ("after", a))}
    return {
        "table": after.get("table") or before.get("table"),
        "columns": per_column,
        "headline_before": cb.get("headline"),
        "headline_after": ca.get("headline"),
        "rows_before": before.get("rows_total"),
        "rows_after": after.get("rows_total"),
        "files_before": before.get("files_total"),
        "files_after": after.get("files_total"),
        "clustering_status": clustered.get("status"),
        "clustering_run_id": clustered.get("run_id"),
        "curve": clustered.get("curve"),
        "partitions": [p.get("partition") for p in clustered.get("partitions") or [] if isinstance(p, Mapping)],
        "rows_verified": (clustered.get("before") or {}).get("rows"),
        "clustering_s": clustered.get("duration_s"),
        "stats_s": [before.get("duration_s"), after.get("duration_s")],
    }


def decisions_before_after(
    before: Mapping[str, Any], clustered: Mapping[str, Any] | None, after: Mapping[str, Any]
) -> dict[str, Any]:
    """The same report from two sensor decisions (``FileStatsHook.evaluate`` payloads): for Delta Lake tables,
    whose statistics come from the log, with no stats job before or after the clustering."""
    clustered = clustered or {}

    def as_stats(decision: Mapping[str, Any], when: str) -> dict[str, Any]:
        per_column = dict(decision.get("columns") or {})
        return {
            "table": decision.get("table"),
            "files_total": decision.get("num_files"),
            "rows_total": (clustered.get(when) or {}).get("rows"),
            "clustering": {"columns": list(per_column), "per_column": per_column, "headline": decision.get("headline")},
        }

    return before_after_table(as_stats(before, "before"), clustered, as_stats(after, "after"))


def _num(x: Any) -> str:
    return f"{x:.2f}" if isinstance(x, (int, float)) else "-"


def format_before_after(report: Mapping[str, Any]) -> str:
    """The report as a text table (what ``make demo`` prints)."""
    parts = report.get("partitions") or []
    lines = [
        f"re-clustered {report.get('table')} with {report.get('curve')} "
        f"({len(parts)} partition{'s' if len(parts) != 1 else ''}: {', '.join(parts) or 'whole table'}) "
        f"in {report.get('clustering_s')} s, run {report.get('clustering_run_id')}, "
        f"status {report.get('clustering_status')}",
        f"rows  {report.get('rows_before')} -> {report.get('rows_after')} "
        f"(clustering job verified {report.get('rows_verified')} rows by count + checksum)",
        f"files {report.get('files_before')} -> {report.get('files_after')}",
        "",
        f"{'column':<14}{'est. files read by point query':>30}{'average depth':>22}",
        f"{'':<14}{'before':>15}{'after':>15}{'before':>11}{'after':>11}",
    ]
    for c, d in (report.get("columns") or {}).items():
        lines.append(
            f"{c:<14}{format_percent(d.get('expected_fraction_before'), missing='-'):>15}"
            f"{format_percent(d.get('expected_fraction_after'), missing='-'):>15}"
            f"{_num(d.get('average_depth_before')):>11}{_num(d.get('average_depth_after')):>11}"
        )
    lines += [
        "",
        f"headline (files a point query reads / ideal for each partition, worst column; 1.00 = ideal): "
        f"{_num(report.get('headline_before'))} -> {_num(report.get('headline_after'))}",
    ]
    return "\n".join(lines)
