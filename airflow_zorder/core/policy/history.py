"""Clustering over time: each collection run's snapshot summarised by the metrics (headline, worst column, depth),
and each clustering run with what it cost (:func:`clustering_runs`: bytes rewritten, bytes added since the
previous run, write amplification, the ratio before and after).

The store (:mod:`~airflow_zorder.core.stats.stats_store`) keeps the runs and snapshots; this module adds the
analytics on top, so storage never depends on the metrics.  Used by the hook's ``get_history`` and the UI.
"""

from __future__ import annotations

import bisect
import datetime as dt
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from airflow_zorder.core.policy import metrics, write_amplification
from airflow_zorder.core.policy.events import Events, event_rows
from airflow_zorder.core.stats import stats_store

__all__ = ["ClusteringSummary", "clustering_summary", "with_clustering", "clustering_history", "clustering_runs"]

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


def _details(event: Mapping[str, Any]) -> dict[str, Any]:
    raw = event.get("details")
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        out = json.loads(raw) if raw else {}
    except (TypeError, ValueError):
        return {}
    return out if isinstance(out, dict) else {}


def _int(v: Any) -> int | None:
    return None if v is None else int(v)


def _committed_version(details: Mapping[str, Any]) -> Any:
    """The version a run committed, from its event's details: the entry under the table's kind (``delta``: its
    ``read_version`` and ``version``); None when the run recorded none."""
    entry = details.get(str(details.get("kind")))
    if not isinstance(entry, Mapping):  # events written without the kind: the one entry that names versions
        entry = next((v for v in details.values() if isinstance(v, Mapping) and "read_version" in v), {})
    return entry.get("version")


def clustering_runs(
    events: Events,
    snapshots: Sequence[tuple[int, dt.datetime | None]] | None,
    *,
    unclustered_of: Callable[[int], Mapping[str, int] | None],
    ratio_of: Callable[[int], float | None],
    limit: int | None = None,
) -> dict[str, Any]:
    """Each successful clustering run (a ``cluster`` event), oldest first, with what it cost and what it gained.

    ``snapshots``: the stats store's snapshots as ``(id, committed at)``, every one its run records name (kept or
    pruned); None for a table read through its format's metadata, whose runs name their versions (the event's
    details under the table's kind, e.g. ``details.delta``: the run started from the version before its commit and
    left its commit's version).  A store run started from the
    newest snapshot committed before it started (its ``at`` minus ``duration_s``) and left the first snapshot
    committed after it ended and before the next run started.

    ``unclustered_of(id)``: :func:`write_amplification.unclustered_file_bytes` of that snapshot (None: not kept or
    unreadable);
    ``ratio_of(id)``: that snapshot's worst ratio to the ideal (the evaluation's ``headline``).  Only the newest
    ``limit`` runs are resolved (and returned).

    Per run: ``bytes_added`` = :func:`write_amplification.bytes_added` between the snapshot it started from and the
    one the previous run started from (the first run: every byte in its starting snapshot no clustering run wrote);
    None, with ``bytes_added_note`` saying why, when a snapshot is missing or no stats were collected between the
    two runs.  ``write_amplification`` = :func:`write_amplification.write_amplification`.  ``totals`` sums the runs
    returned:
    its write amplification is the sum rewritten over the sum added, of the runs whose bytes added are known.
    """
    rows = [e for e in event_rows(events, "cluster") if e.get("status") in (None, "clustered")]
    versioned = snapshots is None
    times = [(t, sid) for sid, t in (snapshots or ()) if t is not None]
    times.sort(key=lambda x: (x[0], x[1]))
    keys = [t for t, _ in times]

    def span(e: Mapping[str, Any]) -> tuple[dt.datetime | None, dt.datetime | None]:
        end = stats_store.as_datetime(e.get("at"))
        dur = e.get("duration_s")
        start = end - dt.timedelta(seconds=float(dur)) if end is not None and dur else end
        return start, end

    def before_after(i: int) -> tuple[int | None, int | None]:
        e = rows[i]
        if versioned:
            version = _committed_version(_details(e))
            return (int(version) - 1, int(version)) if version is not None else (None, None)
        start, end = span(e)
        if start is None or end is None:
            return None, None
        k = bisect.bisect_right(keys, start)
        before = times[k - 1][1] if k else None
        j = bisect.bisect_left(keys, end)
        after = times[j][1] if j < len(times) else None
        if after is not None and i + 1 < len(rows):
            nxt = span(rows[i + 1])[0]
            if nxt is not None and times[j][0] > nxt:
                after = None  # the next snapshot also shows the next run
        return before, after

    first = 0 if limit is None else max(len(rows) - limit, 0)
    cache: dict[int, Mapping[str, int] | None] = {}

    def unclustered(sid: int | None) -> Mapping[str, int] | None:
        if sid is None:
            return None
        if sid not in cache:
            cache[sid] = unclustered_of(sid)
        return cache[sid]

    out = []
    prev_before = before_after(first - 1)[0] if first > 0 else None
    for i in range(first, len(rows)):
        e = rows[i]
        det = _details(e)
        rewritten = det.get("rewritten") or {}
        plan = det.get("plan") or {}
        start, end = span(e)
        before, after = before_after(i)
        added, note = None, None
        if before is None:
            note = "no stats snapshot before this run" if not versioned else "the run's table version was not recorded"
        elif i > 0 and prev_before is None:
            note = (
                "no stats snapshot before the previous run"
                if not versioned
                else "the previous run's table version was not recorded"
            )
        elif i > 0 and not versioned and (before == prev_before or _before(times, before, span(rows[i - 1])[1])):
            note = "no stats were collected between the previous run and this one"
        else:
            now = unclustered(before)
            previous = unclustered(prev_before) if i > 0 else None
            if now is None or (i > 0 and previous is None):
                note = "a stats snapshot it needs is no longer kept"
            else:
                added = write_amplification.bytes_added(now, previous)
                note = "since the previous run" if i > 0 else "first run: the bytes no clustering run wrote"
        bytes_rw = rewritten.get("bytes", e.get("bytes_before"))
        bytes_rw = _int(bytes_rw)
        out.append(
            {
                "run_id": e.get("run_id"),
                "at": end,
                "started_at": start,
                "status": e.get("status"),
                "mode": det.get("mode") or "full",
                "curve": e.get("curve"),
                "columns": list(e.get("columns") or []),
                "partitions": len(e.get("partitions") or []),
                "files_rewritten": _int(rewritten.get("files", e.get("files_before"))),
                "output_files": _int(rewritten.get("output_files", e.get("files_after"))),
                "bytes_rewritten": bytes_rw,
                "bytes_written": _int(e.get("bytes_after")),
                "bytes_added": added,
                "bytes_added_note": note,
                "previous_run_id": rows[i - 1].get("run_id") if i > 0 else None,
                "write_amplification": write_amplification.write_amplification(bytes_rw or 0, added),
                "snapshot_before": before,
                "snapshot_after": after,
                "ratio_before": ratio_of(before) if before is not None else None,
                "ratio_after": ratio_of(after) if after is not None else None,
                "plan_ratio_before": plan.get("ratio_before"),
                "plan_ratio_after": plan.get("ratio_after"),
                "duration_s": e.get("duration_s"),
            }
        )
        prev_before = before
    known = [r for r in out if r["bytes_added"] is not None]
    rewritten_known = sum(r["bytes_rewritten"] or 0 for r in known)
    added_known = sum(r["bytes_added"] for r in known)
    return {
        "runs": out,
        "runs_total": len(rows),
        "totals": {
            "runs": len(out),
            "bytes_rewritten": sum(r["bytes_rewritten"] or 0 for r in out),
            "runs_with_bytes_added": len(known),
            "bytes_rewritten_with_added": rewritten_known,
            "bytes_added": added_known if known else None,
            "write_amplification": write_amplification.write_amplification(
                rewritten_known, added_known if known else None
            ),
        },
    }


def _before(times: Sequence[tuple[dt.datetime, int]], sid: int, t: dt.datetime | None) -> bool:
    """Whether snapshot ``sid`` was committed before ``t`` (the previous run's end)."""
    if t is None:
        return False
    at = next((x for x, s in times if s == sid), None)
    return at is not None and at < t
