"""What the health pages show, computed by the core: ``recluster_policy.evaluate`` (the sensor's decision rules) and
``metrics.table_clustering`` (depth histograms, partitions) on snapshots read with ``stats_store``.

Nothing here derives a metric.  The current evaluation is the sensor's own: ``FileStatsHook.evaluate``,
with the sensor's policy and columns when it has recorded a decision (``recluster_policy.last_decision``), else
``HealthPolicy()`` defaults.  Past snapshots are judged with ``recluster_policy.evaluate`` as of their time.  Snapshots are
immutable (an id names fixed content), so per-snapshot results are cached by ``(stats location, snapshot
id, columns, policy)``; the current evaluation, which depends on the clock (stats age), is cached for at
most ``[zorder] cache_ttl_s`` seconds (default 60) and recomputed when a new snapshot, run or event lands.

A table whose format keeps the statistics (a Delta log) is read through it (``FileStatsHook.metadata_format``): its
snapshot is a version, and its history is that version alone (past versions are not replayed from the metadata;
decisions stay in the events).

The clustering runs and what each cost (bytes rewritten, bytes added since the previous run, write amplification,
the worst ratio to the ideal before and after) are ``history.clustering_runs``'s, over the store's snapshots (a
table read through its metadata: the versions each run read and committed); the latest incremental plan is the one the sensor's last
recorded decision carries (``recluster_policy.last_decision``), shown as recorded.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from airflow_zorder.core.advisor import advice_events
from airflow_zorder.core.jobs.options import stats_location_for
from airflow_zorder.core.policy import history as run_history
from airflow_zorder.core.policy import metrics, recluster_policy, write_amplification
from airflow_zorder.core.stats import stats_store
from airflow_zorder.core.stats.stats_store import as_datetime
from airflow_zorder.hooks.file_stats import FileStatsHook
from airflow_zorder.plugins.discovery import TableRef
from airflow_zorder.table_access import table_page_path

HISTORY_LIMIT = 120  # newest snapshots charted per table
PARTITION_LIMIT = 200  # partitions listed per table (worst first)
RUN_LIMIT = 50  # newest clustering runs listed per table
_CACHE_SIZE = 2048
_DEFAULT_TTL_S = 60


class _Cache:
    """A small thread-safe LRU (the API server answers requests from a thread pool)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.data: OrderedDict[Any, Any] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: Any, compute: Callable[[], Any]) -> Any:
        with self.lock:
            if key in self.data:
                self.data.move_to_end(key)
                return self.data[key]
        value = compute()
        with self.lock:
            self.data[key] = value
            while len(self.data) > self.size:
                self.data.popitem(last=False)
        return value

    def clear(self) -> None:
        with self.lock:
            self.data.clear()


CACHE = _Cache(_CACHE_SIZE)


def _ttl_s() -> float:
    from airflow.sdk import conf

    return max(conf.getfloat("zorder", "cache_ttl_s", fallback=_DEFAULT_TTL_S), 0.0)


def _policy_key(policy: recluster_policy.HealthPolicy) -> str:
    return repr(sorted(policy.to_dict().items()))


def _sensor_basis(last: dict[str, Any] | None) -> tuple[recluster_policy.HealthPolicy, list[str] | None, str]:
    """Policy and columns of the sensor's last decision, so the page judges the table as the sensor does."""
    if not last:
        return recluster_policy.HealthPolicy(), None, "the default policy (the sensor has not recorded a decision yet)"
    try:
        policy = (
            recluster_policy.HealthPolicy.from_dict(last.get("policy"))
            if last.get("policy")
            else recluster_policy.HealthPolicy()
        )
    except (TypeError, ValueError):
        return recluster_policy.HealthPolicy(), None, "the default policy (the sensor's recorded one could not be read)"
    cols = [str(c) for c in (last.get("columns") or {})] or None
    return policy, cols, "the sensor's policy and columns (from its last decision)"


def _runs_by_snapshot(location: str, fs: Any) -> dict[int, dict[str, Any]]:
    """The run that committed each snapshot (its ``collected_at`` is the snapshot's time)."""
    out: dict[int, dict[str, Any]] = {}
    for r in stats_store.load_runs(location, fs).to_pylist():
        if r.get("snapshot_id") is None:
            continue
        sid = int(r["snapshot_id"])
        if sid not in out or (r.get("new_snapshot") and not out[sid].get("new_snapshot")):
            out[sid] = r
    return out


def _state(ref: TableRef) -> dict[str, Any]:
    """Cheap reads every request: latest snapshot id, events (a few small files), the sensor's last decision."""
    iceberg = {"iceberg_catalog": ref.iceberg_catalog, "iceberg_conn_id": ref.iceberg_conn_id}
    if ref.error or not (ref.stats_location or any(iceberg.values())):
        raise LookupError(ref.error or f"no stats location for {ref.table}")
    defaulted = ref.stats_location == stats_location_for(ref.table)  # lets the hook say "no such table"
    hook = FileStatsHook(ref.table, None if defaulted else ref.stats_location, ref.conn_id, **iceberg)
    fs = hook.get_conn()
    loc = hook.stats_location
    sid = hook.get_latest_snapshot_id()  # a Delta table's version; refuses Hudi/Iceberg, names storage errors
    if sid is None:
        hook.get_snapshot()  # raises StatsNotFoundError saying why (never collected, wrong location, no table)
        raise stats_store.StatsNotFoundError(f"no statistics at {loc}")
    events = hook.get_events()
    last = recluster_policy.last_decision(loc, fs, events=events)
    policy, cols, basis = _sensor_basis(last)
    run = hook.get_latest_run() or {}
    return {
        "hook": hook,
        "fs": fs,
        "location": loc,
        "snapshot_id": sid,
        "events": events,
        "last_decision": last,
        "policy": policy,
        "columns": cols,
        "basis": basis,
        # a table read through its metadata is current whenever it is read: its version alone keys the cache
        "run_at": str(run.get("committed_at") if hook.metadata_format is not None else run.get("collected_at")),
    }


def current(ref: TableRef, state: dict[str, Any] | None = None) -> dict[str, Any]:
    """The table's health now, as the sensor judges it (``FileStatsHook.evaluate``); cached up to the TTL."""
    st = state or _state(ref)
    ttl = _ttl_s()
    bucket = int(time.time() // ttl) if ttl else time.time()
    key = (
        "current",
        st["location"],
        st["snapshot_id"],
        st["run_at"],
        st["events"].num_rows,
        tuple(st["columns"] or ()),
        _policy_key(st["policy"]),
        bucket,
    )
    return CACHE.get(key, lambda: st["hook"].evaluate(st["policy"], st["columns"], events=st["events"]))


def clustering(
    location: str,
    snapshot_id: int,
    columns: Sequence[str],
    num_clustering_columns: int,
    fs: Any = None,
    metadata: Any = None,
) -> dict[str, Any]:
    """``metrics.table_clustering`` of one snapshot, with the evaluation's ``d`` (cached per snapshot id);
    ``metadata``: the table's format when it is read through its metadata (``snapshot_id`` is a version)."""
    cols = list(columns)

    def compute() -> dict[str, Any]:
        if metadata is not None:
            snap = metadata.metadata_stats(cols, version=snapshot_id)
        else:
            snap = stats_store.load_snapshot(location, snapshot_id, fs, columns=cols)
        return metrics.table_clustering(snap, cols, num_clustering_columns=num_clustering_columns)

    source = metadata.format if metadata is not None else "store"
    return CACHE.get(("clustering", location, source, snapshot_id, tuple(cols), num_clustering_columns), compute)


def history(
    ref: TableRef,
    columns: Sequence[str],
    policy: recluster_policy.HealthPolicy,
    events: list[dict[str, Any]],
    fs: Any = None,
    limit: int = HISTORY_LIMIT,
    runs: dict[int, dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Per kept snapshot, oldest first (the newest ``limit``): its time and ``recluster_policy.evaluate`` as of then.

    Each snapshot is judged with the events known at its time and ``now`` = its collection time.  ``runs``:
    :func:`_runs_by_snapshot` when already read.
    """
    loc = ref.stats_location or ""
    ids = stats_store.list_snapshots(loc, fs)[-limit:]
    runs = _runs_by_snapshot(loc, fs) if runs is None else runs
    cols = list(columns)
    out = []
    for sid in ids:
        at = as_datetime((runs.get(sid) or {}).get("collected_at"))

        def compute(sid: int = sid, at: dt.datetime | None = at) -> dict[str, Any]:
            snap = stats_store.load_snapshot(loc, sid, fs, columns=cols)
            known = [e for e in events if at is None or (as_datetime(e.get("at")) or at) <= at]
            return recluster_policy.evaluate(
                snap, cols or None, policy, events=known, now=at, table=ref.table, stats_location=loc
            )

        res = CACHE.get(("history", loc, sid, tuple(cols), _policy_key(policy)), compute)
        out.append({"snapshot_id": sid, "at": at or as_datetime(res.get("stats_collected_at")), "evaluation": res})
    return out


def clustering_runs(
    location: str,
    events: list[dict[str, Any]],
    columns: Sequence[str],
    num_clustering_columns: int,
    fs: Any = None,
    metadata: Any = None,
    snapshot_runs: dict[int, dict[str, Any]] | None = None,
    headlines: dict[int, float | None] | None = None,
    limit: int = RUN_LIMIT,
) -> dict[str, Any]:
    """``history.clustering_runs`` of the table: each clustering run's cost and gain (the newest ``limit``).

    Its inputs, read here: the store's snapshots and their times (``snapshot_runs``: :func:`_runs_by_snapshot`; a
    table read through its ``metadata``: none, its runs name their versions), each snapshot's files no clustering run wrote
    (``write_amplification.unclustered_file_bytes``, cached per snapshot) and its worst ratio to the ideal (``headlines``: the
    history's evaluations, else :func:`clustering`'s headline).  A snapshot no longer kept reads as None.
    """
    cols = list(columns)
    source = metadata.format if metadata is not None else "store"
    timeline = None
    if metadata is None:
        runs = _runs_by_snapshot(location, fs) if snapshot_runs is None else snapshot_runs
        timeline = [(sid, as_datetime(r.get("collected_at"))) for sid, r in sorted(runs.items())]
    known = headlines or {}

    def load(sid: int) -> Any:
        if metadata is not None:
            return metadata.metadata_stats(cols or None, version=sid)
        return stats_store.load_snapshot(location, sid, fs, columns=cols or None)

    def unclustered_of(sid: int) -> dict[str, int] | None:
        def compute() -> dict[str, int] | None:
            try:
                return write_amplification.unclustered_file_bytes(load(sid))
            except (LookupError, OSError, ValueError):  # pruned snapshot, vacuumed Delta version, unreadable
                return None

        return CACHE.get(("unclustered", location, source, sid), compute)

    def ratio_of(sid: int) -> float | None:
        if sid in known:
            return known[sid]
        if not cols:
            return None
        try:
            return clustering(location, sid, cols, num_clustering_columns, fs, metadata).get("headline")
        except (LookupError, OSError, ValueError):
            return None

    return run_history.clustering_runs(events, timeline, unclustered_of=unclustered_of, ratio_of=ratio_of, limit=limit)


def latest_plan(last: dict[str, Any] | None, limit: int = PARTITION_LIMIT) -> dict[str, Any]:
    """The incremental plan of the sensor's last recorded decision, as recorded (totals, and per partition the
    files and bytes it rewrites, the estimated worst ratio before and after, the reasons; worst first, at most
    ``limit``), or why there is none (``state``): ``no-decision``, ``not-recluster`` (healthy or hold),
    ``no-plan`` (a ``recluster`` without a plan: ``incremental_plan`` off, or the plan could not be made),
    ``empty`` (the plan rewrites nothing) or ``plan``."""
    if not last:
        return {"state": "no-decision", "decision": None}
    base = {
        "decision": last.get("decision"),
        "evaluated_at": as_datetime(last.get("evaluated_at")),
        "snapshot_id": last.get("snapshot_id"),
    }
    plan = last.get("plan")
    if last.get("decision") != "recluster":
        return {**base, "state": "not-recluster"}
    if not isinstance(plan, dict):
        why = [r for r in last.get("reasons") or [] if r.startswith("incremental plan")]
        return {**base, "state": "no-plan", "why": why[0] if why else None}
    parts = sorted(
        plan.get("partitions") or [],
        key=lambda p: (-(p.get("ratio_before") or 0.0), p.get("partition") or ""),
    )
    totals = {
        k: plan.get(k)
        for k in ("files", "bytes", "num_output_files", "ratio_before", "ratio_after", "partitions_evaluated")
    }
    return {
        **base,
        "state": "plan" if plan.get("files") else "empty",
        "totals": totals,
        "columns": list(plan.get("columns") or []),
        "partitions": [
            {
                k: p.get(k)
                for k in (
                    "partition",
                    "files",
                    "num_files",
                    "bytes",
                    "bytes_total",
                    "num_output_files",
                    "ratio_before",
                    "ratio_after",
                    "reasons",
                )
            }
            for p in parts[:limit]
        ],
        "partitions_total": len(parts),
    }


def summary(ref: TableRef) -> dict[str, Any]:
    """One row of the all-tables page: decision, worst column vs ideal, depth, files, size, ages."""
    row: dict[str, Any] = {
        "table": ref.table,
        "stats_location": ref.stats_location,
        "url": table_page_path(ref.table),
        "sources": list(ref.sources),
        "error": None,
    }
    try:
        ev = current(ref)
    except Exception as exc:  # noqa: BLE001 - one broken table must not break the page; show why
        row["error"] = f"{type(exc).__name__}: {exc}"
        return row
    return {**row, **_headline(ev)}


def _headline(ev: dict[str, Any]) -> dict[str, Any]:
    worst = ev.get("worst_column")
    wc = (ev.get("columns") or {}).get(worst) or {}
    return {
        "decision": ev.get("decision"),
        "reasons": list(ev.get("reasons") or []),
        "headline": ev.get("headline"),
        "worst_column": worst,
        "expected_fraction": wc.get("expected_fraction"),
        "ideal_fraction": wc.get("ideal_fraction"),
        "ratio_to_ideal": wc.get("ratio_to_ideal"),
        # within each partition (the whole table when unpartitioned): what the headline and the sensor compare
        "partition_fraction": wc.get("partition_fraction"),
        "partition_ideal_fraction": wc.get("partition_ideal_fraction"),
        "num_partitions": ev.get("num_partitions") or 0,
        "partition_ratio": wc.get("partition_ratio"),
        "average_depth": wc.get("average_depth"),
        "num_files": ev.get("num_files"),
        "total_bytes": ev.get("total_bytes"),
        "stats_age_s": ev.get("stats_age_s"),
        "stats_collected_at": as_datetime(ev.get("stats_collected_at")),
        "last_cluster_at": as_datetime(ev.get("last_cluster_at")),
        "snapshot_id": ev.get("snapshot_id"),
        "evaluated_at": as_datetime(ev.get("evaluated_at")),
        "columns": list((ev.get("columns") or {}).keys()),
    }


_COLUMN_FIELDS = (
    "expected_fraction",
    "ideal_fraction",
    "ratio_to_ideal",
    "partition_fraction",
    "partition_ideal_fraction",
    "partition_ratio",
    "average_overlaps",
    "average_depth",
    "max_depth",
    "num_files",
    "files_without_stats",
    "threshold",
    "over_threshold",
)
_CLUSTERING_FIELDS = ("constant_files", "max_overlaps", "expected_files_read", "ideal_files_read", "arrow_type")


def detail(ref: TableRef) -> dict[str, Any]:
    """Everything on one table's page (raises LookupError / StatsNotFoundError when it cannot be shown)."""
    st = _state(ref)
    ev = current(ref, st)
    events = st["events"].to_pylist()
    cols = list((ev.get("columns") or {}).keys())
    d = int(ev.get("num_clustering_columns") or max(len(cols), 1))
    metadata = st["hook"].metadata_format
    clu = (
        clustering(st["location"], int(ev["snapshot_id"]), cols, d, st["fs"], metadata)
        if cols
        else {"per_column": {}, "partitions": {}}
    )
    per_col = clu.get("per_column") or {}
    snapshot_runs = _runs_by_snapshot(st["location"], st["fs"]) if metadata is None else None
    hist = (
        history(ref, cols, st["policy"], events, st["fs"], runs=snapshot_runs)
        if metadata is None
        else [
            {
                "snapshot_id": ev["snapshot_id"],
                "evaluation": ev,  # read through its metadata: its current version
                "at": metadata.version_time(ev["snapshot_id"]) or as_datetime(ev.get("stats_collected_at")),
            }
        ]
    )
    runs = clustering_runs(
        st["location"],
        events,
        cols,
        d,
        st["fs"],
        metadata,
        snapshot_runs=snapshot_runs,
        headlines={h["snapshot_id"]: h["evaluation"].get("headline") for h in hist},
    )
    to_recluster = set(ev.get("partitions") or [])
    partitions = sorted(
        ({"partition": k, "to_recluster": k in to_recluster, **v} for k, v in (clu.get("partitions") or {}).items()),
        key=lambda p: (-(p.get("ratio_to_ideal") or 0.0), p["partition"]),
    )
    return {
        "summary": {"table": ref.table, "stats_location": st["location"], **_headline(ev)},
        "evaluation": ev,
        "policy_basis": st["basis"],
        "columns": [
            {
                "column": c,
                **{k: ev["columns"][c].get(k) for k in _COLUMN_FIELDS},
                **{k: (per_col.get(c) or {}).get(k) for k in _CLUSTERING_FIELDS},
            }
            for c in cols
        ],
        "histograms": {c: dict((per_col.get(c) or {}).get("depth_histogram") or {}) for c in cols},
        "partitions": partitions[:PARTITION_LIMIT],
        "partitions_total": len(partitions),
        "history": hist,
        "cluster_events": [e for e in events if e.get("kind") == "cluster"],
        "runs": runs["runs"],
        "runs_total": runs["runs_total"],
        "run_totals": runs["totals"],
        "last_decision": st["last_decision"],
        "latest_plan": latest_plan(st["last_decision"]),
        "advice": advice_events.last_advice(st["location"], st["fs"], events=st["events"]),
    }
