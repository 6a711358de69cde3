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

from airflow_zorder.core.errors import ConcurrentChangeError, JobError
from airflow_zorder.core.jobs.file_names import clustered_file_name
from airflow_zorder.core.jobs.file_sizing import num_output_files
from airflow_zorder.core.jobs.job_results import prune_run_files
from airflow_zorder.core.jobs.options import ClusterOptions, stats_location_for
from airflow_zorder.core.layout import ranges
from airflow_zorder.core.stats import stats_store
from airflow_zorder.core.storage import commit as commit_mod
from airflow_zorder.core.storage.faults import fault_point
from airflow_zorder.core.storage.filesystems import FileSystem, filesystem_for, is_path_table, join, os_path
from airflow_zorder.core.storage.lock import TableLock
from spark_jobs import catalog, delta_table, incremental_units, rewrite
from spark_jobs.cli import run_job, spark_error_text
from spark_jobs.stats_collection.listing import stats_io_for
from spark_jobs.table import (
    ResolvedTable,
    Unit,
    check_parquet,
    is_delta_table,
    list_path_table,
    list_units,
    select_units,
)

BATCH_UNITS = 64  # partitions rewritten by one set of Spark jobs


class ClusteringError(JobError):
    """A clear, user-facing reason the job refused or failed; the table is left as it was."""


def _log(msg: str) -> None:
    print(f"[cluster_table] {msg}", file=sys.stderr, flush=True)


def resolve_table(spark, table: str) -> tuple[ResolvedTable, FileSystem]:
    """Resolve a path or catalog table; clear errors for missing, non-Parquet and Delta/Hudi/Iceberg tables."""
    if is_path_table(table):
        fs = filesystem_for(table, spark)
        if fs.exists(table) and is_delta_table(fs, table):
            ref = delta_table.resolve_delta_table(fs, table)  # the log's files; refuses unsafe features
        else:
            pcols, units = list_path_table(fs, table)  # refuses missing tables and Hudi/Iceberg ones
            ref = ResolvedTable(table, "path", table, table, pcols, units)
    else:
        fs = filesystem_for("/", spark)
        ref = catalog.resolve_catalog_table(spark, fs, table)
        fs = filesystem_for(ref.root, spark)
    check_parquet(fs, ref.units)
    return ref, fs


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


def _stats(files: list) -> dict[str, int]:
    return {"files": len(files), "bytes": sum(f.size for f in files)}


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
        with rewrite.driver_listing(spark, _on_local_disk(fs, units)):
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
) -> tuple[list[dict], list[dict]]:
    """Rewrite a batch of units into ``staging/<unit relpath>/`` and verify it; returns (done, skipped).

    ``names`` counts the files named so far per unit directory, so the bins of one partition never collide.
    """

    def lap(name: str, since: float) -> float:
        now = time.time()
        phases[name] = round(phases.get(name, 0.0) + now - since, 3)
        return now

    t = time.time()
    work = [rewrite.UnitWork(i, u.label, [f.path for f in u.files], 0) for i, u in enumerate(batch)]
    local = _on_local_disk(fs, batch)
    df = rewrite.read_batch(spark, [(w.index, w.paths) for w in work], schema, local)
    counts = rewrite.footer_counts(fs, [(w.index, w.paths) for w in work])
    if counts is None:
        counts = rewrite.count_rows(df)
    t = lap("count_s", t)
    live, skipped = [], []
    for w, u in zip(work, batch):
        w.rows = counts.get(w.index, 0)
        if w.rows == 0:
            skipped.append({"partition": u.label, "reason": "no rows"})
            continue
        w.num_files = u.num_files or opts.num_files or num_output_files(u.bytes, opts.file_bytes, w.rows)
        live.append(w)
    if not live:
        return [], skipped
    out = join(staging, f"_batch{b}")
    # The encodings' files are read (here, when small and local) while the plan's sample is taken,
    # and judged by the plan while this thread builds the write's plan: neither waits for the other.
    with ThreadPoolExecutor(max_workers=1) as pool:
        in_thread = inheritable_thread_target(spark)
        sample = pool.submit(
            in_thread(rewrite.encodings_sample), spark, live, schema, opts.seed + b, fs if local else None
        )
        rewrite.plan_batch(
            df, live, columns, opts.curve, opts.num_ranges, opts.salt_bits, opts.seed + b, fs if local else None
        )
        t = lap("sample_and_plan_s", t)
        plain = pool.submit(in_thread(lambda: rewrite.plain_from_sample(spark, live, columns, sample.result())))
        obs_in, obs_out, engine = rewrite.write_batch(
            spark, df, live, columns, out, opts.compression, f"b{b}", opts.key_engine, plain.result
        )
    plain = plain.result()
    t = lap("write_s", t)  # the encodings included
    by_unit = rewrite.files_by_unit(_staged_files(fs, out), live)
    parts = [(i, [f.path for f in files]) for i, files in by_unit.items() if files]
    staged = rewrite.footer_counts(fs, parts)
    staged_df = (
        rewrite.read_batch(spark, parts, schema, local) if parts and (staged is None or opts.verify == "full") else None
    )
    full = rewrite.staged_checksum(staged_df) if opts.verify == "full" and staged_df is not None else None
    if staged is None:
        staged = rewrite.count_rows(staged_df) if staged_df is not None else {}
    rewrite.verify(live, obs_in, obs_out, staged, full)
    t = lap("verify_s", t)
    done = []
    for w in live:
        unit = batch[w.index]
        placed = []
        for f in sorted(by_unit[w.index], key=lambda x: x.path):
            i = names[unit.relpath] = names.get(unit.relpath, -1) + 1
            dst = join(staging, unit.relpath, clustered_file_name(i, opts.run_id))
            fs.rename(f.path, dst)
            placed.append(type(f)(dst, f.size, f.mtime_ms))
        done.append(
            {
                "partition": unit.label,
                **({"bin": unit.bin} if unit.bin is not None else {}),
                "spec": unit.spec,
                "rows": w.rows,
                "before": _stats(unit.files),
                "after": _stats(placed),
                "plan": {**w.plan.describe(), "key_engine": engine, "plain_encoded": plain},
                "_unit": unit,
                "_staged": placed,
            }
        )
        _log(f"staged {unit.label}: {len(unit.files)} -> {len(placed)} files, {w.rows} rows verified")
    fs.delete(out, recursive=True)
    return done, skipped


def run_cluster(spark, opts: ClusterOptions) -> dict[str, Any]:
    """Cluster a table end to end and return the result dictionary (also written as JSON by ``main``)."""
    started = time.time()
    phases: dict[str, float] = {}
    ref, fs = resolve_table(spark, opts.table)
    if ref.kind == "catalog":
        catalog.ensure_home(spark, ref)
    result: dict[str, Any] = {
        "status": "clustered",
        "run_id": opts.run_id,
        "table": opts.table,
        "kind": ref.kind,
        "curve": opts.curve,
        "columns": opts.columns,
        "partition_columns": ref.partition_columns,
        "mode": "incremental" if opts.incremental else "full",
        "stats_location": stats_location_for(opts.table, opts.stats_location, home=ref.home),
        "messages": [],
    }
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    with TableLock(fs, ref.home, opts.run_id, ttl_s=opts.lock_ttl_s) as lock:
        lock.start_heartbeat()
        recovered = _recover(spark, fs, ref)
        if recovered:
            result["messages"].append(f"finished earlier interrupted runs first: {', '.join(recovered)}")
            ref, fs = resolve_table(spark, opts.table)  # the layout may have changed
        units = select_units(ref.units, opts.partitions)
        done_units, skipped = [], []
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
            resolved_columns = _check_columns(types, ref.partition_columns, opts.columns)
        schema_s = time.time() - t  # reported within stage_and_verify_s, as before plans came between
        t = time.time()
        if opts.incremental and with_files:
            with_files, result["plan"], notes = _plan_units(fs, ref, opts, with_files, resolved_columns or [])
            result["messages"].extend(notes)
            phases["plan_s"] = round(time.time() - t, 3)
        inputs = [f for u in with_files for f in u.files] if ref.kind == "path" else []
        journal = commit_mod.begin(fs, ref.home, opts.run_id, inputs)
        staging = commit_mod.staging_dir(ref.home, opts.run_id)
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
            if ref.kind == "path":
                staged_all = [f for u in done_units for f in u["_staged"]]
                commit_mod.commit(fs, journal, staged_all, lock=lock)
            elif ref.kind == delta_table.FORMAT:
                result["delta"] = _commit_delta(fs, ref, journal, done_units, result, resolved_columns)
            else:
                _commit_catalog(spark, fs, ref, journal, done_units, staging)
            phases["commit_s"] = round(time.time() - t, 3)
        t = time.time()
        result["cleaned"] = _cleanup(spark, fs, ref, opts, result["stats_location"])
        phases["cleanup_s"] = round(time.time() - t, 3)
    result["columns"] = resolved_columns or opts.columns
    result["partitions"] = [{k: v for k, v in u.items() if not k.startswith("_")} for u in done_units]
    result["skipped"] = skipped
    before = {
        "files": sum(u["before"]["files"] for u in done_units),
        "bytes": sum(u["before"]["bytes"] for u in done_units),
    }
    after = {
        "files": sum(u["after"]["files"] for u in done_units),
        "bytes": sum(u["after"]["bytes"] for u in done_units),
    }
    rows = sum(u["rows"] for u in done_units)
    result["before"] = {**before, "rows": rows}
    result["after"] = {**after, "rows": rows}
    result["rewritten"] = {"files": before["files"], "bytes": before["bytes"], "output_files": after["files"]}
    result["phases"] = phases
    result["duration_s"] = round(time.time() - started, 3)
    if result["status"] == "clustered":
        _record_event(fs, result)
    return result


def _plan_units(
    fs: FileSystem, ref: ResolvedTable, opts: ClusterOptions, units: list[Unit], columns: list[str]
) -> tuple[list[Unit], dict[str, Any], list[str]]:
    """The incremental plan's bins as units (``spark_jobs.incremental_units``), logged; clear errors as ClusteringError."""
    try:
        bins, summary, notes = incremental_units.incremental_units(fs, ref, opts, units, columns)
    except incremental_units.IncrementalError as exc:
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


def _recover(spark, fs: FileSystem, ref: ResolvedTable) -> list[str]:
    """Finish (after the commit point) or roll back (before it) every interrupted run of this table."""
    if ref.kind == "path":
        return commit_mod.recover(fs, ref.home)
    if ref.kind == delta_table.FORMAT:
        return delta_table.recover_delta(fs, ref)
    return _recover_catalog(spark, fs, ref)


def _commit_delta(
    fs: FileSystem, ref: ResolvedTable, journal, done_units: list[dict], result: dict, columns: list[str] | None
) -> dict[str, int]:
    """Commit the verified rewrite as one Delta transaction; a conflicting writer fails the run cleanly."""
    run = delta_table.run_metadata({**result, "columns": columns or result["columns"]}, done_units)
    read_version = ref.delta.snapshot.version
    try:
        version = delta_table.commit_delta(fs, ref, journal, done_units, run)
    except ConcurrentChangeError as exc:
        raise ConcurrentChangeError(f"{exc} The files this run wrote were deleted.", exc.files) from exc
    except Exception as exc:  # noqa: BLE001 - the journal decides later whether the commit landed
        raise ClusteringError(
            f"committing to the Delta log of {ref.root} failed: {type(exc).__name__}: {exc}. Delta readers do not "
            "see the files this run placed; the next run (or --action recover) removes them, or marks the run done "
            "if its commit is in the table's history."
        ) from exc
    _log(f"committed Delta version {version} (read version {read_version})")
    return {"read_version": read_version, "version": version}


def _commit_catalog(spark, fs: FileSystem, ref: ResolvedTable, journal, done_units: list[dict], staging: str) -> None:
    """Move staged units to fresh locations, record the commit point, then switch locations in the metastore."""
    switches = []
    for u in done_units:
        unit: Unit = u["_unit"]
        switches.append(
            {
                "relpath": unit.relpath,
                "spec": unit.spec,
                "old": unit.location,
                "new": catalog.new_location(ref, journal.run_id, unit),
                "inputs": [f.path for f in unit.files],
            }
        )
    journal.info["catalog_switches"] = switches
    journal.info["staging"] = staging
    commit_mod.mark_committed(fs, journal)  # ---- COMMIT POINT ----
    fault_point("after_commit_record")
    _finish_catalog(spark, fs, ref, journal)


def _finish_catalog(spark, fs: FileSystem, ref: ResolvedTable, journal) -> None:
    """Idempotently complete a committed catalog run: place files, adopt stragglers, switch, finish."""
    staging = journal.info["staging"]
    for sw in journal.info["catalog_switches"]:
        unit = Unit(sw["relpath"], sw["spec"], sw["old"])
        src = join(staging, sw["relpath"])
        if fs.exists(src) and not fs.exists(sw["new"]):
            fs.mkdirs(sw["new"].rsplit("/", 1)[0])
            fs.rename(src, sw["new"])
        current = catalog.current_location(spark, ref.name, unit)
        if _same_dir(current, sw["old"]):
            _adopt_stragglers(fs, sw)
            catalog.switch_location(spark, ref.name, unit, sw["new"])
            fault_point("mid_swap")
        _adopt_stragglers(fs, sw)  # appends that landed in the old location around the switch
    commit_mod.finish(fs, journal)


def _adopt_stragglers(fs: FileSystem, sw: dict) -> None:
    """Move files appended to the old location after the snapshot into the new one: they are kept, not dropped."""
    inputs = set(sw["inputs"])
    _, units = list_units(fs, sw["old"])
    for f in (f for u in units for f in u.files):
        if f.path not in inputs and not any(_same_dir(f.path, i) for i in inputs):
            fs.rename(f.path, join(sw["new"], f.path.rsplit("/", 1)[1]))


def _same_dir(a: str, b: str) -> bool:
    strip = lambda p: p.replace("file:///", "/").replace("file:/", "/").rstrip("/")  # noqa: E731
    return strip(a) == strip(b)


def _recover_catalog(spark, fs: FileSystem, ref: ResolvedTable) -> list[str]:
    done = []
    for journal in commit_mod.pending_runs(fs, ref.home):
        if journal.state == "staging":
            commit_mod.rollback(fs, journal)
        else:
            _finish_catalog(spark, fs, ref, journal)
        done.append(journal.run_id)
    return done


def _cleanup(spark, fs: FileSystem, ref: ResolvedTable, opts: ClusterOptions, stats_location: str | None) -> list[str]:
    """Purge what finished runs replaced once the retention passed (trash; catalog tables' old files), and the
    stats store's per-run plans and results as old (``job_results.prune_run_files``)."""
    retention_s = opts.retention_s
    deleted = commit_mod.cleanup(fs, ref.home, retention_s)
    if stats_location:
        try:
            deleted += prune_run_files(*stats_io_for(spark, stats_location), retention_s)
        except Exception as exc:  # noqa: BLE001 - the table is committed; old plans and results can wait a run
            _log(f"old plans and results in {stats_location} not pruned: {type(exc).__name__}: {exc}")
    now = time.time()
    for journal in commit_mod.list_journals(fs, ref.home):
        switches = journal.info.get("catalog_switches")
        if journal.state != commit_mod.DONE or not switches or journal.info.get("old_files_deleted"):
            continue
        if now - journal.updated_at <= retention_s:
            continue
        for sw in switches:  # exactly the snapshot this run replaced; stragglers were adopted
            for path in sw["inputs"]:
                if fs.delete(path):
                    deleted.append(path)
            if "/_zorder/versions/" in sw["old"] and not list_units(fs, sw["old"])[1]:
                fs.delete(sw["old"], recursive=True)
        journal.info["old_files_deleted"] = True
        fs.write_text_atomic(commit_mod.journal_path(ref.home, journal.run_id), journal.to_json())
    return deleted


def run_action(spark, opts: ClusterOptions, action: str) -> dict[str, Any]:
    """Dispatch the command line's action."""
    if action == "cluster":
        return run_cluster(spark, opts)
    ref, fs = resolve_table(spark, opts.table)
    with TableLock(fs, ref.home, opts.run_id, ttl_s=opts.lock_ttl_s):
        if action == "recover":
            runs = _recover(spark, fs, ref)
            return {"status": "recovered", "table": opts.table, "runs": runs}
        cleaned = _cleanup(spark, fs, ref, opts, stats_location_for(opts.table, opts.stats_location, home=ref.home))
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
        lambda spark: (run_action(spark, opts, opts.action), 0),
        _log,
        opts.stats_location,
    )


if __name__ == "__main__":
    sys.exit(main())
