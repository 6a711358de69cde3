"""Is a table's file overlap bad enough to re-cluster?  The sensor's (and the UI's) decision rules.

Airflow-free: a stats snapshot (``stats_store.load_latest``) and the table's events go in, a compact
JSON-serialisable payload comes out (decision, human-readable reasons with the numbers, per-column
metrics, the partitions to re-cluster).  The metrics are :func:`metrics.table_clustering`'s; nothing is
re-derived here.

Rules (:class:`HealthPolicy` holds the thresholds):

* Every partition (the whole table when unpartitioned) is scored per column: the column's
  ``ratio_to_ideal`` (expected files a point query reads / the ideal ``N ** (1 - 1/d)``) divided by its
  threshold, and, when set, ``average_depth / max_average_depth`` and ``expected_fraction /
  max_files_fraction``; a column's score is the largest of these.  A partition's score is the worst
  column's (``aggregate="worst"``) or the mean over columns (``"mean"``); above 1 it is degraded.
* Guards: stats older than ``max_stats_age`` or collected before the last re-clustering, and tables
  below ``min_files`` / ``min_bytes``, give ``hold`` (no decision).  A degraded table re-clustered less
  than ``min_interval_since_cluster`` ago, or with less than ``min_new_data_fraction`` of its bytes
  written since, is ``hold`` too (anti-thrash).  Otherwise degraded -> ``recluster``, else ``healthy``.
* ``d`` (clustering columns of the ideal) is the number of columns the table was last clustered on
  when the watched columns are among them, else the number of watched columns.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.policy import metrics
from airflow_zorder.core.stats import stats_schema, stats_store

__all__ = [
    "DECISIONS",
    "HealthPolicy",
    "default_columns",
    "last_cluster_event",
    "parse_columns",
    "snapshot_time",
    "evaluate",
    "record_decision",
    "last_decision",
]

DECISIONS = ("recluster", "healthy", "hold")
DECISION_EVENT = "decision"
WORST_PARTITIONS_LISTED = 20  # per-partition detail kept in the payload (the XCom); the rest is counted
_NAMED_IN_REASONS = 5
_AGGREGATES = ("worst", "mean")
UTC = dt.timezone.utc


@dataclass(frozen=True)
class HealthPolicy:
    """Thresholds and guards of :func:`evaluate` (timedeltas may be given as seconds)."""

    max_ratio_to_ideal: float = 2.0  # recluster when files a point query reads / ideal exceeds this
    max_average_depth: float | None = None  # absolute: Snowflake's average_depth
    max_files_fraction: float | None = None  # absolute: expected fraction of files a point query reads
    per_column: Mapping[str, float] | None = None  # per-column ratio thresholds (override max_ratio_to_ideal)
    aggregate: str = "worst"  # over columns: "worst" or "mean" (of each column's value / its threshold)
    min_files: int = 8  # guard: smaller tables are not worth it
    min_bytes: int = 0
    max_stats_age: timedelta | None = timedelta(hours=24)  # older stats -> hold
    min_interval_since_cluster: timedelta | None = timedelta(hours=1)  # anti-thrash
    min_new_data_fraction: float = 0.0  # anti-thrash: bytes written since the last re-clustering / all bytes
    min_partition_files: int = 2  # partitions with fewer files are never listed (nothing to improve)
    max_partitions: int | None = 1000  # partitions listed per decision, worst first (bounds a run and the XCom)

    def __post_init__(self) -> None:
        for name in ("max_stats_age", "min_interval_since_cluster"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, timedelta):
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise ValueError(f"{name} must be a timedelta or seconds, not {v!r}")
                object.__setattr__(self, name, timedelta(seconds=float(v)))
        if self.per_column is not None:
            object.__setattr__(self, "per_column", {str(k): float(v) for k, v in dict(self.per_column).items()})
        if self.aggregate not in _AGGREGATES:
            raise ValueError(f"aggregate must be one of {_AGGREGATES}, not {self.aggregate!r}")
        positive = {"max_ratio_to_ideal": self.max_ratio_to_ideal, "max_average_depth": self.max_average_depth,
                    "max_files_fraction": self.max_files_fraction, **{f"per_column[{k!r}]": v
                                                                      for k, v in (self.per_column or {}).items()}}
        for name, v in positive.items():
            if v is not None and not (isinstance(v, (int, float)) and v > 0 and math.isfinite(v)):
                raise ValueError(f"{name} must be a positive number, not {v!r}")
        if not 0.0 <= self.min_new_data_fraction <= 1.0:
            raise ValueError(f"min_new_data_fraction must be within [0, 1], not {self.min_new_data_fraction!r}")
        if self.max_partitions is not None and self.max_partitions < 1:
            raise ValueError(f"max_partitions must be at least 1 (or None for all), not {self.max_partitions!r}")

    def threshold(self, column: str) -> float:
        """The ratio threshold of ``column``."""
        return float((self.per_column or {}).get(column, self.max_ratio_to_ideal))

    def to_dict(self) -> dict[str, Any]:
        """JSON form (timedeltas in seconds); :meth:`from_dict` reads it back."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = v.total_seconds() if isinstance(v, timedelta) else dict(v) if isinstance(v, Mapping) else v
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> HealthPolicy:
        """A policy from :meth:`to_dict` output (unknown keys are an error, so typos do not pass silently)."""
        data = dict(data or {})
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown HealthPolicy field(s) {unknown}; known: {sorted(known)}")
        return cls(**data)


# --------------------------------------------------------------------------- small helpers


def _iso(t: dt.datetime | None) -> str | None:
    return None if t is None else stats_store.iso_utc(t)


def _pct(x: float) -> str:
    v = 100.0 * x
    return f"{v:.0f}%" if v >= 10 else f"{v:.1f}%" if v >= 0.1 else f"{v:.2g}%"


def _num(x: float) -> str:
    return f"{x:.1f}" if abs(x - round(x, 1)) < 1e-9 else f"{x:.3g}"


def format_duration(seconds: float) -> str:
    """Seconds as '42 s', '5 min', '3.2 h' or '4.0 d' (reasons, the UI)."""
    s = abs(seconds)
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    if s < 172800:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} d"


def _event_rows(events: pa.Table | Sequence[Mapping[str, Any]] | None, kind: str) -> list[dict[str, Any]]:
    """Events of ``kind`` as dicts, oldest first."""
    if events is None:
        return []
    rows = events.to_pylist() if isinstance(events, pa.Table) else [dict(e) for e in events]
    rows = [r for r in rows if r.get("kind") == kind]
    return sorted(rows, key=lambda r: stats_store.as_datetime(r.get("at")) or dt.datetime.min.replace(tzinfo=UTC))


def last_cluster_event(events: pa.Table | Sequence[Mapping[str, Any]] | None) -> dict[str, Any] | None:
    """The newest successful re-clustering event (a dict), or None."""
    done = [e for e in _event_rows(events, "cluster") if e.get("status") in (None, "clustered")]
    return done[-1] if done else None


def _available_columns(snapshot: pa.Table, name_col: str) -> list[str]:
    if snapshot.num_rows == 0:
        return []
    return sorted(c for c in pc.unique(snapshot[name_col]).to_pylist() if c is not None)


def default_columns(snapshot_columns: Sequence[str], events: pa.Table | Sequence[Mapping[str, Any]] | None
                    ) -> tuple[list[str], str]:
    """``(columns, source)``: the last clustering's columns that have stats, else every column with stats."""
    last = last_cluster_event(events)
    have = set(snapshot_columns)
    if last and last.get("columns"):
        cols = [c for c in last["columns"] if c in have]
        if cols:
            return cols, "last_cluster_event"
    return sorted(have), "all_columns"


def parse_columns(columns: Sequence[str] | str | None) -> list[str] | None:
    """Columns as a list: a sequence, a comma-separated string or a JSON list (templated values); None stays None."""
    if columns is None:
        return None
    if isinstance(columns, str):
        text = columns.strip()
        if text.startswith("["):
            columns = json.loads(text)
        else:
            columns = [c for c in (x.strip() for x in text.split(",")) if c]
    out = [str(c) for c in columns]
    return out or None


def _files(snapshot: pa.Table) -> dict[str, np.ndarray]:
    """One entry per distinct data file: partition ('' if none), size, mtime (ms; NaN unknown)."""
    n = snapshot.num_rows
    if n == 0:
        return {"partition": np.array([], dtype=object), "size": np.zeros(0), "mtime_ms": np.zeros(0)}
    enc = pc.dictionary_encode(snapshot["path"]).combine_chunks()
    codes = enc.indices.to_numpy(zero_copy_only=False)
    _, first = np.unique(codes, return_index=True)
    take = pa.array(first)

    def col(name: str, fill: Any) -> np.ndarray:
        if name not in snapshot.column_names:
            return np.full(len(first), fill, dtype=object if isinstance(fill, str) else float)
        arr = snapshot[name].take(take)
        if isinstance(fill, str):
            return np.array([fill if v is None else v for v in arr.to_pylist()], dtype=object)
        return arr.cast(pa.float64()).fill_null(np.nan).to_numpy(zero_copy_only=False)

    return {"partition": col("partition", ""), "size": col("file_size", np.nan), "mtime_ms": col("file_mtime_ms", np.nan)}


def snapshot_time(snapshot: pa.Table, latest_run: Mapping[str, Any] | None = None) -> dt.datetime | None:
    """When the stats were last confirmed current: the newest collection run when it found this snapshot
    current (``latest_run``, e.g. ``stats_store.latest_run``), else the snapshot's own run record (file
    metadata), else its newest row."""
    own = _own_snapshot_time(snapshot)
    if latest_run and latest_run.get("collected_at") and "snapshot_id" in snapshot.column_names and snapshot.num_rows:
        if latest_run.get("snapshot_id") == pc.max(snapshot["snapshot_id"]).as_py():
            run_at = stats_store.as_datetime(latest_run["collected_at"])
            return max(t for t in (run_at, own) if t is not None)
    return own


def _own_snapshot_time(snapshot: pa.Table) -> dt.datetime | None:
    md = snapshot.schema.metadata or {}
    raw = md.get(stats_schema.RUN_METADATA_KEY)
    if raw:
        try:
            t = stats_store.as_datetime(json.loads(raw).get("collected_at"))
            if t is not None:
                return t
        except (ValueError, TypeError):
            pass
    if "collected_at" in snapshot.column_names and snapshot.num_rows:
        return stats_store.as_datetime(pc.max(snapshot["collected_at"]).as_py())
    return None


# --------------------------------------------------------------------------- scoring


@dataclass
class _ColumnScore:
    score: float
    kind: str  # "ratio" | "depth" | "fraction"


def _column_score(cd: Mapping[str, Any] | None, column: str, policy: HealthPolicy) -> _ColumnScore | None:
    if not cd:
        return None
    comps: list[tuple[float, str]] = []
    if cd.get("ratio_to_ideal") is not None:
        comps.append((cd["ratio_to_ideal"] / policy.threshold(column), "ratio"))
    if policy.max_average_depth is not None and cd.get("average_depth") is not None:
        comps.append((cd["average_depth"] / policy.max_average_depth, "depth"))
    if policy.max_files_fraction is not None and cd.get("expected_fraction") is not None:
        comps.append((cd["expected_fraction"] / policy.max_files_fraction, "fraction"))
    if not comps:
        return None
    s, k = max(comps)
    return _ColumnScore(float(s), k)


def _group_score(scores: Mapping[str, _ColumnScore], aggregate: str) -> tuple[float | None, str | None]:
    """``(score, worst column)`` of one partition."""
    if not scores:
        return None, None
    worst = max(scores, key=lambda c: (scores[c].score, c))
    if aggregate == "mean":
        return float(np.mean([s.score for s in scores.values()])), worst
    return scores[worst].score, worst


def _short_why(column: str, cs: _ColumnScore, cd: Mapping[str, Any], policy: HealthPolicy) -> str:
    if cs.kind == "depth":
        return f"{column} average depth {_num(cd['average_depth'])} > {_num(policy.max_average_depth or 0)}"
    if cs.kind == "fraction":
        return f"{column} reads {_pct(cd['expected_fraction'])} of files > {_pct(policy.max_files_fraction or 0)}"
    return f"{column} {cd['ratio_to_ideal']:.1f}x the ideal, threshold {_num(policy.threshold(column))}x"


def _column_line(column: str, c: Mapping[str, Any], policy: HealthPolicy, partitioned: bool, kind: str) -> str:
    """One reason line with the numbers, e.g. 'l_suppkey: a point query reads 41% of 64 files, 4.1x ...'."""
    thr = policy.threshold(column)
    if kind == "depth":
        return (f"{column}: average depth {_num(c['average_depth'])} files (max_average_depth "
                f"{_num(policy.max_average_depth or 0)}), max depth {c['max_depth']}")
    if kind == "fraction":
        return (f"{column}: a point query reads {_pct(c['expected_fraction'])} of {c['num_files']} files "
                f"(max_files_fraction {_pct(policy.max_files_fraction or 0)})")
    if partitioned:
        return (f"{column}: within partitions, a point query reads {_pct(c['partition_fraction'])} of a partition's "
                f"files, {c['partition_ratio']:.1f}x the ideal {_pct(c['partition_ideal_fraction'])} "
                f"(threshold {_num(thr)}x)")
    return (f"{column}: a point query reads {_pct(c['expected_fraction'])} of {c['num_files']} files, "
            f"{c['ratio_to_ideal']:.1f}x the ideal {_pct(c['ideal_fraction'])} (threshold {_num(thr)}x)")


# --------------------------------------------------------------------------- evaluate


def evaluate(
    snapshot: pa.Table,
    columns: Sequence[str] | str | None = None,
    policy: HealthPolicy | None = None,
    *,
    events: pa.Table | Sequence[Mapping[str, Any]] | None = None,
    now: dt.datetime | None = None,
    table: str = "",
    stats_location: str = "",
    collected_at: dt.datetime | str | None = None,
    num_clustering_columns: int | None = None,
) -> dict[str, Any]:
    """Decide ``recluster`` / ``healthy`` / ``hold`` for a stats snapshot (see the module doc).

    ``snapshot``: FILE_STATS_SCHEMA rows (``stats_store.load_latest``); ``events``: the table's events
    (``stats_store.load_events``) for the last re-clustering; ``collected_at``: when the stats were last
    confirmed current (the newest collection run), default the snapshot's own time; ``now``: default the
    clock.  Unknown ``columns`` raise ValueError naming the columns with statistics.
    """
    policy = policy or HealthPolicy()
    now = stats_store.as_datetime(now) or dt.datetime.now(UTC)
    name_col = "column_name" if "column_name" in snapshot.column_names else "column"
    available = _available_columns(snapshot, name_col)
    requested = parse_columns(columns)
    last = last_cluster_event(events)
    cluster_cols = [str(c) for c in (last or {}).get("columns") or []]
    notes: list[str] = []
    if requested is not None:
        unknown = [c for c in requested if c not in available]
        if unknown:
            where = f" of {table}" if table else ""
            raise ValueError(
                f"unknown column(s) {unknown}: the statistics{where} have {available or 'no columns'}"
                + (" (collect stats for them first)" if available else ""))
        cols, source = list(dict.fromkeys(requested)), "argument"
    else:
        cols, source = default_columns(available, events)
        missing = [c for c in cluster_cols if c not in available]
        if missing and source == "last_cluster_event":
            notes.append(f"columns of the last re-clustering without statistics (not evaluated): {missing}")
    if num_clustering_columns is not None:
        d = int(num_clustering_columns)
    elif cluster_cols and set(cols) <= set(cluster_cols):
        d = len(cluster_cols)
    else:
        d = max(len(cols), 1)

    stats = snapshot if name_col == "column" else stats_schema.to_footer_stats(snapshot)
    if cols and set(cols) != set(available):
        stats = stats.filter(pc.is_in(stats["column"], pa.array(cols, pa.string())))
    summary = metrics.table_clustering(stats, cols, num_clustering_columns=d) if cols else {
        "per_column": {}, "partition_ratio": {}, "partitions": {}, "worst_column": None, "headline": None}

    files = _files(snapshot)
    num_files = int(len(files["size"]))
    total_bytes = int(np.nansum(files["size"])) if num_files else 0
    part_names = sorted({str(p) for p in files["partition"]})
    partitioned = any(p != "" for p in part_names)
    snapshot_id = (int(pc.max(snapshot["snapshot_id"]).as_py()) if "snapshot_id" in snapshot.column_names
                   and snapshot.num_rows else None)
    stats_time = stats_store.as_datetime(collected_at) or snapshot_time(snapshot)
    age_s = max((now - stats_time).total_seconds(), 0.0) if stats_time else None
    last_at = stats_store.as_datetime(last.get("at")) if last else None

    new_fraction = None
    if last_at is not None and num_files and total_bytes > 0 and not np.isnan(files["mtime_ms"]).all():
        newer = files["mtime_ms"] > last_at.timestamp() * 1000.0
        new_fraction = float(np.nansum(files["size"][newer]) / total_bytes)

    # ---- scores per partition ('' = the whole unpartitioned table)
    part_bytes: dict[str, float] = {}
    for p, s in zip(files["partition"], files["size"]):
        part_bytes[str(p)] = part_bytes.get(str(p), 0.0) + (0.0 if np.isnan(s) else float(s))
    groups: list[dict[str, Any]] = []
    col_best: dict[str, tuple[float, str, str]] = {}  # column -> (score, kind, partition)
    for key, p in (summary.get("partitions") or {}).items():
        if partitioned and (key == "" or p["num_files"] < policy.min_partition_files):
            continue
        scores = {c: s for c in cols if (s := _column_score(p["columns"].get(c), c, policy)) is not None}
        for c, s in scores.items():
            if c not in col_best or s.score > col_best[c][0]:
                col_best[c] = (s.score, s.kind, key)
        score, worst = _group_score(scores, policy.aggregate)
        if score is None:
            continue
        groups.append({"partition": key, "num_files": int(p["num_files"]), "bytes": int(part_bytes.get(key, 0)),
                       "score": score, "worst_column": worst, "ratio_to_ideal": p.get("ratio_to_ideal"),
                       "why": _short_why(worst, scores[worst], p["columns"][worst], policy)})
    degraded_groups = sorted((g for g in groups if g["score"] > 1.0), key=lambda g: (-g["score"], g["partition"]))
    degraded = bool(degraded_groups)

    # ---- per-column table view
    out_cols: dict[str, dict[str, Any]] = {}
    for c in cols:
        w = (summary.get("per_column") or {}).get(c) or {}
        read = ideal = n_in_parts = 0.0
        for p in (summary.get("partitions") or {}).values():
            pc_ = p["columns"].get(c)
            if pc_:
                read += pc_.get("expected_files_read") or 0.0
                ideal += pc_.get("ideal_files_read") or 0.0
                n_in_parts += pc_.get("num_files") or 0
        best = col_best.get(c)
        out_cols[c] = {
            "expected_fraction": w.get("expected_fraction"),
            "ideal_fraction": w.get("ideal_fraction"),
            "ratio_to_ideal": w.get("ratio_to_ideal"),
            "partition_ratio": (summary.get("partition_ratio") or {}).get(c),
            "partition_fraction": read / n_in_parts if n_in_parts else None,
            "partition_ideal_fraction": ideal / n_in_parts if n_in_parts else None,
            "average_overlaps": w.get("average_overlaps"),
            "average_depth": w.get("average_depth"),
            "max_depth": w.get("max_depth"),
            "num_files": w.get("num_files"),
            "files_without_stats": w.get("files_without_stats"),
            "threshold": policy.threshold(c),
            "score": best[0] if best else None,
            "over_threshold": bool(best and best[0] > 1.0),
        }

    # ---- guards and reasons
    reasons: list[str] = []
    stale: list[str] = []
    small: list[str] = []
    thrash: list[str] = []
    if not cols or num_files == 0:
        small.append("no data files with column statistics in the latest snapshot: nothing to decide")
    if stats_time is None:
        stale.append("the snapshot has no collection time: collect stats again")
    elif policy.max_stats_age is not None and age_s is not None and age_s > policy.max_stats_age.total_seconds():
        stale.append(f"stats are {format_duration(age_s)} old (collected {_iso(stats_time)}), older than max_stats_age "
                     f"{format_duration(policy.max_stats_age.total_seconds())}: collect stats before deciding")
    if stats_time is not None and last_at is not None and stats_time < last_at:
        stale.append(f"stats were collected ({_iso(stats_time)}) before the last re-clustering ({_iso(last_at)}): "
                     "collect stats again before deciding")
    if num_files and num_files < policy.min_files:
        small.append(f"only {num_files} files (min_files {policy.min_files}): too small to re-cluster")
    if num_files and total_bytes < policy.min_bytes:
        small.append(f"only {total_bytes} bytes (min_bytes {policy.min_bytes}): too small to re-cluster")
    if degraded and last_at is not None:
        since = (now - last_at).total_seconds()
        if policy.min_interval_since_cluster is not None and since < policy.min_interval_since_cluster.total_seconds():
            thrash.append(f"the last re-clustering finished {format_duration(since)} ago (min_interval_since_cluster "
                          f"{format_duration(policy.min_interval_since_cluster.total_seconds())})")
        if policy.min_new_data_fraction > 0:
            if new_fraction is None:
                notes.append("bytes written since the last re-clustering are unknown (no file times): "
                             "min_new_data_fraction not applied")
            elif new_fraction < policy.min_new_data_fraction:
                thrash.append(f"only {_pct(new_fraction)} of the bytes were written since the last re-clustering "
                              f"(min_new_data_fraction {_pct(policy.min_new_data_fraction)})")

    if stale or small:
        decision = "hold"
    elif not degraded:
        decision = "healthy"
    elif thrash:
        decision = "hold"
    else:
        decision = "recluster"

    reasons.extend(stale + small)
    if thrash and decision == "hold":
        reasons.extend(f"degraded, but held: {t}" for t in thrash)
    if partitioned:
        n_eligible = len(groups)
        if degraded_groups:
            named = ", ".join(f"{g['partition']} ({g['why']})" for g in degraded_groups[:_NAMED_IN_REASONS])
            more = len(degraded_groups) - _NAMED_IN_REASONS
            reasons.append(f"{len(degraded_groups)} of {n_eligible} partitions need re-clustering: {named}"
                           + (f" and {more} more" if more > 0 else ""))
        elif cols:
            reasons.append(f"no partition over its thresholds ({n_eligible} evaluated)")
        for c in cols:
            if out_cols[c]["partition_ratio"] is not None:
                reasons.append(_column_line(c, out_cols[c], policy, True, "ratio"))
    elif cols and groups:
        over = [c for c in cols if out_cols[c]["over_threshold"]]
        shown = over or ([summary["worst_column"]] if summary.get("worst_column") else [])
        for c in shown:
            kind = col_best[c][1] if c in col_best else "ratio"
            line = _column_line(c, out_cols[c], policy, False, kind)
            reasons.append(line if over else f"healthy: worst column {line}")
    if policy.aggregate == "mean" and groups:
        top = max(groups, key=lambda g: g["score"])
        reasons.append(f"aggregate 'mean': mean over columns of value/threshold is {top['score']:.2f}"
                       + (f" in {top['partition']}" if partitioned else "") + " (degraded above 1)")
    for c in cols:
        nws = out_cols[c].get("files_without_stats") or 0
        if nws:
            notes.append(f"{c}: {nws} of {out_cols[c]['num_files']} files have no usable statistics "
                         "(counted as read; re-clustering cannot fix that)")
    reasons.extend(notes)

    cap = policy.max_partitions
    listed = degraded_groups if cap is None else degraded_groups[:cap]
    if partitioned and cap is not None and len(degraded_groups) > cap:
        reasons.append(f"listing the worst {cap} of {len(degraded_groups)} degraded partitions (max_partitions); "
                       "the rest follow in later runs")
    worst_parts = [{k: g[k] for k in ("partition", "num_files", "bytes", "score", "worst_column", "ratio_to_ideal")}
                   for g in sorted(groups, key=lambda g: (-g["score"], g["partition"]))[:WORST_PARTITIONS_LISTED]]

    return {
        "table": table,
        "stats_location": stats_location,
        "decision": decision,
        "degraded": degraded,
        "reasons": reasons,
        "evaluated_at": _iso(now),
        "snapshot_id": snapshot_id,
        "stats_collected_at": _iso(stats_time),
        "stats_age_s": age_s,
        "num_files": num_files,
        "total_bytes": total_bytes,
        "num_partitions": len([p for p in part_names if p != ""]),
        "columns": out_cols,
        "columns_source": source,
        "num_clustering_columns": d,
        "worst_column": summary.get("worst_column"),
        "headline": summary.get("headline"),
        "last_cluster_at": _iso(last_at),
        "new_data_fraction": new_fraction,
        "partitions": [g["partition"] for g in listed] if partitioned else [],
        "partitions_degraded": len(degraded_groups) if partitioned else 0,
        "partitions_evaluated": len(groups) if partitioned else 0,
        "worst_partitions": worst_parts if partitioned else [],
        "worst_partitions_truncated": partitioned and len(groups) > WORST_PARTITIONS_LISTED,
        "policy": policy.to_dict(),
    }


# --------------------------------------------------------------------------- decisions as events


def record_decision(stats_location: str, payload: Mapping[str, Any], filesystem: Any = None,
                    source: str | None = None) -> str:
    """Record an :func:`evaluate` payload as a ``decision`` event of the table (the UI shows the last one)."""
    if payload.get("decision") not in DECISIONS:
        raise ValueError(f"not an evaluation payload: decision {payload.get('decision')!r}")
    event = {
        "kind": DECISION_EVENT,
        "run_id": source,
        "table_name": payload.get("table") or None,
        "at": payload.get("evaluated_at"),
        "status": payload["decision"],
        "columns": list((payload.get("columns") or {}).keys()),
        "partitions": list(payload.get("partitions") or []),
        "details": json.dumps(payload, default=str, separators=(",", ":")),
    }
    return stats_store.record_event(stats_location, event, filesystem=filesystem)


def last_decision(stats_location: str, filesystem: Any = None, *,
                  events: pa.Table | Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any] | None:
    """The payload of the newest ``decision`` event (``None`` if none); ``events`` saves re-reading them."""
    if events is None:
        events = stats_store.load_events(stats_location, filesystem, kind=DECISION_EVENT)
    rows = _event_rows(events, DECISION_EVENT)
    if not rows:
        return None
    ev = rows[-1]
    try:
        payload = json.loads(ev.get("details") or "")
        if isinstance(payload, dict) and payload.get("decision") in DECISIONS:
            return payload
    except ValueError:
        pass
    return {"table": ev.get("table_name"), "stats_location": stats_location, "decision": ev.get("status"),
            "evaluated_at": _iso(stats_store.as_datetime(ev.get("at"))), "partitions": list(ev.get("partitions") or []),
            "columns": {c: {} for c in ev.get("columns") or []}, "reasons": []}


# --------------------------------------------------------------------------- when to look again


def next_recheck_at(payload: Mapping[str, Any], policy: HealthPolicy | None = None,
                    now: dt.datetime | str | float | None = None, *, slack_s: float = 1.0) -> float | None:
    """The earliest time (Unix seconds) at which the clock alone could change ``payload``'s decision, with no
    new snapshot, run or event: the stats turning older than ``max_stats_age`` (-> ``hold``), or, for a degraded
    table, ``min_interval_since_cluster`` since the last re-clustering running out (``hold`` -> ``recluster``).

    From the payload's ``stats_collected_at`` / ``last_cluster_at`` / ``degraded`` and ``policy`` (default the
    payload's own).  Only times after ``now`` (default the payload's ``evaluated_at``) count; ``slack_s`` is
    added so that an evaluation at the returned time is past the boundary.  None: no such time.
    """
    if policy is None:
        policy = HealthPolicy.from_dict(payload.get("policy"))
    now_t = stats_store.as_datetime(now if now is not None else payload.get("evaluated_at")) or dt.datetime.now(UTC)
    times: list[dt.datetime] = []
    stats_at = stats_store.as_datetime(payload.get("stats_collected_at"))
    if stats_at is not None and policy.max_stats_age is not None:
        times.append(stats_at + policy.max_stats_age)
    last_at = stats_store.as_datetime(payload.get("last_cluster_at"))
    if last_at is not None and payload.get("degraded") and policy.min_interval_since_cluster is not None:
        times.append(last_at + policy.min_interval_since_cluster)
    ahead = [t for t in times if t >= now_t]
    return min(ahead).timestamp() + slack_s if ahead else None
