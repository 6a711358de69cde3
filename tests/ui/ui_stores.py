"""Real stats stores for the UI tests: snapshots committed with ``stats_store.write_snapshot`` and clustering
events with ``record_event``, in temp dirs (no Airflow needed)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from airflow_zorder.core.stats import stats_schema, stats_store
from airflow_zorder.core.stats.stats_schema import FILE_STATS_SCHEMA

UTC = dt.UTC
# a recent timeline (stats younger than the default max_stats_age of 24 h), whole seconds
T0 = (dt.datetime.now(UTC) - dt.timedelta(hours=30)).replace(minute=0, second=0, microsecond=0)
USER, PASSWORD = "zorder-admin", "zorder-pw-1234"
VIEWER, VIEWER_PASSWORD = "zorder-viewer", "viewer-pw-1234"


def file_rows(files: list[dict], collected_at: dt.datetime, table_name: str) -> pa.Table:
    """FILE_STATS rows: ``files`` = [{path, partition, size, rows, bounds: {column: (min, max)}}] (int64 columns)."""
    rows = []
    for f in files:
        part = f.get("partition")
        for col, (lo, hi) in f["bounds"].items():
            rows.append(
                {
                    "snapshot_id": 0,
                    "table_name": table_name,
                    "path": f["path"],
                    "partition": part,
                    "partition_values": [tuple(part.split("=", 1))] if part else None,
                    "file_size": f["size"],
                    "file_mtime_ms": 1_000,
                    "file_rows": f["rows"],
                    "num_row_groups": 1,
                    "created_by": "test",
                    "column_name": col,
                    "arrow_type": "int64",
                    "physical_type": "INT64",
                    "min_value": str(lo),
                    "max_value": str(hi),
                    "null_count": 0,
                    "nan_count": None,
                    "value_count": f["rows"],
                    "has_stats": True,
                    "min_exact": True,
                    "max_exact": True,
                    "reason": None,
                    "method": "footer",
                    "error": None,
                    "collected_at": collected_at,
                }
            )
    t = pa.Table.from_pylist(rows, schema=FILE_STATS_SCHEMA)
    for k, v in stats_schema.bound_columns(t["min_value"], t["max_value"], t["arrow_type"]).items():
        t = t.set_column(t.schema.get_field_index(k), FILE_STATS_SCHEMA.field(k), v)
    return t


def overlapping_files(
    table: str,
    partitions: list[str | None],
    per_partition: int,
    cols=("x", "y"),
    narrow: str | None = None,
    name: str = "part",
) -> list[dict]:
    """Every file spans (almost) the whole range of every column (a scrambled layout), except the ``narrow``
    column, on which files hold disjoint slices (as appended data sorted on that column would)."""
    out = []
    for p in partitions:
        for i in range(per_partition):
            prefix = f"{table}/{p}" if p else table
            bounds = {c: (i * 100, i * 100 + 40) if c == narrow else (i, 1000 - i) for c in cols}
            out.append(
                {
                    "path": f"{prefix}/{name}-{i:03d}.parquet",
                    "partition": p,
                    "size": 1000 + 10 * i,
                    "rows": 100,
                    "bounds": bounds,
                }
            )
    return out


def grid_files(table: str, partitions: list[str | None], side: int, cols=("x", "y")) -> list[dict]:
    """side x side files tiling the (x, y) square: each file one cell, as a perfect 2-D clustering leaves them."""
    out = []
    step = 1000 // side
    for p in partitions:
        for i in range(side):
            for j in range(side):
                prefix = f"{table}/{p}" if p else table
                b = {cols[0]: (i * step, (i + 1) * step - 1), cols[1]: (j * step, (j + 1) * step - 1)}
                out.append(
                    {"path": f"{prefix}/part-{i}{j}.parquet", "partition": p, "size": 2000, "rows": 100, "bounds": b}
                )
    return out


@dataclass
class Store:
    table: str
    location: str
    snapshot_ids: list[int]
    times: list[dt.datetime]
    cluster_at: dt.datetime | None


def run_record(run_id: str, table: str, at: dt.datetime, files: int) -> dict:
    return {
        "run_id": run_id,
        "table_name": table,
        "table_kind": "path",
        "status": "ok",
        "method": "footer",
        "columns": ["x", "y"],
        "columns_requested": "all",
        "files_total": files,
        "errors": [],
        "gone_paths": [],
        "collected_at": stats_store.iso_utc(at),
        "started_at": stats_store.iso_utc(at - dt.timedelta(seconds=3)),
    }


def build_events_store(root: Path) -> Store:
    """A partitioned table: scrambled (snapshot 1), re-clustered (event), tidy (2), then appended to (3)."""
    table = str(root / "lake" / "events")
    loc = stats_store.default_location(table)
    parts = ["day=2026-03-01", "day=2026-03-02"]
    times = [T0, T0 + dt.timedelta(hours=2), T0 + dt.timedelta(hours=26)]
    snaps = [
        overlapping_files(table, parts, 6),
        grid_files(table, parts, 2),
        grid_files(table, parts, 2) + overlapping_files(table, parts[1:], 8, narrow="y", name="append"),
    ]
    ids = []
    cluster_at = T0 + dt.timedelta(hours=1)
    for k, (files, at) in enumerate(zip(snaps, times)):
        if k == 1:
            stats_store.record_event(
                loc,
                {
                    "kind": "cluster",
                    "run_id": "cluster-1",
                    "table_name": table,
                    "at": cluster_at,
                    "status": "clustered",
                    "columns": ["x", "y"],
                    "curve": "hilbert",
                    "partitions": parts,
                    "files_before": 12,
                    "files_after": 8,
                    "rows_before": 800,
                    "rows_after": 800,
                    "bytes_before": 8280,
                    "bytes_after": 16000,
                    "duration_s": 12.5,
                },
            )
        ids.append(
            stats_store.write_snapshot(loc, file_rows(files, at, table), run_record(f"r{k}", table, at, len(files)))
        )
    return Store(table, loc, ids, times, cluster_at)


def build_orders_store(root: Path) -> Store:
    """An unpartitioned table with one scrambled snapshot and no clustering yet; stats kept elsewhere."""
    table = str(root / "lake" / "orders")
    loc = str(root / "stats-elsewhere" / "orders")
    at = T0 + dt.timedelta(hours=27)
    files = overlapping_files(table, [None], 12, cols=("customer_id", "order_day"))
    sid = stats_store.write_snapshot(loc, file_rows(files, at, table), run_record("o1", table, at, len(files)))
    return Store(table, loc, [sid], [at], None)


def tables_option(stores: dict[str, Store]) -> str:
    """``[zorder] tables``: the events table by path (default stats location), orders with its location."""
    s = stores
    return f"{s['events'].table}\n{s['orders'].table}|{s['orders'].location}, {s['missing'].table}"
