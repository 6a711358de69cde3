"""The statistics job on a Delta Lake table: files and covered statistics from its log, the rest from footers.

A Delta table (its root holds ``_delta_log/``) is listed from its log at its latest version
(:class:`~airflow_zorder.core.delta.delta_log.DeltaLog`): the live files, their partition values, sizes and
modification times, and the per-file statistics the log keeps, as the one stats row (``method = "delta_log"``).
Files removed but not vacuumed are never listed.  Only the (file, column) pairs the log lacks
(:func:`~airflow_zorder.core.delta.delta_log.missing_stats`: columns beyond ``delta.dataSkippingNumIndexedCols`` or
outside ``delta.dataSkippingStatsColumns``, binary columns, files whose add action has no stats, NaN bounds) are
read, by the job's own footer and scan steps (:mod:`.footers`, :mod:`.scan`; ``--method`` applies to them), and
pairs an earlier snapshot already read from the same file are carried forward.

The snapshot's run record (``runs/*.json`` and the snapshot file's metadata) names the Delta version it describes
(``delta_version``); :class:`airflow_zorder.hooks.file_stats.FileStatsHook` uses the snapshot's rows for the pairs
the log lacks only when that version is the one it reads.  Runs on the driver (delta-rs, ``pip install
'airflow-zorder[delta]'``); the executors read footers and scan as for any Parquet table.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.delta import delta_log as dlog
from airflow_zorder.core.jobs.options import CollectOptions, stats_location_for
from airflow_zorder.core.stats import stats_schema as ss
from airflow_zorder.core.stats import stats_store
from airflow_zorder.core.storage.faults import fault_point
from spark_jobs.stats_collection import footers, scan
from spark_jobs.stats_collection.assemble import FileRows, assemble_snapshot, norm, reused_rows, unopenable_rows
from spark_jobs.stats_collection.commit import commit, run_record
from spark_jobs.stats_collection.errors import StatsCollectionError
from spark_jobs.stats_collection.listing import DeltaVersion, ListedFile, ListedTable, stats_io_for
from spark_jobs.stats_collection.plan import ReadPlan

PURPOSE = "collecting statistics of a Delta Lake table (spark_jobs/collect_stats.py, on the Spark driver)"


def list_delta_table(table: str, root: str, read_path: Callable[[str], str]) -> ListedTable:
    """The live files of the table's latest version and its log's stats rows (``read_path``: what executors open)."""
    try:
        dlog.deltalake_module(PURPOSE)
    except ImportError as exc:
        raise StatsCollectionError(str(exc)) from exc
    log = dlog.DeltaLog(root, None, table_name=table)  # storage credentials: delta-rs's default chain (environment)
    version = log.refresh()
    rows = log.snapshot(None, version)
    data_columns, partition_columns = log.table_columns()
    mode = log.configuration().get("delta.columnMapping.mode", "none")
    # rows are sorted by (column, path): the first column's rows are one per live file
    one = rows.filter(pc.equal(rows["column_name"], rows["column_name"][0])) if rows.num_rows else rows
    files = [
        ListedFile(p, read_path(p), size, mtime, part, dict(values) if values else {})
        for p, part, values, size, mtime in zip(
            one["path"].to_pylist(),
            one["partition"].to_pylist(),
            one["partition_values"].to_pylist(),
            one["file_size"].to_pylist(),
            one["file_mtime_ms"].to_pylist(),
        )
    ]
    files.sort(key=lambda f: f.path)
    delta = DeltaVersion(version, rows, mode)
    return ListedTable(table, "path", root, root, partition_columns, files, data_columns, delta)


def _missing_pairs(log_rows: pa.Table) -> dict[str, list[str]]:
    """path -> the columns whose stats the log lacks for that file."""
    lacking = log_rows.filter(dlog.missing_stats(log_rows))
    out: dict[str, list[str]] = defaultdict(list)
    for p, c in zip(lacking["path"].to_pylist(), lacking["column_name"].to_pylist()):
        out[p].append(c)
    return dict(out)


def _previous(
    base: str, io: stats_store.StatsIO, full: bool, phases: dict[str, float]
) -> tuple[pa.Table | None, int | None]:
    """The latest snapshot (None: none, or ``--full``) and the Delta version it describes (None: not a Delta one)."""
    t = time.time()
    prev = None
    if not full:
        try:
            prev = stats_store.load_latest(base, io)
        except stats_store.StatsNotFoundError:
            prev = None
    phases["read_previous_s"] = round(time.time() - t, 3)
    meta = (prev.schema.metadata or {}).get(ss.RUN_METADATA_KEY) if prev is not None else None
    version = json.loads(meta).get("delta_version") if meta else None
    return prev, version if isinstance(version, int) else None


def _carried(prev: pa.Table | None, wanted: dict[str, list[str]], files: dict[str, ListedFile]) -> pa.Array | None:
    """Mask of the previous snapshot's read rows (footer/scan, no error) of a wanted pair of an unchanged file."""
    if prev is None or not prev.num_rows or not wanted:
        return None
    read = pc.and_(pc.is_in(prev["method"], pa.array(ss.METHODS, pa.string())), pc.is_null(prev["error"]))
    if not pc.any(read).as_py():
        return None
    keys = {(p, c, files[p].size, files[p].mtime_ms) for p, cols in wanted.items() for c in cols}
    mask = [
        (p, c, s, m) in keys and meth in ss.METHODS and err is None
        for p, c, s, m, meth, err in zip(
            prev["path"].to_pylist(),
            prev["column_name"].to_pylist(),
            prev["file_size"].to_pylist(),
            prev["file_mtime_ms"].to_pylist(),
            prev["method"].to_pylist(),
            prev["error"].to_pylist(),
        )
    ]
    return pa.array(mask, pa.bool_())


def collect_delta(
    spark: Any,
    opts: CollectOptions,
    table: ListedTable,
    requested: list[str] | None,
    started: float,
    started_at: str,
    phases: dict[str, float],
    messages: list[str],
    warm: threading.Thread | None,
) -> dict[str, Any]:
    """Collect a Delta table's stats: the log's rows, plus footers/scan for the pairs it lacks; commit a snapshot."""
    assert table.delta is not None
    version = table.delta.version
    files = {f.path: f for f in table.files}
    names = list(requested) if requested is not None else list(table.schema_columns or [])
    log_rows = table.delta.rows
    if requested is not None:
        log_rows = log_rows.filter(pc.is_in(log_rows["column_name"], pa.array(names, pa.string())))
    missing = _missing_pairs(log_rows)
    from_log = log_rows.filter(pc.invert(dlog.missing_stats(log_rows)))

    # -- the previous snapshot: pairs already read from the same (immutable) file are carried forward
    location = stats_location_for(opts.table, opts.stats_location, home=table.home)
    io, base = stats_io_for(spark, location)
    prev, prev_version = _previous(base, io, opts.full, phases)
    carry = _carried(prev, missing, files)
    reused = reused_rows(prev, carry, set(), table.name)
    have = set(zip(reused["path"].to_pylist(), reused["column_name"].to_pylist())) if reused.num_rows else set()
    to_read = {p: [c for c in cols if (p, c) not in have] for p, cols in missing.items()}
    to_read = {p: cols for p, cols in to_read.items() if cols}
    if to_read and table.delta.column_mapping not in ("none", ""):
        raise StatsCollectionError(
            f"Delta table {table.name} uses column mapping (delta.columnMapping.mode="
            f"{table.delta.column_mapping}): its Parquet files name columns by physical ids, so the statistics its log "
            f"lacks ({', '.join(sorted({c for cs in to_read.values() for c in cs}))}) cannot be read from the files "
            "yet. Collect only columns the log has statistics for (--columns), or rely on the log alone "
            "(FileStatsHook reads it without this job)"
        )
    items = [(files[p].read_path, p, cols) for p, cols in sorted(to_read.items())]
    if items or prev is None:
        try:  # fail before the expensive part, not after it
            stats_store.check_writable(base, io)
        except PermissionError as exc:
            raise StatsCollectionError(str(exc)) from exc
    if warm is not None and items:
        warm.join(timeout=120)

    # -- footers and the scan, for the pairs the log lacks (the job's own steps)
    collected_at = pa.scalar(stats_store.as_datetime(stats_store.iso_utc()), pa.timestamp("us", tz="UTC"))
    wanted = [c for c in names if any(c in cols for cols in to_read.values())]
    new_rows, failures, _ = footers.read_footer_rows(
        spark, items, files, table.name, wanted or None, collected_at, opts.parallelism, phases
    )
    failed, no_py, _ = footers.sort_failures(
        spark, failures, opts.method, messages, missing_means=f"listed by Delta version {version}"
    )
    rows = FileRows(files, table.name, collected_at)
    base_rows, scan_rows = scan.split_scan_rows(new_rows, opts.method)
    extra_rows: list[dict[str, Any]] = []
    for p in sorted(no_py):
        unopenable_rows(spark, table, {p: no_py[p]}, set(), to_read[p], opts.method, rows, extra_rows, scan_rows)
    scanned_files = scan.run_scan(spark, scan_rows, files, failed, table, phases)

    # -- the snapshot: the log's rows, rows read now, rows carried forward
    carried = pa.concat_tables([norm(from_log), norm(reused)])
    final, _ = assemble_snapshot(
        base_rows, scan_rows, extra_rows, failed, names, names, carried, list(files), set(), rows, to_read
    )
    fault_point("stats_after_read")
    read_paths = set(to_read)
    prev_files = set(prev["path"].to_pylist()) if prev is not None and prev.num_rows else set()
    gone = sorted(prev_files - set(files)) if prev is not None else []
    changed = (
        prev is None
        or prev_version != version
        or bool(read_paths)
        or final.num_rows != prev.num_rows
        or set(pc.unique(final["column_name"]).to_pylist()) != set(pc.unique(prev["column_name"]).to_pylist())
    )
    run = run_record(
        opts,
        table,
        started_at,
        names,
        final,
        files_total=len(files),
        files_read=len(read_paths),
        files_reused=int(pc.count_distinct(reused["path"]).as_py()) if reused.num_rows else 0,
        files_new=len(set(files) - prev_files) if prev is not None else len(files),
        files_changed=0,  # a Delta data file never changes in place (a rewrite is a new file)
        files_gone=len(gone),
        files_failed=len(failed),
        files_scanned=len(scanned_files),
        bytes_total=sum(f.size for f in table.files),
        errors=[{"path": p, "error": m} for p, m in sorted(failed.items())],
        gone_paths=gone,
    )
    read_columns = sorted({c for cols in missing.values() for c in cols}, key=names.index)
    run.update(
        delta_version=version,
        files_from_log=len(files) - len(missing),
        columns_from_log=[c for c in names if c not in set(read_columns)],
        columns_read=read_columns,
    )
    plan = ReadPlan(location, io, base, requested, prev)
    return commit(spark, opts, table, run, final if changed else None, prev, plan, started, phases, messages)
