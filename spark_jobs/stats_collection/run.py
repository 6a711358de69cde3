"""The statistics job end to end: list, plan, read footers, scan, assemble, commit."""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.errors import InvalidInputError, StatsCollectionError
from airflow_zorder.core.jobs.options import STATS_METHODS, CollectOptions
from airflow_zorder.core.stats import stats_store
from airflow_zorder.core.storage.faults import fault_point
from spark_jobs.stats_collection import footers, scan
from spark_jobs.stats_collection.assemble import (
    FileRows,
    assemble_snapshot,
    reused_rows,
    snapshot_columns,
    unopenable_rows,
)
from spark_jobs.stats_collection.commit import commit, commit_noop, run_record
from spark_jobs.stats_collection.listing import ListedTable, resolve_table
from spark_jobs.stats_collection.metadata import collect_with_metadata
from spark_jobs.stats_collection.plan import first_collection, plan_reads, requested_columns


def _list_table(
    spark: Any, table: str, iceberg_catalog: str | None = None, iceberg_catalog_file: str | None = None
) -> ListedTable:
    """The table's live files; any unexpected listing failure becomes a TableError naming the table."""
    from airflow_zorder.core.errors import ForeignTableFormatError, MissingDependencyError, TableError

    try:
        return resolve_table(spark, table, iceberg_catalog, iceberg_catalog_file)
    except (TableError, ForeignTableFormatError, MissingDependencyError):
        raise
    except Exception as exc:
        raise TableError(f"cannot resolve table {table!r}: {exc}") from exc


def run_collect(spark: Any, opts: CollectOptions) -> dict[str, Any]:
    """Collect the statistics of ``opts.table`` and commit a snapshot; returns the result dictionary."""
    started = time.time()
    started_at = stats_store.iso_utc()
    phases: dict[str, float] = {}
    if opts.method not in STATS_METHODS:
        raise InvalidInputError(f"unknown method {opts.method!r}; use one of {', '.join(STATS_METHODS)}")

    warm = None
    if opts.full or first_collection(spark, opts):
        warm = footers.start_warmup(spark)  # every file will be read: start Python workers while listing
    t = time.time()
    table = _list_table(spark, opts.table, opts.iceberg_catalog, opts.iceberg_catalog_file)
    phases["list_s"] = round(time.time() - t, 3)
    files = {f.path: f for f in table.files}
    messages: list[str] = []

    requested = requested_columns(opts, table, messages)
    if table.metadata is not None:  # the format's metadata gives most stats; only what it lacks is read
        return collect_with_metadata(spark, opts, table, requested, started, started_at, phases, messages, warm)

    # -- plan: the columns, the previous snapshot, what to read
    plan = plan_reads(spark, opts, table, requested, phases)
    if plan.nothing_changed():
        return commit_noop(spark, opts, table, plan, started, started_at, phases, messages)
    read_paths = plan.read_paths
    if plan.items or plan.prev is None:
        try:  # fail before the expensive part, not after it
            stats_store.check_writable(plan.location, plan.fs)
        except PermissionError as exc:
            raise StatsCollectionError(str(exc)) from exc
    if warm is not None and plan.items:
        warm.join(timeout=120)

    # -- footers
    collected_at = pa.scalar(stats_store.as_datetime(stats_store.iso_utc()), pa.timestamp("us", tz="UTC"))
    new_rows, failures, requested = footers.read_footer_rows(
        spark, plan.items, files, table.name, plan.requested, collected_at, opts.parallelism, phases
    )
    failed, no_py, vanished = footers.sort_failures(spark, failures, opts.method, messages)
    gone = plan.gone + sorted(vanished)
    reused = reused_rows(plan.prev, plan.reuse_mask, read_paths | vanished, table.name)
    live_paths = [p for p in files if p not in vanished]
    names = snapshot_columns(spark, table, requested, new_rows, reused, live_paths, failed, no_py, read_paths)

    # -- scan: rows the footers cannot describe, and files executors' Python cannot open
    rows = FileRows(files, table.name, collected_at)
    base_rows, scan_rows = scan.split_scan_rows(new_rows, opts.method)
    extra_rows: list[dict[str, Any]] = []
    names = unopenable_rows(spark, table, no_py, vanished, names, opts.method, rows, extra_rows, scan_rows)
    scanned_files = scan.run_scan(spark, scan_rows, files, failed, table, phases)

    # -- the snapshot, the run record, the commit
    final, synthesized = assemble_snapshot(
        base_rows, scan_rows, extra_rows, failed, names, requested, reused, live_paths, vanished, rows
    )
    fault_point("stats_after_read")
    prev = plan.prev
    changed = (
        bool(read_paths - vanished) or bool(gone) or prev is None or synthesized or (reused.num_rows != prev.num_rows)
    )
    run = run_record(
        opts,
        table,
        started_at,
        names,
        final,
        files_total=len(live_paths),
        files_read=len(read_paths - vanished),
        files_reused=int(pc.count_distinct(reused["path"]).as_py()) if reused.num_rows else 0,
        files_new=plan.n_new,
        files_changed=plan.n_changed,
        files_gone=len(gone),
        files_failed=len(failed),
        files_scanned=len(scanned_files),
        bytes_total=sum(files[p].size for p in live_paths),
        errors=[{"path": p, "error": m} for p, m in sorted(failed.items())],
        gone_paths=sorted(gone),
    )
    return commit(spark, opts, table, run, final if changed else None, prev, plan, started, phases, messages)
