"""spark-submit entry point: re-cluster a Parquet table along a Z-order or Hilbert curve (or linearly).

    spark-submit spark_jobs/cluster_table.py --table PATH_OR_DB.TABLE --columns a,b,c \
        [--curve zorder|hilbert|linear] [--target-file-size 512MB | --num-files N] \
        [--partitions k=v[/k2=v2] ...] [--stats-location PATH_OR_URI] [--result-json PATH] [--verify observe|full] ...

Per run: take the table lock, finish or roll back any earlier interrupted run, snapshot
the input files, stage the rewritten files where readers do not look, verify row count
and checksum, then commit (path tables: journaled file swap; catalog tables: metastore
location switch), record the run's event in the table's stats store (``--stats-location``, where the
sensor and the UI read it) and clean up what passed its retention. The options:
:class:`airflow_zorder.core.jobs.options.ClusterOptions` (``--help`` lists every flag).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pyspark.util import inheritable_thread_target

from airflow_zorder.core.errors import ClusteringError, IncrementalError
from airflow_zorder.core.jobs.job_results import prune_run_files
from airflow_zorder.core.jobs.options import ClusterOptions, stats_location_for
from airflow_zorder.core.layout import ranges
from airflow_zorder.core.policy.file_names import clustered_file_name
from airflow_zorder.core.policy.file_sizing import num_output_files
from airflow_zorder.core.stats import stats_store
from airflow_zorder.core.storage import commit as commit_mod
from airflow_zorder.core.storage.faults import fault_point
from airflow_zorder.core.storage.io import FileSystem, filesystem_for, os_path, table_filesystem
from airflow_zorder.core.storage.io.hadoop import bind_s3_scheme
from airflow_zorder.core.storage.io.paths import join
from airflow_zorder.core.storage.lock import TableLock
from airflow_zorder.core.tables import open_table
from airflow_zorder.core.tables.model import RewriteRun, StagedUnit, Unit, file_totals, select_units
from airflow_zorder.core.tables.protocol import TableFormat
from spark_jobs import hudi_clustering, incremental_units
from spark_jobs.catalog import SparkMetastore, iceberg_catalog_properties
from spark_jobs.cli import run_job, spark_error_text
from spark_jobs.rewrite import encodings, reading, sampling, session_settings, unit_work, verification, writing

BATCH_UNITS = 64  # partitions rewritten by one set of Spark jobs


def _log(msg: str) -> None:
    print(f"[cluster_table] {msg}", file=sys.stderr, flush=True)


def open_job_table(
    spark,
    table: str,
    iceberg_catalog: str | None = None,
    iceberg_catalog_file: str | None = None,
    check: bool = True,
) -> tuple[TableFormat, FileSystem]:
    """Open a path or catalog table (``iceberg_catalog``: namespace.table of that Iceberg catalog, its properties
    from ``iceberg_catalog_file`` if given) through the table seam (its format detected once) with the driver's
    filesystem; clear errors for missing, non-Parquet and unsupported tables (``check``), before anything is locked
    or written."""
    bind_s3_scheme(spark, table)
    fs = table_filesystem(table, spark)
    opened = open_table(
        table,
        fs,
        metastore=SparkMetastore(spark),
        iceberg_catalog=iceberg_catalog,
        catalog_properties=iceberg_catalog_properties(iceberg_catalog, iceberg_catalog_file),
    )
    bind_s3_scheme(spark, opened.home)  # a catalog's table: where its files are
    if check:
        opened.check_rewritable()
    return opened, fs


def _check_columns(df_columns: dict[str, str], partition_columns: list[str], wanted: list[str]) -> list[str]:
    """Resolve clustering columns case-insensitively; refuse unknown, partition and unsupported columns."""
    by_lower = {c.lower(): c for c in df_columns}
    out = []
    if not 1 <= len(wanted) <= 16:
        raise ClusteringError(f"cluster on 1 to 16 columns, got {len(wanted)}")
    for c in wanted:
        if c.lower() in {p.lower() for p in partition_columns}:
            raise ClusteringError(
                f"column {c!r} is a partition column: it is constant within each partition, so "
                "clustering on it does nothing; choose data columns"
            )
        real = by_lower.get(c.lower())
        if real is None:
            raise ClusteringError(f"unknown column {c!r}; the table's columns are: {', '.join(df_columns)}")
        ranges.check_clusterable_type(real, df_columns[real])
        out.append(real)
    if len({c.lower() for c in out}) != len(out):
        raise ClusteringError(f"clustering columns repeat: {', '.join(wanted)}")
    return out


def _staged_files(fs: FileSystem, staging: str) -> list:
    return [
        f
        for f in fs.list_files(staging, recursive=True)
        if not any(p.startswith(("_", ".")) for p in f.path[len(staging) :].split("/") if p)
    ]


def _on_local_disk(fs: FileSystem, units: list[Unit]) -> bool:
    """Every file of the units is on the driver's disk (the driver lists and reads footers itself)."""
    return all(os_path(fs, f.path) is not None for u in units for f in u.files)


def _merged_schema(spark, fs: FileSystem, units: list[Unit]):
    """The schema of all the units' files merged (one distributed footer job); rewritten files carry it."""
    paths = [f.path for u in units for f in u.files]
    try:
        with session_settings.driver_listing(spark, _on_local_disk(fs, units)):
            return spark.read.option("mergeSchema", "true").parquet(*paths).schema
    except Exception as exc:  # noqa: BLE001 - converted to a clear message naming the table
        raise ClusteringError(
            f"cannot read the table's files as Parquet with one schema: {spark_error_text(exc)}"
        ) from exc


def _stage_batch(
    spark,
    fs: FileSystem,
    opts: ClusterOptions,
    schema,
    columns: list[str],
    batch: list[Unit],
    staging: str,
    b: int,
    phases: dict[str, float],
    names: dict[str, int],
) -> tuple[list[StagedUnit], list[dict]]:
    """Rewrite a batch of units into ``staging/<unit relpath>/`` and verify it; returns (staged units, skipped).

    ``names`` counts the files named so far per unit directory, so the bins of one partition never collide.
    """

    def lap(name: str, since: float) -> float:
        now = time.time()
        phases[name] = round(phases.get(name, 0.0) + now - since, 3)
        return now

    t = time.time()
    work = [unit_work.UnitWork(i, u.label, [f.path for f in u.files], 0, on=u.on) for i, u in enumerate(batch)]
    local = _on_local_disk(fs, batch)
    df = reading.read_batch(spark, [(w.index, w.paths) for w in work], schema, local)
    counts = reading.footer_counts(fs, [(w.index, w.paths) for w in work])
    if counts is None:
        counts = reading.count_rows(df)
    t = lap("count_s", t)
    live, skipped = [], []
    for w, u in zip(work, batch):
        w.rows = counts.get(w.index, 0)
        if w.rows == 0:
            skipped.append({"partition": u.label, "reason": "no rows"})
            continue
        w.num_files = u.num_files or opts.num_files or num_output_files(u.bytes, opts.target_file_size, w.rows)
        live.append(w)
    if not live:
        return [], skipped
    out = join(staging, f"_batch{b}")
    # The encodings' files are read (here, when small and local) while the plan's sample is taken,
    # and judged by the plan while this thread builds the write's plan: neither waits for the other.
    with ThreadPoolExecutor(max_workers=1) as pool:
        in_thread = inheritable_thread_target(spark)
        sample = pool.submit(
            in_thread(encodings.encodings_sample), spark, live, schema, opts.seed + b, fs if local else None
        )
        sampling.plan_batch(
            df, live, columns, opts.curve, opts.num_ranges, opts.salt_bits, opts.seed + b, fs if local else None
        )
        t = lap("sample_and_plan_s", t)
        plain = pool.submit(in_thread(lambda: encodings.plain_from_sample(spark, live, columns, sample.result())))
        obs_in, obs_out, engine = writing.write_batch(
            spark, df, live, columns, out, opts.compression, f"b{b}", opts.key_engine, plain.result
        )
    plain = plain.result()
    t = lap("write_s", t)  # the encodings included
    by_unit = writing.files_by_unit(_staged_files(fs, out), live)
    parts = [(i, [f.path for f in files]) for i, files in by_unit.items() if files]
    staged = reading.footer_counts(fs, parts)
    staged_df = (
        reading.read_batch(spark, parts, schema, local) if parts and (staged is None or opts.verify == "full") else None
    )
    full = verification.staged_checksum(staged_df) if opts.verify == "full" and staged_df is not None else None
    if staged is None:
        staged = reading.count_rows(staged_df) if staged_df is not None else {}
    verification.verify(live, obs_in, obs_out, staged, full)
    t = lap("verify_s", t)
    done = []
    for w in live:
        unit = batch[w.index]
        placed = []
        for f in sorted(by_unit[w.index], key=lambda x: x.path):
            i = names[unit.relpath] = names.get(unit.relpath, -1) + 1
            dst = join(staging, unit.relpath, clustered_file_name(i, opts.run_id, unit.bin))
            fs.rename(f.path, dst)
            placed.append(type(f)(dst, f.size, f.mtime_ms))
        done.append(
            StagedUnit(unit, placed, w.rows, {**w.plan.describe(), "key_engine": engine, "plain_encoded": plain})
        )
        _log(f"staged {unit.label}: {len(unit.files)} -> {len(placed)} files, {w.rows} rows verified")
    fs.delete(out, recursive=True)
    return done, skipped


def run_cluster(spark, opts: ClusterOptions, opened: tuple[TableFormat, FileSystem] | None = None) -> dict[str, Any]:
    """Cluster a table end to end and return the result dictionary (also written as JSON by ``main``);
    ``opened``: the table and filesystem :func:`open_job_table` gave without its check."""
    started = time.time()
    phases: dict[str, float] = {}
    if opened is None:
        table, fs = open_job_table(spark, opts.table, opts.iceberg_catalog, opts.iceberg_catalog_file)
    else:
        table, fs = opened
        table.check_rewritable()
    table.prepare()
    snap = table.snapshot()
    result: dict[str, Any] = {
        "status": "clustered",
        "run_id": opts.run_id,
        "table": opts.table,
        "kind": table.kind,
        **({"location": table.location} if table.location else {}),
        "curve": opts.curve,
        "columns": opts.columns,
        "partition_columns": snap.partition_columns,
        "mode": "incremental" if opts.incremental else "full",
        "stats_location": stats_location_for(opts.table, opts.stats_location, home=table.home),
        "messages": [],
    }
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    with TableLock(fs, table.home, opts.run_id, ttl_s=opts.lock_ttl_s) as lock:
        lock.start_heartbeat()
        recovered = table.recover(fs)
        if recovered:
            result["messages"].append(f"finished earlier interrupted runs first: {', '.join(recovered)}")
            snap = table.refresh()  # the layout may have changed
            table.check_rewritable()
        units = select_units(snap.units, opts.partitions)
        done_units: list[StagedUnit] = []
        skipped: list[dict[str, Any]] = []
        resolved_columns: list[str] | None = None
        with_files = []
        for unit in units:
            if unit.files:
                with_files.append(unit)
            else:
                skipped.append({"partition": unit.label, "reason": "no files"})
        t = time.time()
        if with_files:
            schema = _merged_schema(spark, fs, with_files)
            types = {f.name: f.dataType.simpleString() for f in schema.fields}
            resolved_columns = _check_columns(types, snap.partition_columns, opts.columns)
        schema_s = time.time() - t  # reported within stage_and_verify_s, as before plans came between
        t = time.time()
        if opts.incremental and with_files:
            with_files, result["plan"], notes = _plan_units(fs, table, opts, with_files, resolved_columns or [])
            result["messages"].extend(notes)
            phases["plan_s"] = round(time.time() - t, 3)
        inputs = [f for u in with_files for f in u.files] if table.journals_inputs else []
        journal = commit_mod.begin(fs, table.home, opts.run_id, inputs)
        staging = commit_mod.staging_dir(table.home, opts.run_id)
        names: dict[str, int] = {}  # output files named so far per partition directory (bins share one)
        t = time.time()
        try:
            for b, start in enumerate(range(0, len(with_files), BATCH_UNITS)):
                batch = with_files[start : start + BATCH_UNITS]
                done, empty = _stage_batch(spark, fs, opts, schema, resolved_columns, batch, staging, b, phases, names)
                done_units.extend(done)
                skipped.extend(empty)
        except Exception as exc:
            note = _abandon(fs, journal, exc)  # nothing was committed: drop the staged files now
            if _from_spark(exc):
                raise ClusteringError(
                    f"rewriting table {opts.table} failed: {spark_error_text(exc)}. Nothing in the "
                    f"table was changed{'; ' + note if note else ''}."
                ) from exc
            raise
        phases["stage_and_verify_s"] = round(time.time() - t + schema_s, 3)
        fault_point("after_stage")
        if not done_units:
            commit_mod.rollback(fs, journal)
            result["status"] = "noop"
            msg = "nothing to cluster: " + (
                "; ".join(f"{s['partition']}: {s['reason']}" for s in skipped)
                or ("the incremental plan rewrites nothing" if opts.incremental else "the table has no data files")
            )
            result["messages"].append(msg)
            _log(msg)
        else:
            t = time.time()
            run = RewriteRun(opts.run_id, opts.curve, resolved_columns or opts.columns, staging)
            outcome = table.commit(fs, journal, done_units, run, lock=lock)
            if outcome.report() is not None:
                result[outcome.format] = outcome.report()
                _log(f"committed {outcome.format} version {outcome.version} (read version {outcome.read_version})")
            phases["commit_s"] = round(time.time() - t, 3)
        t = time.time()
        result["cleaned"] = _cleanup(spark, fs, table, opts, result["stats_location"])
        phases["cleanup_s"] = round(time.time() - t, 3)
    result["columns"] = resolved_columns or opts.columns
    result["partitions"] = [u.report() for u in done_units]
    result["skipped"] = skipped
    before = file_totals([f for u in done_units for f in u.unit.files])
    after = file_totals([f for u in done_units for f in u.staged])
    rows = sum(u.rows for u in done_units)
    result["before"] = {**before, "rows": rows}
    result["after"] = {**after, "rows": rows}
    result["rewritten"] = {"files": before["files"], "bytes": before["bytes"], "output_files": after["files"]}
    result["phases"] = phases
    result["duration_s"] = round(time.time() - started, 3)
    if result["status"] == "clustered":
        _record_event(fs, result)
    return result


def _plan_units(
    fs: FileSystem, table: TableFormat, opts: ClusterOptions, units: list[Unit], columns: list[str]
) -> tuple[list[Unit], dict[str, Any], list[str]]:
    """The incremental plan's bins as units (``spark_jobs.incremental_units``), logged; clear errors as ClusteringError."""
    try:
        bins, summary, notes = incremental_units.incremental_units(fs, table, opts, units, columns)
    except IncrementalError as exc:
        raise ClusteringError(str(exc)) from exc
    _log(
        f"incremental plan ({summary['source']}): {summary['files']} files, {summary['bytes']} bytes in "
        f"{summary['bins']} bins, worst ratio {summary['ratio_before']} -> {summary['ratio_after']} (estimated)"
    )
    for note in notes:
        _log(note)
    return bins, summary, notes


def _from_spark(exc: BaseException) -> bool:
    """Raised by Spark (Py4J or PySpark's captured JVM errors): its text needs :func:`spark_error_text`."""
    return type(exc).__module__.split(".")[0] in ("py4j", "pyspark")


def _abandon(fs: FileSystem, journal, exc: BaseException) -> str:
    """Roll back a run that failed before its commit point, without hiding why it failed.

    If the rollback fails too (a full disk cannot even record ``rolled_back``), the journal stays in
    ``staging``: the table is untouched and the next run (or ``--action recover``) rolls it back.
    """
    try:
        commit_mod.rollback(fs, journal)
    except Exception as rb:  # noqa: BLE001 - the original error is the one to report
        note = (
            f"rolling the run back failed too ({spark_error_text(rb) if _from_spark(rb) else rb}); the next "
            "run or --action recover finishes the rollback"
        )
        _log(note)
        exc.add_note(note)
        return note
    return ""


def _record_event(fs: FileSystem, result: dict[str, Any]) -> None:
    """Add the run to the table's stats history (``result["stats_location"]``), where the sensor and the UI read it."""
    try:
        stats_store.record_event(result["stats_location"], stats_store.cluster_event(result), filesystem=fs)
    except Exception as exc:  # noqa: BLE001 - the table is committed; the history entry is best effort
        result["messages"].append(f"could not record the clustering event: {exc}")


def _cleanup(spark, fs: FileSystem, table: TableFormat, opts: ClusterOptions, stats_location: str | None) -> list[str]:
    """Purge what finished runs replaced once the retention passed (the table format's cleanup), and the stats
    store's per-run plans and results as old (``job_results.prune_run_files``)."""
    deleted = table.cleanup(fs, opts.retention_s)
    if stats_location:
        try:
            deleted += prune_run_files(filesystem_for(stats_location, spark), stats_location, opts.retention_s)
        except Exception as exc:  # noqa: BLE001 - the table is committed; old plans and results can wait a run
            _log(f"old plans and results in {stats_location} not pruned: {type(exc).__name__}: {exc}")
    return deleted


def run_action(spark, opts: ClusterOptions) -> dict[str, Any]:
    """Run the options' action: cluster, recover or cleanup. A Hudi table's runs are Hudi's own clustering
    (``spark_jobs.hudi_clustering``), recorded in the stats store as ours are."""
    action = opts.action
    table, fs = open_job_table(spark, opts.table, opts.iceberg_catalog, opts.iceberg_catalog_file, check=False)
    if table.format == hudi_clustering.FORMAT:
        result = hudi_clustering.run_action(spark, opts, table, fs, _check_columns)
        if result.get("status") == "clustered":
            _record_event(fs, result)
        return result
    if action == "cluster":
        return run_cluster(spark, opts, (table, fs))
    table.check_rewritable()
    with TableLock(fs, table.home, opts.run_id, ttl_s=opts.lock_ttl_s):
        if action == "recover":
            runs = table.recover(fs)
            return {"status": "recovered", "table": opts.table, "runs": runs}
        location = stats_location_for(opts.table, opts.stats_location, home=table.home)
        cleaned = _cleanup(spark, fs, table, opts, location)
        return {"status": "cleaned", "table": opts.table, "cleaned": cleaned}


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry: run, print a one-line summary, write the JSON result; the exit code on failure, the
    result's ``error_type`` and ``error_category`` come from the error (``spark_jobs.cli.run_job``)."""
    opts = ClusterOptions.from_args(argv)
    return run_job(
        "airflow-zorder-cluster",
        opts.table,
        opts.run_id,
        opts.result_json,
        lambda spark: (run_action(spark, opts), 0),
        _log,
        opts.stats_location,
    )


if __name__ == "__main__":
    sys.exit(main())
