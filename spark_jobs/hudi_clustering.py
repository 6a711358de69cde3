"""The cluster job's path for an Apache Hudi table: Hudi's own clustering, steered by this project's decision.

Our rewrite cannot commit to a Hudi timeline (and Hudi serves no bundle for the Spark line it needs), so a Hudi
table is re-clustered by Hudi's ``CALL run_clustering`` with the job's options: its columns and curve (``order``,
``order_strategy``), its output file size (``target.file.max.bytes``: ceil(partition bytes / target) files, as the
rewrite sizes them), the partitions the run chose (``--partitions``, or those of the incremental plan's bins), every
base file a candidate (``small.file.limit`` raised, so a size-healthy but badly clustered table IS re-clustered)
and every chosen file group in the plan (group limits raised). Hudi commits one ``replacecommit`` that its
readers, cleaner, archiver and rollback know.

Two calls, so an interrupted run can be found again: ``op => 'schedule'``, then a marker
``<home>/_zorder/hudi/<run id>.json`` naming the instant, then ``op => 'execute'``. Hudi's procedure passes no
extra metadata to the plan or the commit, so the marker (and the run's result and stats event) ties the run id to
the instant. A later run (or ``--action recover``) executes the pending clustering a marker names again: Hudi
rolls back the killed attempt's partial files and runs the plan. A write conflict with another writer under
optimistic concurrency control fails the run with :class:`ConcurrentChangeError`, the table as the other writer
left it. Runs on every Spark line with a Hudi bundle (3.5 and 4.x): standard library, pyspark and pure-Python
parts of the package only.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from airflow_zorder.core.errors import (
    ClusteringError,
    ConcurrentChangeError,
    IncrementalError,
    MissingDependencyError,
    RecoveryError,
)
from airflow_zorder.core.hudi import hudi_timeline as tl
from airflow_zorder.core.jobs.options import ClusterOptions, stats_location_for
from airflow_zorder.core.policy.file_sizing import DEFAULT_TARGET_FILE_SIZE
from airflow_zorder.core.storage.commit import ZORDER_DIR
from airflow_zorder.core.storage.faults import fault_point
from airflow_zorder.core.storage.io import FileSystem
from airflow_zorder.core.storage.io.file_info import FileInfo
from airflow_zorder.core.storage.io.paths import join
from airflow_zorder.core.storage.lock import TableLock
from airflow_zorder.core.tables.model import Unit, file_totals, select_units
from airflow_zorder.core.tables.protocol import TableFormat

__all__ = ["FORMAT", "ORDER_STRATEGY", "clustering_options", "marker_path", "run_action", "run_hudi_cluster"]

FORMAT = "hudi"  # the registry's name of the format (core.tables.hudi_table.FORMAT)
#: our curve -> Hudi's layout optimization strategy (``hoodie.layout.optimize.strategy``)
ORDER_STRATEGY = {"zorder": "z-order", "hilbert": "hilbert", "linear": "linear"}
UNBOUNDED = 1 << 50  # bytes: no limit
MAX_GROUPS = 1_000_000
WRITER_RATIO = 10  # hoodie.parquet.compression.ratio: the files are sized by the plan's groups, not by rolling

#: check_columns(column types, partition columns, wanted) -> resolved columns (cluster_table's own rule)
ColumnCheck = Callable[[dict[str, str], list[str], list[str]], list[str]]


def _log(msg: str) -> None:
    print(f"[hudi_clustering] {msg}", file=sys.stderr, flush=True)


def marker_path(home: str, run_id: str) -> str:
    """``<home>/_zorder/hudi/<run id>.json``: the instant a run scheduled (kept as the run's record)."""
    return join(home, ZORDER_DIR, "hudi", f"{run_id}.json")


def clustering_options(opts: ClusterOptions, target_bytes: int) -> dict[str, str]:
    """Hudi's clustering settings for the job's options: every base file a candidate, every chosen partition's file
    groups in one group (so its output is ceil(bytes / target) files, sorted together), files of ``target_bytes``."""
    return {
        "hoodie.clustering.plan.strategy.small.file.limit": str(UNBOUNDED),
        "hoodie.clustering.plan.strategy.max.bytes.per.group": str(UNBOUNDED),
        "hoodie.clustering.plan.strategy.max.num.groups": str(MAX_GROUPS),
        "hoodie.clustering.plan.strategy.target.file.max.bytes": str(target_bytes),
        "hoodie.clustering.plan.strategy.single.group.clustering.enabled": "true",
        # the curve over ranges of sampled values, as ours (Hudi's default maps raw values onto the curve)
        "hoodie.layout.optimize.curve.build.method": "sample",
        "hoodie.parquet.compression.codec": opts.compression,
        # Hudi's writer rolls a file at target x (1 + ratio) of its UNcompressed estimate, which would split each
        # planned file in ~3; Hudi's knob for bulk inserts writing smaller files than expected
        "hoodie.parquet.compression.ratio": str(WRITER_RATIO),
    }


def _options_text(options: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in options.items())


def _sql_text(value: str) -> str:
    return value.replace("\\", "\\\\").replace("'", "\\'")


def _call(spark: Any, path: str, op: str, **args: str) -> list[Any]:
    """``CALL run_clustering(path => ..., op => ..., ...)``; a session without Hudi's bundle is named as such."""
    named = ", ".join(f"{k} => '{_sql_text(v)}'" for k, v in {"path": path, "op": op, **args}.items())
    try:
        return spark.sql(f"CALL run_clustering({named})").collect()
    except Exception as exc:  # noqa: BLE001 - converted to what the user can act on
        text = str(exc)
        unknown = ("UNRESOLVED_ROUTINE", "PARSE_SYNTAX_ERROR", "Cannot resolve routine", "not found")
        if "run_clustering" in text and any(u in text for u in unknown):
            raise MissingDependencyError(
                "this Spark session has no Hudi procedures: submit the job with Hudi's Spark bundle and its session "
                "settings (airflow_zorder.hudi_spark.submit_conf: spark.sql.extensions="
                "org.apache.spark.sql.hudi.HoodieSparkSessionExtension, ...)"
            ) from exc
        if "HoodieWriteConflictException" in text or ("conflict" in text.lower() and "hoodie" in text.lower()):
            raise ConcurrentChangeError(
                f"Hudi's clustering of {path} conflicted with another writer's commit (optimistic concurrency "
                f"control): the clustering was not committed and the other writer's change stands. Run again. "
                f"({text.splitlines()[0][:300]})"
            ) from exc
        raise ClusteringError(f"Hudi's clustering of {path} failed: {text.splitlines()[0][:600]}") from exc


def _pending_clusterings(fs: FileSystem, table: Any) -> set[str]:
    return {i.timestamp for i in tl.pending_instants(fs, table.root, table.properties) if i.action == "clustering"}


def _completed(fs: FileSystem, table: Any, instant: str) -> str | None:
    """The completed replacecommit file of ``instant`` on the timeline, or None."""
    for f in fs.list_files(tl.timeline_dir(table.root, table.properties), recursive=False):
        name = f.path.rsplit("/", 1)[-1]
        if name.startswith(instant) and name.endswith(".replacecommit"):
            return name
    return None


def _read_marker(fs: FileSystem, path: str) -> dict[str, Any]:
    try:
        return json.loads(fs.read_text(path))
    except Exception as exc:  # noqa: BLE001 - a torn marker names nothing we can finish
        raise RecoveryError(f"cannot read the Hudi run marker {path}: {exc}; delete it to go on") from exc


def recover(spark: Any, fs: FileSystem, table: Any) -> list[str]:
    """Execute again every pending clustering one of our markers names (Hudi rolls back the interrupted attempt's
    files first); the run ids finished. Pending clusterings of others are left to the table's refusal."""
    folder = join(table.home, ZORDER_DIR, "hudi")
    if not fs.exists(folder):
        return []
    pending = _pending_clusterings(fs, table)
    done = []
    for f in sorted(fs.list_files(folder, recursive=False), key=lambda f: f.path):
        if not f.path.endswith(".json"):
            continue
        marker = _read_marker(fs, f.path)
        if marker.get("state") == "scheduled" and marker.get("instant") in pending:
            _log(f"re-executing the interrupted run {marker['run_id']}'s clustering {marker['instant']}")
            args = {k: marker[k] for k in ("order", "order_strategy", "options", "selected_partitions") if k in marker}
            _call(spark, table.root, "execute", instants=marker["instant"], **args)
            marker.update(state="completed", recovered=True, completed=_completed(fs, table, marker["instant"]))
            fs.write_atomic(f.path, json.dumps(marker, indent=1))
            done.append(str(marker["run_id"]))
    return done


def _partitions_of(fs: FileSystem, table: TableFormat, opts: ClusterOptions, units: list[Unit], columns: list[str]):
    """The units a run clusters: ``--partitions``' (all when none), narrowed to the incremental plan's partitions
    (given ``--plan`` or made from the stats store); a plan's bins widen to their whole partitions (Hudi's
    clustering is chosen by partition). Returns (units, plan summary or None, notes)."""
    chosen = [u for u in select_units(units, opts.partitions) if u.files]
    if not opts.incremental or not chosen:
        return chosen, None, []
    from spark_jobs import incremental_units

    try:
        bins, summary, notes = incremental_units.incremental_units(fs, table, opts, chosen, columns)
    except IncrementalError as exc:
        raise ClusteringError(str(exc)) from exc
    wanted = {b.relpath for b in bins}
    return [u for u in chosen if u.relpath in wanted], summary, notes


def _rows(spark: Any, paths: list[str]) -> int:
    return spark.read.parquet(*paths).count() if paths else 0


def _checksum(spark: Any, paths: list[str]) -> int:
    """Order-free checksum of the rows (every column, Hudi's meta columns included: clustering keeps them)."""
    from pyspark.sql import functions as F

    if not paths:
        return 0
    df = spark.read.parquet(*paths)
    row = df.select(F.sum(F.xxhash64(*df.columns).cast("decimal(38,0)")).alias("s")).collect()[0]
    return int(row["s"] or 0)


def run_hudi_cluster(
    spark: Any, opts: ClusterOptions, table: Any, fs: FileSystem, check_columns: ColumnCheck
) -> dict[str, Any]:
    """Cluster a Hudi table with Hudi's own clustering under the table lock; the job's result dictionary."""
    started = time.time()
    phases: dict[str, float] = {}
    result: dict[str, Any] = {
        "status": "clustered",
        "run_id": opts.run_id,
        "table": opts.table,
        "kind": table.kind,
        "curve": opts.curve,
        "columns": opts.columns,
        "mode": "incremental" if opts.incremental else "full",
        "stats_location": stats_location_for(opts.table, opts.stats_location, home=table.home),
        "messages": [],
    }
    with TableLock(fs, table.home, opts.run_id, ttl_s=opts.lock_ttl_s) as lock:
        lock.start_heartbeat()
        recovered = recover(spark, fs, table)
        if recovered:
            result["messages"].append(f"finished earlier interrupted runs first: {', '.join(recovered)}")
        snap = table.refresh()
        table.check_rewritable()
        result["partition_columns"] = snap.partition_columns
        t = time.time()
        schema = spark.read.format("hudi").load(table.root).schema
        types = {f.name: f.dataType.simpleString() for f in schema.fields if not f.name.startswith("_hoodie_")}
        columns = check_columns(types, snap.partition_columns, opts.columns)
        units, plan, notes = _partitions_of(fs, table, opts, snap.units, columns)
        result["messages"].extend(notes)
        if plan is not None:
            result["plan"] = plan
        phases["plan_s"] = round(time.time() - t, 3)
        if not units:
            result["status"] = "noop"
            result["messages"].append("nothing to cluster: the chosen partitions have no base files")
            return _finish(result, [], [], [], 0, phases, started, columns)
        before_files = [f for u in units for f in u.files]
        total = max(u.bytes for u in units)
        target = -(-total // opts.num_files) if opts.num_files else (opts.target_file_size or DEFAULT_TARGET_FILE_SIZE)
        options = clustering_options(opts, target)
        args = {
            "order": ",".join(columns),
            "order_strategy": ORDER_STRATEGY[opts.curve],
            "options": _options_text(options),
        }
        if snap.partition_columns:
            args["selected_partitions"] = ",".join(u.relpath for u in units)
        t = time.time()
        before_pending = _pending_clusterings(fs, table)
        _call(spark, table.root, "schedule", **args)
        new = sorted(_pending_clusterings(fs, table) - before_pending)
        if not new:  # e.g. one file group, already written by a clustering
            result["status"] = "noop"
            result["messages"].append("nothing to cluster: Hudi's clustering plan chose no file group")
            return _finish(result, [], [], [], 0, phases, started, columns)
        if len(new) != 1:
            raise ClusteringError(
                f"Hudi scheduled {len(new)} clusterings of {table.root} for this run (expected 1): "
                f"{', '.join(new) or 'none: no file group qualified'}"
            )
        instant = new[0]
        marker = {"run_id": opts.run_id, "instant": instant, "state": "scheduled", "options": options, **args}
        fs.write_atomic(marker_path(table.home, opts.run_id), json.dumps(marker, indent=1))
        phases["schedule_s"] = round(time.time() - t, 3)
        _log(f"scheduled Hudi clustering {instant} for run {opts.run_id}: {args['order']} {args['order_strategy']}")
        fault_point("hudi_after_schedule")
        t = time.time()
        _call(spark, table.root, "execute", instants=instant, **args)  # the write settings again: not in the plan
        phases["execute_s"] = round(time.time() - t, 3)
        completed = _completed(fs, table, instant)
        if completed is None:
            raise ClusteringError(f"Hudi's clustering {instant} of {table.root} did not complete; run again")
        marker.update(state="completed", completed=completed)
        fs.write_atomic(marker_path(table.home, opts.run_id), json.dumps(marker, indent=1))
        t = time.time()
        after = table.refresh()
        chosen = {u.relpath for u in units}
        after_files = [f for u in after.units if u.relpath in chosen for f in u.files]
        still = {f.path for f in after_files}
        replaced = [f for f in before_files if f.path not in still]
        written = [f for f in after_files if f.path.endswith(f"_{instant}.parquet")]
        rows_in, rows_out = _rows(spark, [f.path for f in replaced]), _rows(spark, [f.path for f in written])
        if rows_in != rows_out:
            raise ClusteringError(
                f"Hudi's clustering {instant} of {table.root} wrote {rows_out} rows for the {rows_in} of the "
                f"{len(replaced)} file groups it replaced"
            )
        if opts.verify == "full" and _checksum(spark, [f.path for f in replaced]) != _checksum(
            spark, [f.path for f in written]
        ):
            raise ClusteringError(f"Hudi's clustering {instant} of {table.root}: the rows' checksum changed")
        phases["verify_s"] = round(time.time() - t, 3)
        result["hudi"] = {
            "instant": instant,
            "completed": completed,
            "order_strategy": args["order_strategy"],
            "target_file_size": target,
            "replaced_file_groups": len(replaced),
            "written_files": len(written),
        }
        _log(f"committed Hudi replacecommit {completed}: {len(replaced)} -> {len(written)} files, {rows_out} rows")
        return _finish(result, units, replaced, written, rows_out, phases, started, columns)


def _finish(
    result: dict[str, Any],
    units: list[Unit],
    replaced: Sequence[FileInfo],
    written: Sequence[FileInfo],
    rows: int,
    phases: dict[str, float],
    started: float,
    columns: list[str],
) -> dict[str, Any]:
    by_dir: dict[str, list[FileInfo]] = {}
    for f in written:
        by_dir.setdefault(f.path.rsplit("/", 1)[0], []).append(f)
    result["columns"] = columns
    result["partitions"] = [
        {
            "partition": u.label,
            "files_before": len(u.files),
            "files_after": len(by_dir.get(u.location.rstrip("/"), [])),
        }
        for u in units
    ]
    result["skipped"] = []
    before, after = file_totals(list(replaced)), file_totals(list(written))
    result["before"] = {**before, "rows": rows}
    result["after"] = {**after, "rows": rows}
    result["rewritten"] = {"files": before["files"], "bytes": before["bytes"], "output_files": after["files"]}
    result["phases"] = phases
    result["duration_s"] = round(time.time() - started, 3)
    return result


def run_action(
    spark: Any, opts: ClusterOptions, table: Any, fs: FileSystem, check_columns: ColumnCheck
) -> dict[str, Any]:
    """The job's action on a Hudi table: cluster, recover (execute our interrupted clusterings again) or cleanup
    (Hudi's cleaner removes replaced file groups: ``hoodie.clean.*``; nothing of ours to delete)."""
    if opts.action == "cluster":
        return run_hudi_cluster(spark, opts, table, fs, check_columns)
    with TableLock(fs, table.home, opts.run_id, ttl_s=opts.lock_ttl_s):
        if opts.action == "recover":
            return {"status": "recovered", "table": opts.table, "runs": recover(spark, fs, table)}
    return {
        "status": "cleaned",
        "table": opts.table,
        "cleaned": [],
        "messages": ["Hudi's cleaner removes the file groups a clustering replaced (hoodie.clean.*)"],
    }
