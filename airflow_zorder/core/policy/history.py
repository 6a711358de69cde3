"""Clustering over time: each collection run's snapshot summarised by the metrics (headline, worst column, depth).

The store (:mod:`~airflow_zorder.core.stats.stats_store`) keeps the runs and snapshots; this module adds the
analytics on top, so storage never depends on the metrics.  Used by the hook's ``get_history`` and the UI.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from airflow_zorder.core.policy import metrics
from airflow_zorder.core.stats import stats_store

__all__ = ["ClusteringSummary", "clustering_summary", "with_clustering", "clustering_history"]

#: ``(headline, worst_column, average_depth of the worst column)``; all None when unknown.
ClusteringSummary = tuple[float | None, str | None, float | None]


def clustering_summary(snapshot: pa.Table, columns: Sequence[str]) -> ClusteringSummary:
    """The history's three figures of one snapshot (:func:`metrics.table_clustering` on ``columns``)."""
    summary = metrics.table_clustering(snapshot, list(columns))
    worst = summary.get("worst_column")
    per_column = (summary.get("per_column") or {}).get(worst) or {}
    return summary.get("headline"), worst, per_column.get("average_depth")


def with_clustering(runs: pa.Table, summaries: Sequence[ClusteringSummary]) -> pa.Table:
    """``runs`` with ``headline``, ``worst_column`` and ``average_depth`` appended (one summary per run)."""
    return (
        runs.append_column("headline", pa.array([s[0] for s in summaries], pa.float64()))
        .append_column("worst_column", pa.array([s[1] for s in summaries], pa.string()))
        .append_column("average_depth", pa.array([s[2] for s in summaries], pa.float64()))
    )


def clustering_history(
    location: str,
    filesystem: Any = None,
    clustering_columns: Sequence[str] | None = None,
) -> pa.Table:
    """Health over time: one row per collection run (RUNS_SCHEMA), oldest first, with its snapshot's clustering.

    With ``clustering_columns``, adds per run the clustering summary of the
    snapshot it left (``headline``: files a point query reads relative to an
    ideal layout, 1.0 = ideal; ``worst_column``; ``average_depth`` of the
    worst column), computed with :func:`metrics.table_clustering` on that
    snapshot (null for snapshots removed by the retention).  Without, the
    runs as :func:`stats_store.load_history` returns them.
    """
    runs = stats_store.load_history(location, filesystem)
    if not clustering_columns:
        return runs
    cols = list(clustering_columns)
    kept = set(stats_store.list_snapshots(location, filesystem))
    cache: dict[int | None, ClusteringSummary] = {}
    summaries: list[ClusteringSummary] = []
    for sid in runs["snapshot_id"].to_pylist():
        if sid not in cache:
            cache[sid] = (None, None, None)
            if sid is not None and sid in kept:
                snap = stats_store.load_snapshot(location, sid, filesystem, cols)
                cache[sid] = clustering_summary(snap, cols)
        summaries.append(cache[sid])
    return with_clustering(runs, summaries)
