"""Real stats stores for the UI tests: snapshots committed with ``stats_store.write_snapshot`` and clustering
events with ``record_event`` (the job's own ``stats_store.cluster_event``), in temp dirs (no Airflow needed); a
real Delta table written by ``deltalake`` and re-clustered by ``core.delta.delta_commit`` (our commit, no Spark)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from airflow_zorder.core.policy.file_names import clustered_file_name
from airflow_zorder.core.stats import stats_schema, stats_store
from airflow_zorder.core.stats.stats_location import default_stats_location
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
    files: list[list[dict]] = field(default_factory=list)  # each snapshot's files, as written
    runs: list[dict[str, Any]] = field(default_factory=list)  # the clustering runs' results, as recorded
    decision: dict[str, Any] | None = None  # the sensor's payload (its XCom), when a test recorded one


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
    loc = default_stats_location(table)
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
                    "bytes_before": 12300,  # the 12 scrambled files of snapshot 1
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


def clustered(files: list[dict], run_id: str, size: int) -> list[dict]:
    """``files`` as a clustering run leaves them: named ``part-NNNNN-zorder-<run_id>.parquet`` (numbered per
    directory, as the job names them), each ``size`` bytes."""
    out, seen = [], {}
    for f in files:
        folder = f["path"].rsplit("/", 1)[0]
        k = seen.get(folder, 0)
        seen[folder] = k + 1
        out.append({**f, "path": f"{folder}/{clustered_file_name(k, run_id)}", "size": size})
    return out


def cluster_result(
    run_id: str, table: str, location: str, mode: str, rewritten: list[dict], written: list[dict], **extra: Any
) -> dict[str, Any]:
    """A clustering job result (``spark_jobs.cluster_table.run_cluster``'s keys) that rewrote ``rewritten`` into
    ``written``."""
    parts = sorted({f.get("partition") or "<whole table>" for f in rewritten})
    before = {"files": len(rewritten), "bytes": sum(f["size"] for f in rewritten), "rows": 100 * len(rewritten)}
    after = {"files": len(written), "bytes": sum(f["size"] for f in written), "rows": 100 * len(rewritten)}
    return {
        "status": "clustered",
        "run_id": run_id,
        "table": table,
        "kind": "path",
        "curve": "hilbert",
        "columns": ["x", "y"],
        "partition_columns": ["day"],
        "mode": mode,
        "stats_location": location,
        "messages": [],
        "partitions": [{"partition": p} for p in parts],
        "skipped": [],
        "before": before,
        "after": after,
        "rewritten": {"files": before["files"], "bytes": before["bytes"], "output_files": after["files"]},
        "phases": {"stage_and_verify_s": 1.0},
        **extra,
    }


def record_run(location: str, result: dict[str, Any], at: dt.datetime, duration_s: float) -> None:
    """Record ``result`` as the job does (``stats_store.cluster_event``), finished at ``at``."""
    event = stats_store.cluster_event({**result, "duration_s": duration_s})
    event["at"] = at  # the job stamps the time it records; the tests place runs on their timeline
    stats_store.record_event(location, event)


APPENDS_DAYS = ["day=2026-03-01", "day=2026-03-02"]


def build_appends_store(root: Path) -> Store:
    """A partitioned table that takes appends, re-clustered twice (the job's events, the job's file names):

    1. ingest files in both partitions (scrambled), re-clustered by a full run ``run-1`` into a 2x2 grid per
       partition (1,500-byte files);
    2. 4 appended files of 1,000 bytes in the second partition, then an incremental run ``run-2`` that rewrote
       them with that partition's 4 grid files (10,000 bytes) into a new grid (4 x 2,500 bytes);
    3. 6 more appended files in the second partition: the sensor (``conftest``) plans the next run.
    """
    table = str(root / "lake" / "appends")
    loc = default_stats_location(table)
    d1, d2 = APPENDS_DAYS
    ingest = overlapping_files(table, APPENDS_DAYS, 6, name="ingest")
    grid1 = clustered(grid_files(table, APPENDS_DAYS, 2), "run-1", 1500)
    appended = [{**f, "size": 1000} for f in overlapping_files(table, [d2], 4, name="append")]
    grid2 = clustered(grid_files(table, [d2], 2), "run-2", 2500)
    late = overlapping_files(table, [d2], 6, name="late")
    kept1 = [f for f in grid1 if f["partition"] == d1]
    snaps = [
        (T0, ingest),
        (T0 + dt.timedelta(hours=2), grid1),
        (T0 + dt.timedelta(hours=3), grid1 + appended),
        (T0 + dt.timedelta(hours=5), kept1 + grid2),
        (T0 + dt.timedelta(hours=26), kept1 + grid2 + late),
    ]
    runs = [
        (1, T0 + dt.timedelta(hours=1), 600.0, cluster_result("run-1", table, loc, "full", ingest, grid1)),
        (
            3,
            T0 + dt.timedelta(hours=4),
            300.0,
            cluster_result(
                "run-2",
                table,
                loc,
                "incremental",
                appended + [f for f in grid1 if f["partition"] == d2],
                grid2,
                plan={
                    "source": "given",
                    "files": 8,
                    "bytes": 10000,
                    "bins": 1,
                    "ratio_before": 1.7,
                    "ratio_after": 1.0,
                },
            ),
        ),
    ]
    ids = []
    for k, (at, files) in enumerate(snaps):
        for before, run_at, dur, result in runs:
            if before == k:
                record_run(loc, result, run_at, dur)
        ids.append(
            stats_store.write_snapshot(loc, file_rows(files, at, table), run_record(f"a{k}", table, at, len(files)))
        )
    return Store(
        table,
        loc,
        ids,
        [at for at, _ in snaps],
        runs[-1][1],
        files=[f for _, f in snaps],
        runs=[r for *_, r in runs],
    )


def build_delta_store(root: Path) -> Store:
    """A real Delta table (``deltalake``): 4 appends, our clustering commit ``drun-1`` (full: every file into 2
    files named by the job's rule, ``delta_commit.commit_rewrite``), 2 appends, ``drun-2`` (incremental: the 2
    appended files and one of drun-1's into 1), then 6 appends; each run's event recorded as the job records it,
    with its Delta versions (the runs placed 3 and 2 hours ago, past the sensor's anti-thrash interval).  ``files``: each run's (rewritten, appended since the previous run) files."""
    import numpy as np
    import pyarrow.parquet as pq
    from deltalake import DeltaTable, write_deltalake

    from airflow_zorder.core.delta import delta_commit as dc

    path = root / "lake" / "delta_events"
    table = str(path)
    loc = default_stats_location(table)
    rng = np.random.default_rng(11)

    def append(n: int) -> list[dc.DeltaFile]:
        before = (
            {f.path for f in dc.read_snapshot(DeltaTable(table)).files} if (path / "_delta_log").exists() else set()
        )
        for _ in range(n):
            v = rng.integers(0, 1000, (2, 50))
            v[:, 0], v[:, 1] = 0, 999  # every file spans the whole range: scrambled
            write_deltalake(table, pa.table({"x": v[0], "y": v[1]}), mode="append")
        return [f for f in dc.read_snapshot(DeltaTable(table)).files if f.path not in before]

    def rewrite(run_id: str, mode: str, inputs: list[dc.DeltaFile], outputs: int, at: dt.datetime) -> dict[str, Any]:
        dt_ = DeltaTable(table)
        read_version = int(dt_.version())
        rows = pa.concat_tables([pq.read_table(path / f.path) for f in inputs]).sort_by([("x", "ascending")])
        added = []
        step = -(-rows.num_rows // outputs)
        for k in range(outputs):
            name = clustered_file_name(k, run_id)
            pq.write_table(rows.slice(k * step, step), path / name)
            added.append(
                (
                    dc.DeltaFile(name, (path / name).stat().st_size),
                    dc.file_stats(pq.read_metadata(path / name), ["x", "y"]),
                )
            )
        version = dc.commit_rewrite(dt_, inputs, added, {"run_id": run_id, "curve": "hilbert", "columns": ["x", "y"]})
        before = {"files": len(inputs), "bytes": sum(f.size for f in inputs), "rows": rows.num_rows}
        after = {"files": outputs, "bytes": sum(f.size for f, _ in added), "rows": rows.num_rows}
        result = {
            "status": "clustered",
            "run_id": run_id,
            "table": table,
            "kind": "delta",
            "curve": "hilbert",
            "columns": ["x", "y"],
            "partition_columns": [],
            "mode": mode,
            "stats_location": loc,
            "partitions": [{"partition": "<whole table>"}],
            "before": before,
            "after": after,
            "rewritten": {"files": before["files"], "bytes": before["bytes"], "output_files": outputs},
            "delta": {"read_version": read_version, "version": version},
        }
        record_run(loc, result, at, 2.0)
        return result

    first = append(4)
    now = dt.datetime.now(UTC)
    r1 = rewrite("drun-1", "full", first, 2, now - dt.timedelta(hours=3))
    second = append(2)
    kept = [f for f in dc.read_snapshot(DeltaTable(table)).files if f.path == clustered_file_name(1, "drun-1")]
    r2 = rewrite("drun-2", "incremental", second + kept, 1, now - dt.timedelta(hours=2))
    append(6)
    version = int(DeltaTable(table).version())
    return Store(
        table,
        loc,
        [version],
        [],
        None,
        files=[[{"path": f.path, "size": f.size} for f in fs] for fs in (first, second)],
        runs=[r1, r2],
    )


def tables_option(stores: dict[str, Store]) -> str:
    """``[zorder] tables``: the events table by path (default stats location), orders with its location, and the
    appends and Delta tables when built."""
    s = stores
    extra = "".join(f"\n{s[k].table}" for k in ("appends", "delta") if k in s)
    return f"{s['events'].table}\n{s['orders'].table}|{s['orders'].location}, {s['missing'].table}{extra}"
