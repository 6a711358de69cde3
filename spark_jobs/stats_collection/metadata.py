"""The statistics job on a table whose format keeps statistics (a Delta log): its rows, plus what it lacks.

The table's snapshot and the rows its metadata keeps come from the table seam (:mod:`.listing`;
``method = "delta_log"`` for a Delta table). Only the (file, column) pairs the metadata lacks
(:func:`airflow_zorder.core.stats.metadata_merge.lacking`: columns it does not index, types it does not bound,
files without statistics, NaN bounds) are read, by the job's own footer and scan steps (:mod:`.footers`,
:mod:`.scan`; ``--method`` applies to them), and pairs an earlier snapshot already read from the same file are
carried forward. Files removed but not vacuumed are never listed.

The snapshot's run record (``runs/*.json`` and the snapshot file's metadata) names the version it describes
(``delta_version``); the hook uses the snapshot's rows for the pairs the metadata lacks only when that version
is the one it reads (the same rule, ``metadata_merge``). The executors read footers and scan as for any table.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.errors import StatsCollectionError
from airflow_zorder.core.jobs.options import CollectOptions, stats_location_for
from airflow_zorder.core.stats import metadata_merge, stats_store
from airflow_zorder.core.stats import stats_schema as ss
from airflow_zorder.core.storage.faults import fault_point
from airflow_zorder.core.storage.io import FileSystem, filesystem_for
from spark_jobs.stats_collection import footers, scan
from spark_jobs.stats_collection.assemble import FileRows, assemble_snapshot, norm, reused_rows, unopenable_rows
from spark_jobs.stats_collection.commit import commit, run_record
from spark_jobs.stats_collection.listing import ListedFile, ListedTable
from spark_jobs.stats_collection.plan import ReadPlan


def _missing_pairs(log_rows: pa.Table) -> dict[str, list[str]]:
    """path -> the columns whose stats the metadata lacks for that file."""
    lacking = log_rows.filter(metadata_merge.lacking(log_rows))
    out: dict[str, list[str]] = defaultdict(list)
    for p, c in zip(lacking["path"].to_pylist(), lacking["column_name"].to_pylist()):
        out[p].append(c)
    return dict(out)


def _previous(
    location: str, fs: FileSystem, full: bool, phases: dict[str, float]
) -> tuple[pa.Table | None, int | None]:
    """The latest snapshot (None: none, or ``--full``) and the format version it describes (None: none)."""
    t = time.time()
    prev = None
    if not full:
        try:
            prev = stats_store.load_latest(location, fs)
        except stats_store.StatsNotFoundError:
            prev = None
    phases["read_previous_s"] = round(time.time() - t, 3)
    return prev, metadata_merge.collected_version(prev) if prev is not None else None


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


def collect_with_metadata(
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
    """Collect the stats of a table whose metadata keeps them: its rows, plus footers/scan for the pairs it lacks;
    commit a snapshot naming the version."""
    assert table.metadata is not None
    version = table.metadata.version
    files = {f.path: f for f in table.files}
    names = list(requested) if requested is not None else list(table.schema_columns or [])
    log_rows = table.metadata.rows
    if requested is not None:
        log_rows = log_rows.filter(pc.is_in(log_rows["column_name"], pa.array(names, pa.string())))
    missing = _missing_pairs(log_rows)
    from_log = log_rows.filter(pc.invert(metadata_merge.lacking(log_rows)))

    # -- the previous snapshot: pairs already read from the same (immutable) file are carried forward
    location = stats_location_for(opts.table, opts.stats_location, home=table.home)
    fs = filesystem_for(location, spark)
    prev, prev_version = _previous(location, fs, opts.full, phases)
    carry = _carried(prev, missing, files)
    reused = reused_rows(prev, carry, set(), table.name)
    have = set(zip(reused["path"].to_pylist(), reused["column_name"].to_pylist())) if reused.num_rows else set()
    to_read = {p: [c for c in cols if (p, c) not in have] for p, cols in missing.items()}
    to_read = {p: cols for p, cols in to_read.items() if cols}
    if to_read and table.metadata.column_mapping not in ("none", ""):
        raise StatsCollectionError(
            f"{table.kind.capitalize()} table {table.name} uses column mapping (delta.columnMapping.mode="
            f"{table.metadata.column_mapping}): its Parquet files name columns by physical ids, so the statistics its log "
            f"lacks ({', '.join(sorted({c for cs in to_read.values() for c in cs}))}) cannot be read from the files "
            "yet. Collect only columns the log has statistics for (--columns), or rely on the log alone "
            "(FileStatsHook reads it without this job)"
        )
    items = [(files[p].read_path, p, cols) for p, cols in sorted(to_read.items())]
    if items or prev is None:
        try:  # fail before the expensive part, not after it
            stats_store.check_writable(location, fs)
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
        spark, failures, opts.method, messages, missing_means=f"listed by {table.kind.capitalize()} version {version}"
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
        files_changed=0,  # a data file of a versioned table never changes in place (a rewrite is a new file)
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
    plan = ReadPlan(location, fs, requested, prev)
    return commit(spark, opts, table, run, final if changed else None, prev, plan, started, phases, messages)
