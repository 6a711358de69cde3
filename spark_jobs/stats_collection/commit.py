"""Committing a collection: the run record, the snapshot (when something changed), the job's result."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.errors import ConcurrentChangeError, StatsCollectionError
from airflow_zorder.core.jobs.options import STATS_DELTA_KEYS, STATS_RESULT_COUNTS, CollectOptions
from airflow_zorder.core.stats import stats_store
from airflow_zorder.core.storage.io.paths import join
from spark_jobs.stats_collection.listing import ListedTable
from spark_jobs.stats_collection.plan import ReadPlan


def summary(final: pa.Table, names: list[str], log_counts: bool = False) -> tuple[list[dict[str, Any]], int]:
    """Rows per column by method (``no_stats`` when has_stats is false; ``delta_log`` too when ``log_counts``),
    and the live files' total rows."""
    if not final.num_rows:
        return [], 0
    kind = pc.if_else(final["has_stats"], final["method"], pa.scalar("no_stats"))
    g = (
        pa.table({"c": final["column_name"], "k": kind})
        .group_by(["c", "k"], use_threads=False)
        .aggregate([("k", "count")])
    )
    counts: dict[str, Counter] = defaultdict(Counter)
    for c, k, n in zip(g["c"].to_pylist(), g["k"].to_pylist(), g["k_count"].to_pylist()):
        if c is not None:
            counts[c][k] += n
    column_methods = [
        {"column_name": c, "footer": counts[c]["footer"], "scan": counts[c]["scan"], "no_stats": counts[c]["no_stats"]}
        | ({"delta_log": counts[c]["delta_log"]} if log_counts else {})
        for c in names
        if c in counts
    ]
    per_file = final.group_by("path", use_threads=False).aggregate([("file_rows", "max")])
    return column_methods, int(pc.sum(per_file["file_rows_max"]).as_py() or 0)


def run_record(
    opts: CollectOptions, table: ListedTable, started_at: str, names: list[str], final: pa.Table, **counts: Any
) -> dict[str, Any]:
    """The run record (``runs/*.json``) of a collection: what was asked, what was read, per-column methods."""
    column_methods, rows_total = summary(final, names, log_counts=table.metadata is not None)
    return {
        "run_id": opts.run_id,
        "table_name": table.name,
        "table_kind": table.kind,
        "table_root": table.root,
        "status": "partial" if counts.get("files_failed") else "ok",
        "started_at": started_at,
        "method": opts.method,
        "columns": names,
        "columns_requested": "all" if opts.columns is None else ",".join(opts.columns),
        **{k: counts[k] for k in STATS_RESULT_COUNTS if k.startswith("files_")},
        "rows_total": rows_total,
        "bytes_total": counts["bytes_total"],
        "column_methods": column_methods,
        "errors": counts["errors"],
        "gone_paths": counts["gone_paths"],
    }


def commit_noop(
    spark: Any,
    opts: CollectOptions,
    table: ListedTable,
    plan: ReadPlan,
    started: float,
    started_at: str,
    phases: dict[str, float],
    messages: list[str],
) -> dict[str, Any]:
    """Nothing changed since the latest snapshot: record the run only (listing + one stats read + one small write)."""
    prev, requested = plan.prev, plan.requested
    assert prev is not None
    names = (
        list(requested)
        if requested is not None
        else list(dict.fromkeys(c for c in pc.unique(prev["column_name"]).to_pylist() if c is not None))
    )
    if requested is not None:
        prev = prev.filter(pc.fill_null(pc.is_in(prev["column_name"], pa.array(requested, pa.string())), True))
    n = len(table.files)
    phases.update(footer_s=0.0, scan_s=0.0)
    run = run_record(
        opts,
        table,
        started_at,
        names,
        prev,
        files_total=n,
        files_read=0,
        files_reused=n,
        files_new=0,
        files_changed=0,
        files_gone=0,
        files_failed=0,
        files_scanned=0,
        bytes_total=sum(f.size for f in table.files),
        errors=[],
        gone_paths=[],
    )
    return commit(spark, opts, table, run, None, prev, plan, started, phases, messages)


def commit(
    spark: Any,
    opts: CollectOptions,
    table: ListedTable,
    run: dict[str, Any],
    final: pa.Table | None,
    prev: pa.Table | None,
    plan: ReadPlan,
    started: float,
    phases: dict[str, float],
    messages: list[str],
) -> dict[str, Any]:
    """Write the snapshot (``final``) or only the run record (``final`` None), and build the result."""
    fs, location = plan.fs, plan.location
    t = time.time()
    run.update(list_s=phases.get("list_s"), footer_s=phases.get("footer_s"), scan_s=phases.get("scan_s"))
    run["collected_at"] = stats_store.iso_utc()
    run["duration_s"] = round(time.time() - started, 3)
    try:
        if final is not None:
            snapshot_id = stats_store.write_snapshot(location, final, run, fs, keep_snapshots=opts.keep_snapshots)
        else:
            stats_store.write_run(location, run, fs)
            snapshot_id = (
                prev["snapshot_id"][0].as_py()
                if prev is not None and prev.num_rows
                else stats_store.latest_snapshot_id(location, fs)
            )
    except ConcurrentChangeError:
        raise
    except OSError as exc:
        raise StatsCollectionError(f"cannot write the stats to {location}: {type(exc).__name__}: {exc}") from exc
    phases["write_s"] = round(time.time() - t, 3)
    if opts.stats_table:
        register_catalog_tables(spark, opts.stats_table, location)
    result = {
        "status": run["status"],
        "run_id": opts.run_id,
        "table": opts.table,
        "kind": table.kind,
        **({"location": table.location} if table.location else {}),
        "stats_location": location,
        "snapshot_id": snapshot_id,
        "new_snapshot": final is not None,
        "method": opts.method,
        "columns": run["columns"],
        **{k: run[k] for k in STATS_RESULT_COUNTS},
        "column_methods": run["column_methods"],
        "errors": run["errors"],
        "gone_paths": run["gone_paths"],
        **{k: run[k] for k in STATS_DELTA_KEYS if k in run},
        "messages": messages,
        "phases": phases,
        "duration_s": round(time.time() - started, 3),
    }
    if opts.stats_table:
        result["stats_table"] = opts.stats_table
    return result


def register_catalog_tables(spark: Any, name: str, location: str) -> None:
    """Expose the stats as catalog tables: ``name`` (file stats, every snapshot) and ``name_runs``."""
    files_loc = join(location, stats_store.FILES_DIR)
    runs_loc = join(location, stats_store.RUNS_DIR)
    q = ".".join(f"`{p.strip('`')}`" for p in name.split("."))
    q_runs = ".".join(f"`{p.strip('`')}`" for p in (name + "_runs").split("."))
    lit = lambda s: "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"  # noqa: E731
    spark.sql(f"CREATE TABLE IF NOT EXISTS {q} USING parquet LOCATION {lit(files_loc)}")
    spark.sql(f"REFRESH TABLE {q}")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {q_runs} USING json LOCATION {lit(runs_loc)}")
    spark.sql(f"REFRESH TABLE {q_runs}")
