"""spark-submit entry point: collect per-file, per-column statistics of a Parquet table into its stats table.

    spark-submit spark_jobs/collect_stats.py --table PATH_OR_DB.TABLE
        [--columns all | a,b,c] [--method auto|footer|scan]
        [--stats-location PATH_OR_URI] [--stats-table DB.NAME]
        [--result-json PATH] [--full] [--keep-snapshots N] [--parallelism N] [--allow-errors]

Methods (per data file and column: min, max, null count, NaN count, value count):

* ``footer``: read the Parquet footers, distributed over the executors (the
  file list is parallelised; each task reads its files' footers with pyarrow
  and merges the row groups).  Fast, but footer statistics can be missing
  (INT96 timestamps, writers that skip them, all-NaN row groups) or truncated
  (long strings, parquet-rs); such (file, column) pairs are left without
  statistics (``has_stats`` false: never pruned).
* ``scan``: compute from the data with Spark (``groupBy(input_file_name())``
  with min/max/count per column).  Always correct; reads every column chunk.
  The footers are still read (cheaply) for row counts and types.
* ``auto`` (default): footers first, then the scan for exactly the (file,
  column) pairs whose footer statistics are missing, INT96 or truncated.
  Every row records the method that produced it (``method``) and why the scan
  was needed (``reason = "scanned:<why>"``).

Incremental: the latest snapshot of the stats location is read first; files
with the same path, size and modification time are not read again (their rows
are carried forward), new and changed files are read, files that disappeared
are dropped from the new snapshot and listed in the run record
(``gone_paths``).  When nothing changed, no new snapshot is written (the run
is still recorded).  ``--full`` ignores the previous snapshot.

NaN: both methods store float min/max *without* NaN (the Parquet rule, also
what footers hold), and the scan counts NaN in ``nan_count`` (footer rows:
null, unknown).  Spark itself orders NaN above +inf, so a Spark predicate
``c > v`` can match NaN rows: a pruning evaluator must keep files whose
``nan_count`` is non-zero or unknown for such predicates.

Failures: a file that cannot be read (corrupt footer or data) is named in the
result's ``errors``; its rows have ``has_stats`` false and ``error`` set (it is
retried on the next run), every other file's stats are committed, and the job
exits with code 2 (``status: partial``; 0 with ``--allow-errors``).  A missing
table, an unknown column or an unwritable stats location fail before anything
is committed (exit code 1).  Readers never see a partial snapshot (see
:mod:`airflow_zorder.core.stats.stats_store`).

The stats table's layout and schema: :mod:`airflow_zorder.core.stats.stats_store`,
:mod:`airflow_zorder.core.stats.stats_schema`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.stats import footer_stats as fst
from airflow_zorder.core.stats import stats_schema as ss
from airflow_zorder.core.stats import stats_store
from airflow_zorder.core.storage import locations
from airflow_zorder.core.storage.faults import fault_point
from airflow_zorder.core.storage.filesystems import FileInfo, HadoopFileSystem, LocalFileSystem, is_path_table, scheme_of
from spark_jobs.cli import run_job

METHODS = ("auto", "footer", "scan")
# footer reasons that the auto method repairs with a scan
_SCAN_REASONS = ("int96", "row_group_without_stats", "row_group_without_min_max", "nan_in_stats",
                 "min_greater_than_max", "undecodable_stats")
_NO_PY_FS = "no_python_filesystem"


class StatsCollectionError(RuntimeError):
    """A clear, user-facing reason the collection refused or failed; nothing was committed."""


@dataclass
class CollectOptions:
    """What to collect and where; mirrors the command line."""

    table: str
    columns: list[str] | None = None  # None: all columns
    method: str = "auto"
    stats_location: str | None = None  # default: <table home>/_zorder/stats
    stats_table: str | None = None  # also register the stats as this catalog table
    full: bool = False  # ignore the previous snapshot
    keep_snapshots: int | None = None  # keep only the newest N snapshot files (runs are always kept)
    parallelism: int | None = None  # footer tasks (default: the cluster's default parallelism)
    run_id: str = field(default_factory=lambda: time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8])


@dataclass
class _File:
    path: str  # as listed: the path recorded in the stats
    read_path: str  # what executors open (qualified when the default filesystem is not local)
    size: int
    mtime_ms: int
    partition: str | None
    spec: dict[str, str]


@dataclass
class _Table:
    name: str
    kind: str
    root: str
    home: str
    partition_columns: list[str]
    files: list[_File]
    schema_columns: list[str] | None = None  # catalog tables: the declared data columns


# --------------------------------------------------------------------------- command line


def parse_columns(values: list[str] | str | None) -> list[str] | None:
    """``all`` (or nothing) -> None; else names from comma-separated values or a JSON list."""
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for v in values:
        v = v.strip()
        if v.startswith("["):
            out.extend(str(x) for x in json.loads(v))
        else:
            out.extend(x.strip() for x in v.split(","))
    out = [x for x in out if x]
    if not out or (len(out) == 1 and out[0].lower() in ("all", "*")):
        return None
    return out


def parse_args(argv: list[str] | None = None) -> tuple[CollectOptions, str | None, bool]:
    """Parse the command line into options, the result path and ``allow_errors``."""
    p = argparse.ArgumentParser(prog="collect_stats.py", description=__doc__.split("\n")[0])
    p.add_argument("--table", required=True, help="Parquet directory (path or URI) or catalog table name db.table")
    p.add_argument("--columns", action="append", default=None,
                   help="columns to collect: 'all' (default) or comma-separated names (repeatable, or a JSON list)")
    p.add_argument("--method", default="auto", choices=METHODS,
                   help="footer: Parquet footers only; scan: compute from the data; "
                        "auto (default): footers, scan only where footer stats are missing, INT96 or truncated")
    p.add_argument("--stats-location", default=None,
                   help="where the stats table lives (path or URI); default <table home>/_zorder/stats")
    p.add_argument("--stats-table", default=None,
                   help="also register the stats as catalog tables NAME (file stats) and NAME_runs (run records)")
    p.add_argument("--full", action="store_true", help="read every file again, ignoring the previous snapshot")
    p.add_argument("--keep-snapshots", type=int, default=None,
                   help="keep only the newest N snapshot files (run records are always kept); default all")
    p.add_argument("--parallelism", type=int, default=None, help="footer-reading tasks (default: default parallelism)")
    p.add_argument("--allow-errors", action="store_true",
                   help="exit 0 even when some files could not be read (their rows carry the error)")
    p.add_argument("--result-json", default=None, help="write the JSON result here (local path)")
    p.add_argument("--run-id", default=None)
    a = p.parse_args(argv)
    if a.keep_snapshots is not None and a.keep_snapshots < 0:
        p.error(f"--keep-snapshots must be >= 1 (0 keeps every snapshot), got {a.keep_snapshots}")
    if a.parallelism is not None and a.parallelism < 1:
        p.error(f"--parallelism must be at least 1, got {a.parallelism}")
    opts = CollectOptions(table=a.table, columns=parse_columns(a.columns), method=a.method,
                          stats_location=a.stats_location, stats_table=a.stats_table, full=a.full,
                          keep_snapshots=a.keep_snapshots, parallelism=a.parallelism)
    if a.run_id:
        opts.run_id = a.run_id
    return opts, a.result_json, a.allow_errors


def _log(msg: str) -> None:
    print(f"[collect_stats] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- filesystems


_DEFAULT_FS_LOCAL: dict[int, bool] = {}


def _default_fs_is_local(spark) -> bool:
    key = id(spark.sparkContext._jsc)
    if key not in _DEFAULT_FS_LOCAL:
        default = str(spark._jsc.hadoopConfiguration().get("fs.defaultFS") or "file:///")
        _DEFAULT_FS_LOCAL[key] = default.startswith("file:")
    return _DEFAULT_FS_LOCAL[key]


def _is_local(spark, path: str) -> bool:
    s = scheme_of(path)
    return s == "file" or (s == "" and _default_fs_is_local(spark))


def _local_path(path: str) -> str:
    return locations.parse_location(path).local_path()


class _ListingFS:
    """Lists with plain ``os`` calls for local paths (much faster than py4j), Hadoop for the rest."""

    def __init__(self, spark) -> None:
        self._spark = spark
        self._local = LocalFileSystem()
        self._hadoop: HadoopFileSystem | None = None

    def _pick(self, path: str):
        if _is_local(self._spark, path):
            return self._local
        if self._hadoop is None:
            self._hadoop = HadoopFileSystem(self._spark)
        return self._hadoop

    def list_files(self, path: str, recursive: bool = True) -> list[FileInfo]:
        return self._pick(path).list_files(path, recursive)

    def exists(self, path: str) -> bool:
        return self._pick(path).exists(path)


def stats_io_for(spark, location: str) -> tuple[stats_store.StatsIO, str]:
    """The IO the job uses for ``location``: pyarrow on the local disk, Hadoop (driver JVM) elsewhere."""
    if _is_local(spark, location):
        return stats_store.resolve_io(_local_path(location))
    return stats_store.FsIO(HadoopFileSystem(spark)), location.rstrip("/")


# --------------------------------------------------------------------------- the table


def _qualify(spark, path: str) -> str:
    """A path executors can open on their own: local absolute, or fully qualified by Hadoop."""
    if _is_local(spark, path):
        return _local_path(path)
    jp = spark._jvm.org.apache.hadoop.fs.Path(path)
    return str(jp.getFileSystem(spark._jsc.hadoopConfiguration()).makeQualified(jp).toString())


def resolve_table(spark, table: str) -> _Table:
    """List a path or catalog table's live data files, with partitions; clear errors for missing tables."""
    from spark_jobs import catalog
    from spark_jobs.table import list_path_table

    lister = _ListingFS(spark)
    if is_path_table(table):
        root = table
        if _is_local(spark, table):
            root = _local_path(table)  # one spelling for local tables: plain absolute paths
        pcols, units = list_path_table(lister, table, root)  # refuses missing tables and Delta/Hudi/Iceberg ones
        ref_name, kind, home, schema_columns = table, "path", root, None
    else:
        ref = catalog.resolve_catalog_table(spark, lister, table)
        pcols, units, root, home = ref.partition_columns, ref.units, ref.root, ref.home
        ref_name, kind = table, "catalog"
        schema_columns = [f.name for f in spark.table(table).schema.fields if f.name not in set(pcols)]
    local = _is_local(spark, root)
    files = []
    for u in units:
        for f in u.files:
            read = _local_path(f.path) if local else _qualify(spark, f.path)
            files.append(_File(f.path, read, f.size, f.mtime_ms, u.relpath or None, dict(u.spec)))
    files.sort(key=lambda f: f.path)
    return _Table(ref_name, kind, root, home, pcols, files, schema_columns)


# --------------------------------------------------------------------------- executors: footers


def _executor_fs(path: str) -> tuple[Any, str]:
    """(pyarrow filesystem or None for local, path in it) on an executor (``storage``, cached per store)."""
    loc = locations.parse_location(path)
    if loc.is_local:
        return None, loc.local_path()
    return locations.arrow_filesystem(path)


def _fix_case(read_path: str, fs: Any, rows: list, wanted: list[str]) -> list:
    """Re-read columns a file spells with another case (Spark resolves names case-insensitively)."""
    absent = [r for r in rows if r.reason == "column_not_in_file"]
    if not absent:
        return rows
    every = fst.read_file_footer(read_path, None, fs)
    by_lower: dict[str, Any] = {}
    for r in every:
        by_lower.setdefault(r.column.lower(), r)
    out = []
    for r in rows:
        alt = by_lower.get(r.column.lower()) if r.reason == "column_not_in_file" else None
        if alt is not None:
            out.append(alt)  # under the file's own spelling; the driver unifies the names
        else:
            out.append(r)
    return out


def footer_partition(items) -> Any:
    """Executor side of the footer job: read the footers of ``(read_path, stats_path, columns)`` items.

    Yields one ``(Arrow IPC bytes of STATS_SCHEMA rows, failures, seconds)``
    per partition; ``failures`` are ``(stats_path, kind, message)`` with kind
    ``error`` | ``vanished`` | ``no_python_filesystem``.
    """
    t0 = time.perf_counter()
    rows: list = []
    failures: list[tuple[str, str, str]] = []
    for read_path, stats_path, columns in items:
        try:
            fs, p = _executor_fs(read_path)
        except Exception as exc:  # noqa: BLE001 - the driver falls back to the scan
            failures.append((stats_path, _NO_PY_FS, f"{type(exc).__name__}: {exc}"))
            continue
        try:
            got = fst.read_file_footer(p, columns, fs)
            if columns is not None:
                got = _fix_case(p, fs, got, columns)
        except FileNotFoundError as exc:
            failures.append((stats_path, "vanished", str(exc)))
            continue
        except Exception as exc:  # noqa: BLE001 - reported per file, the other files go on
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            failures.append((stats_path, "error", f"{type(exc).__name__}: {msg}"[:2000]))
            continue
        for r in got:
            r.path = stats_path
        rows.extend(got)
    table = fst.rows_to_table(rows)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    yield sink.getvalue().to_pybytes(), failures, time.perf_counter() - t0


def _warm_partition(_it) -> Any:
    """Import what the footer tasks need, so Python workers start while the driver lists the table."""
    import pyarrow.parquet  # noqa: F401

    from airflow_zorder.core.stats import footer_stats# noqa: F401

    yield 0


def _start_warmup(spark) -> threading.Thread:
    sc = spark.sparkContext
    n = max(1, sc.defaultParallelism)

    def run() -> None:
        try:
            sc.setJobDescription("collect_stats: start Python workers")
            sc.parallelize(range(n), n).mapPartitions(_warm_partition).collect()
        except Exception:  # noqa: BLE001, S110 - only an optimisation
            pass

    t = threading.Thread(target=run, name="collect-stats-warmup", daemon=True)
    t.start()
    return t


def _first_collection(spark, opts: CollectOptions) -> bool:
    """True when no snapshot exists yet at the (default) stats location of a path table (cheap check)."""

    if opts.stats_location is None and not is_path_table(opts.table):
        return False
    loc = opts.stats_location or stats_store.default_location(
        _local_path(opts.table) if _is_local(spark, opts.table) else opts.table)
    try:
        io, base = stats_io_for(spark, loc)
        return not io.exists(stats_store._join(base, stats_store.POINTER))  # one metadata call
    except Exception:  # noqa: BLE001 - only decides an optimisation
        return False


def read_footers_distributed(spark, items: list[tuple[str, str, list[str] | None]],
                             parallelism: int | None = None) -> tuple[pa.Table, list[tuple[str, str, str]]]:
    """Run the footer job: the item list is parallelised, footers are read on the executors."""
    if not items:
        return fst.STATS_SCHEMA.empty_table(), []
    sc = spark.sparkContext
    n = parallelism or max(1, sc.defaultParallelism)
    n = max(1, min(n, len(items)))
    sc.setJobDescription(f"collect_stats: read {len(items)} Parquet footers")
    out = sc.parallelize(items, n).mapPartitions(footer_partition).collect()
    tables = [pa.ipc.open_stream(b).read_all() for b, _, _ in out]
    failures = [f for _, fl, _ in out for f in fl]
    return (pa.concat_tables(tables) if tables else fst.STATS_SCHEMA.empty_table()), failures


# --------------------------------------------------------------------------- scan


def spark_type_for(arrow_type: str | None, physical_type: str | None):
    """The Spark type to read a column as, from its footer types; None when Spark cannot read it."""
    from pyspark.sql import types as T

    if physical_type == "INT96":
        return T.TimestampType()
    if arrow_type is None:
        return None
    simple = {
        "int8": T.ByteType(), "int16": T.ShortType(), "int32": T.IntegerType(), "int64": T.LongType(),
        "uint8": T.ShortType(), "uint16": T.IntegerType(), "uint32": T.LongType(),
        "uint64": T.DecimalType(20, 0), "float": T.FloatType(), "double": T.DoubleType(),
        "bool": T.BooleanType(), "date32[day]": T.DateType(), "string": T.StringType(), "binary": T.BinaryType(),
    }
    if arrow_type in simple:
        return simple[arrow_type]
    m = re.match(r"^decimal(?:128|256)\((\d+), (\d+)\)$", arrow_type)
    if m:
        p, s = int(m.group(1)), int(m.group(2))
        return T.DecimalType(p, s) if p <= 38 else None
    m = re.match(r"^timestamp\[(ms|us)(, tz=.+)?\]$", arrow_type)
    if m:
        return T.TimestampType() if m.group(2) else T.TimestampNTZType()
    return None  # time, nanosecond timestamps, decimals > 38 digits, ...: Spark cannot read them


def _escape_glob(path: str) -> str:
    return re.sub(r"([\\\[\]{}*?])", r"\\\1", path)


def _canon(path: str) -> str:
    """Path component of a path or URI (no scheme/authority), for matching Spark's file names to the listing."""
    m = re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:(//[^/]*)?", path)
    if m and (m.group(1) or path[len(m.group(0)):].startswith("/")):
        path = path[len(m.group(0)):]
    return "/" + path.lstrip("/")


def _quote_col(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def scan_files(spark, files: list[tuple[str, str]], columns: list[tuple[str, Any]]) -> dict[str, dict[str, Any]]:
    """Exact stats of ``columns`` (name, Spark type) in ``files`` ((stats_path, read_path)) with one Spark job.

    Returns ``{stats_path: {"rows": n, "cols": {name: {min, max, nonnull, nan}}}}``
    (min/max as Arrow scalars of the Spark type; NaN excluded) for the files
    Spark read; a corrupt file is skipped by Spark (``ignoreCorruptFiles``)
    and is then absent, or present with fewer rows than its footer says.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField(c, t, True) for c, t in columns])
    reader = spark.read.schema(schema).option("ignoreCorruptFiles", "true")
    df = reader.parquet(*[_escape_glob(r) for _, r in files])
    aggs = [F.count(F.lit(1)).alias("__rows")]
    for i, (c, t) in enumerate(columns):
        col = F.col(_quote_col(c))
        is_float = isinstance(t, (T.FloatType, T.DoubleType))
        v = F.nanvl(col, F.lit(None).cast(t)) if is_float else col
        aggs += [F.min(v).alias(f"mn{i}"), F.max(v).alias(f"mx{i}"), F.count(col).alias(f"nn{i}")]
        if is_float:
            aggs.append(F.sum(F.when(F.isnan(col), F.lit(1)).otherwise(F.lit(0))).cast("long").alias(f"nan{i}"))
    spark.sparkContext.setJobDescription(f"collect_stats: scan {len(files)} files, {len(columns)} columns")
    res = df.groupBy(F.input_file_name().alias("__file")).agg(*aggs).toArrow()
    by_canon = {_canon(s): s for s, _ in files}
    by_canon.update({_canon(r): s for s, r in files})
    out: dict[str, dict[str, Any]] = {}
    names = res["__file"].to_pylist()
    for j, name in enumerate(names):
        stats_path = by_canon.get(_canon(unquote(name))) or by_canon.get(_canon(name))
        if stats_path is None:
            continue
        cols = {}
        for i, (c, t) in enumerate(columns):
            cols[c] = {
                "min": res[f"mn{i}"][j], "max": res[f"mx{i}"][j], "nonnull": res[f"nn{i}"][j].as_py(),
                "nan": res[f"nan{i}"][j].as_py() if f"nan{i}" in res.column_names else None,
            }
        out[stats_path] = {"rows": res["__rows"][j].as_py(), "cols": cols}
    return out


def _scan_value_type(arrow_type: str | None, physical_type: str | None, got: pa.DataType) -> pa.DataType:
    """The Arrow type a scanned bound is stored as: the footer's type (INT96: naive microseconds)."""
    if physical_type == "INT96":
        return pa.timestamp("us")
    if arrow_type:
        try:
            return fst.parse_arrow_type(arrow_type)
        except ValueError:
            pass
    return got


def _convert_scanned(value: pa.Scalar, target: pa.DataType) -> pa.Array:
    arr = pa.array([value.as_py()], value.type) if not isinstance(value, pa.Array) else value
    src = arr.type
    if pa.types.is_timestamp(src) and pa.types.is_timestamp(target):
        raw = arr.view(pa.int64()).view(pa.timestamp(src.unit, target.tz))
        return raw.cast(target) if src.unit != target.unit else raw
    try:
        return arr.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return arr


# --------------------------------------------------------------------------- assembling rows


_FOOTER_TO_STATS = {"column": "column_name", "min": "min_value", "max": "max_value"}


def _footer_rows_to_stats(t: pa.Table, files: dict[str, _File], table_name: str, collected_at: pa.Scalar) -> pa.Table:
    """footer_stats rows -> FILE_STATS_SCHEMA rows (method 'footer'; bounds keys/nums filled later)."""
    n = t.num_rows
    paths = t["path"].to_pylist()
    fobj = [files[p] for p in paths]
    cols: dict[str, Any] = {
        "snapshot_id": pa.array([0] * n, pa.int64()),
        "table_name": pa.array([table_name] * n, pa.string()),
        "path": t["path"],
        "partition": pa.array([f.partition for f in fobj], pa.string()),
        "partition_values": pa.array([list(f.spec.items()) if f.partition else None for f in fobj],
                                     pa.map_(pa.string(), pa.string())),
        "file_size": pa.array([f.size for f in fobj], pa.int64()),
        "file_mtime_ms": pa.array([f.mtime_ms for f in fobj], pa.int64()),
        "file_rows": t["file_rows"],
        "num_row_groups": t["num_row_groups"],
        "created_by": t["created_by"],
        "column_name": t["column"],
        "arrow_type": t["arrow_type"],
        "physical_type": t["physical_type"],
        "min_value": t["min"],
        "max_value": t["max"],
        "null_count": t["null_count"],
        "nan_count": pa.nulls(n, pa.int64()),
        "value_count": t["value_count"],
        "has_stats": t["has_stats"],
        "min_exact": t["min_exact"],
        "max_exact": t["max_exact"],
        "reason": t["reason"],
        "method": pa.array(["footer"] * n, pa.string()),
        "error": pa.nulls(n, pa.string()),
        "collected_at": pa.array([collected_at.as_py()] * n, pa.timestamp("us", tz="UTC")),
    }
    # A column absent from a file reads as null in every engine: all null, fully described.
    absent = pc.fill_null(pc.equal(t["reason"], "column_not_in_file"), False)
    if pc.any(absent).as_py():
        cols["has_stats"] = pc.or_(t["has_stats"], absent)
        cols["null_count"] = pc.if_else(absent, t["file_rows"], t["null_count"])
        cols["value_count"] = pc.if_else(absent, t["file_rows"], t["value_count"])
    return _table(cols)


def _table(cols: dict[str, Any]) -> pa.Table:
    arrays = []
    for f in ss.FILE_STATS_SCHEMA:
        v = cols.get(f.name)
        if v is None:
            n = len(next(iter(cols.values())))
            arrays.append(pa.nulls(n, f.type))
        else:
            arrays.append(v.cast(f.type) if not isinstance(v, list) else pa.array(v, f.type))
    return pa.Table.from_arrays(arrays, schema=ss.FILE_STATS_SCHEMA)


def _norm(t: pa.Table) -> pa.Table:
    """Exactly FILE_STATS_SCHEMA (no file metadata), so tables concatenate."""
    return pa.Table.from_arrays([t[f.name].cast(f.type) for f in ss.FILE_STATS_SCHEMA], schema=ss.FILE_STATS_SCHEMA)


def _rows_from_dicts(rows: list[dict[str, Any]]) -> pa.Table:
    if not rows:
        return ss.empty_file_stats()
    return pa.Table.from_pylist(rows, schema=ss.FILE_STATS_SCHEMA)


def _scan_candidates(t: pa.Table, method: str) -> np.ndarray:
    """Vectorised pre-filter for :func:`_needs_scan` (a superset of the rows it selects)."""
    ok = pc.and_(pc.is_null(t["error"]), pc.is_valid(t["column_name"]))
    reason = pc.fill_null(t["reason"], "")
    structural = pc.is_in(reason, pa.array(["column_not_in_file", "nested_column"]))
    ok = pc.and_(ok, pc.invert(structural))
    if method == "auto":
        missing = pc.invert(t["has_stats"])
        truncated = pc.or_(pc.equal(pc.fill_null(t["min_exact"], True), False),
                           pc.equal(pc.fill_null(t["max_exact"], True), False))
        ok = pc.and_(ok, pc.or_(missing, truncated))
    return np.asarray(ok.to_numpy(zero_copy_only=False), dtype=bool)


def _spark_columns(spark, read_path: str, partition_columns: list[str]) -> list[str]:
    """Top-level column names of a file as Spark reads it (when pyarrow cannot open the store)."""
    skip = {c.lower() for c in partition_columns}
    try:
        return [f.name for f in spark.read.parquet(_escape_glob(read_path)).schema.fields if f.name.lower() not in skip]
    except Exception:  # noqa: BLE001 - the scan will then report the file as failed
        return []


def _needs_scan(row: dict[str, Any], method: str) -> str | None:
    """Why a footer row must be (re)computed by the scan, or None."""
    if row["error"] is not None or row["column_name"] is None:
        return None
    reason = row["reason"] or ""
    if reason in ("column_not_in_file", "nested_column"):
        return None
    if method == "scan":
        return "requested"
    if method != "auto":
        return None
    if reason == _NO_PY_FS:
        return _NO_PY_FS
    if not row["has_stats"]:
        base = reason.split(":", 1)[0]
        return base if base in _SCAN_REASONS else None
    if row["min_exact"] is False or row["max_exact"] is False:
        return "truncated"
    return None


def _fill_bound_columns(t: pa.Table) -> pa.Table:
    if not t.num_rows:
        return t
    b = ss.bound_columns(t["min_value"], t["max_value"], t["arrow_type"])
    for name in ("min_key", "max_key", "min_num", "max_num"):
        t = t.set_column(t.schema.get_field_index(name), ss.FILE_STATS_SCHEMA.field(name), b[name])
    return t


# --------------------------------------------------------------------------- the job


def _resolve_names(requested: list[str], known: list[str]) -> list[str]:
    """Requested names spelled as the table spells them (Spark resolves names case-insensitively)."""
    by_lower: dict[str, str] = {}
    for k in known:
        by_lower.setdefault(k.lower(), k)
    out = []
    for c in requested:
        real = c if c in known else by_lower.get(c.lower(), c)
        if real not in out:
            out.append(real)
    return out


def run_collect(spark, opts: CollectOptions) -> dict[str, Any]:
    """Collect the statistics of ``opts.table`` and commit a snapshot; returns the result dictionary."""
    from airflow_zorder.core.storage.table_formats import ForeignTableFormatError
    from spark_jobs.table import TableError

    started = time.time()
    started_at = stats_store.iso_utc()
    phases: dict[str, float] = {}
    if opts.method not in METHODS:
        raise ValueError(f"unknown method {opts.method!r}; use one of {', '.join(METHODS)}")

    warm = None
    if opts.full or _first_collection(spark, opts):
        warm = _start_warmup(spark)  # every file will be read: start Python workers while listing
    t = time.time()
    try:
        table = resolve_table(spark, opts.table)
    except (TableError, ForeignTableFormatError):
        raise
    except Exception as exc:
        raise TableError(f"cannot resolve table {opts.table!r}: {exc}") from exc
    phases["list_s"] = round(time.time() - t, 3)
    files = {f.path: f for f in table.files}
    pcols_lower = {c.lower() for c in table.partition_columns}
    messages: list[str] = []

    # -- columns
    requested = None
    if opts.columns is not None:
        wanted = [c for c in opts.columns if c.lower() not in pcols_lower]
        skipped = [c for c in opts.columns if c.lower() in pcols_lower]
        if skipped:
            messages.append(f"partition column(s) {', '.join(skipped)}: constant per partition, "
                            "their values are in partition_values")
        if table.schema_columns is not None:
            unknown = [c for c in wanted if c.lower() not in {k.lower() for k in table.schema_columns}]
            if unknown:
                raise StatsCollectionError(f"unknown column {unknown[0]!r}; the table's columns are: "
                                           f"{', '.join(table.schema_columns)}")
            wanted = _resolve_names(wanted, table.schema_columns)
        if not wanted:
            raise StatsCollectionError("no data column to collect: partition columns are constant per partition "
                                       "(their values are in partition_values); name data columns or use 'all'")
        requested = wanted

    # -- stats location
    location = opts.stats_location or stats_store.default_location(table.home)
    io, base = stats_io_for(spark, location)

    # -- previous snapshot
    t = time.time()
    prev = None
    prev_all = False
    if not opts.full:
        try:
            prev = stats_store.load_latest(base, io)
            meta = (prev.schema.metadata or {}).get(ss.RUN_METADATA_KEY)
            prev_all = bool(meta) and json.loads(meta).get("columns_requested") == "all"
        except stats_store.StatsNotFoundError:
            prev = None
    phases["read_previous_s"] = round(time.time() - t, 3)
    if requested is not None and prev is not None and prev.num_rows and table.schema_columns is None:
        requested = _resolve_names(requested, [c for c in pc.unique(prev["column_name"]).to_pylist() if c])

    # -- what to read (vectorised: a million stats rows must not cost a Python loop per row)
    reuse_mask = None
    complete: set[str] = set()  # unchanged files whose previous rows cover every requested column
    gone: list[str] = []
    n_new = n_changed = 0
    if prev is not None and prev.num_rows:
        pfiles = prev.group_by(["path", "file_size", "file_mtime_ms"], use_threads=False).aggregate(
            [("error", "count")])
        ok_paths = []
        seen_prev: dict[str, bool] = {}
        for p, sz, mt, n_err in zip(pfiles["path"].to_pylist(), pfiles["file_size"].to_pylist(),
                                    pfiles["file_mtime_ms"].to_pylist(), pfiles["error_count"].to_pylist()):
            f = files.get(p)
            same = f is not None and (f.size, f.mtime_ms) == (sz, mt) and seen_prev.get(p, True)
            seen_prev[p] = same
            if same and n_err == 0:
                ok_paths.append(p)
        ok_paths = [p for p in ok_paths if seen_prev[p]]
        for p, same in seen_prev.items():
            if p not in files:
                gone.append(p)
            elif not same:
                n_changed += 1
        n_new = sum(1 for p in files if p not in seen_prev)
        ok_mask = pc.is_in(prev["path"], pa.array(ok_paths, pa.string()))
        if requested is None:
            reuse_mask = ok_mask
            complete = set(ok_paths) if prev_all else set()
            if not prev_all:
                reuse_mask = None  # the previous run collected a column subset: read everything again
        else:
            wanted_col = pc.fill_null(pc.is_in(prev["column_name"], pa.array(requested, pa.string())), False)
            reuse_mask = pc.and_(ok_mask, pc.or_(wanted_col, pc.is_null(prev["column_name"])))
            cov = prev.filter(pc.and_(ok_mask, wanted_col)).group_by("path", use_threads=False).aggregate(
                [("column_name", "count_distinct")])
            complete = {p for p, n in zip(cov["path"].to_pylist(), cov["column_name_count_distinct"].to_pylist())
                        if n == len(requested)}
    else:
        n_new = len(files)

    items: list[tuple[str, str, list[str] | None]] = [
        (f.read_path, f.path, None if requested is None else list(requested))
        for f in table.files if f.path not in complete  # one footer read gives every column of a file
    ]

    # -- nothing new, changed or gone: record the run, keep the snapshot (costs the listing + one read)
    if prev is not None and not items and not gone and reuse_mask is not None and (
            not prev.num_rows or pc.all(reuse_mask).as_py()):
        return _noop_run(spark, opts, table, prev, io, base, location, requested, started, started_at,
                         phases, messages)

    read_paths = {p for _, p, _ in items}
    if items or prev is None:
        try:  # fail before the expensive part, not after it
            stats_store.check_writable(base, io)
        except PermissionError as exc:
            raise StatsCollectionError(str(exc)) from exc

    if warm is not None and items:
        warm.join(timeout=120)

    # -- footers
    collected_at = pa.scalar(stats_store.as_datetime(stats_store.iso_utc()), pa.timestamp("us", tz="UTC"))
    t = time.time()
    footer_table, failures = read_footers_distributed(spark, items, opts.parallelism)
    phases["footer_s"] = round(time.time() - t, 3)
    if requested is not None and footer_table.num_rows:
        # spell requested names as the files do, and use one spelling for every row
        found = [c for c in pc.unique(footer_table.filter(pc.invert(pc.fill_null(
            pc.equal(footer_table["reason"], "column_not_in_file"), False)))["column"]).to_pylist()]
        requested = _resolve_names(requested, found)
        canon = {c.lower(): c for c in requested}
        footer_table = footer_table.set_column(
            footer_table.schema.get_field_index("column"), fst.STATS_SCHEMA.field("column"),
            pa.array([canon.get(c.lower(), c) for c in footer_table["column"].to_pylist()], pa.string()))
    new_rows = _footer_rows_to_stats(footer_table, files, table.name, collected_at)

    vanished = set()
    lister = _ListingFS(spark)
    for p, kind, msg in list(failures):
        if kind != "vanished":
            continue
        if lister.exists(p):  # the driver still sees it: the executors' path mapping is wrong, not the table
            failures.remove((p, kind, msg))
            failures.append((p, _NO_PY_FS, f"executors could not find the file: {msg}"))
        else:
            vanished.add(p)
    failed: dict[str, str] = {p: msg for p, kind, msg in failures if kind == "error"}
    no_py = {p: msg for p, kind, msg in failures if kind == _NO_PY_FS}
    if vanished:
        messages.append(f"{len(vanished)} file(s) disappeared during the collection (treated as gone)")
        gone.extend(sorted(vanished))
    if no_py:
        messages.append(f"{len(no_py)} file(s) could not be opened from Python executors "
                        f"({next(iter(no_py.values()))}); " +
                        ("their statistics come from the scan" if opts.method != "footer" else "no statistics"))

    # -- reused rows
    reused = ss.empty_file_stats()
    if prev is not None and reuse_mask is not None:
        reused = prev.filter(reuse_mask)
        if reused.num_rows:
            reused = reused.filter(pc.invert(pc.is_in(reused["path"], pa.array(sorted(read_paths | vanished), pa.string()))))
            reused = reused.set_column(reused.schema.get_field_index("table_name"),
                                       ss.FILE_STATS_SCHEMA.field("table_name"),
                                       pa.repeat(pa.scalar(table.name, pa.string()), reused.num_rows))
    live_paths = [p for p in files if p not in vanished]

    # -- final column set
    if requested is None:
        names = list(dict.fromkeys([c for c in new_rows["column_name"].to_pylist() if c] +
                                   [c for c in reused["column_name"].to_pylist() if c]))
    else:
        names = list(requested)
        if live_paths:
            seen = set()
            for tt in (new_rows, reused):
                m = pc.and_(pc.fill_null(pc.not_equal(tt["reason"], "column_not_in_file"), True),
                            pc.is_valid(tt["column_name"]))
                seen.update(c for c in pc.unique(tt.filter(m)["column_name"]).to_pylist() if c)
            checked = len(new_rows) + len(reused) > 0 and len(failed) + len(no_py) < len(read_paths)
            unknown = [c for c in names if c not in seen]
            if unknown and checked and table.schema_columns is None:
                raise StatsCollectionError(f"unknown column {unknown[0]!r}; the table's columns are: "
                                           f"{', '.join(_table_columns(spark, table, failed) or sorted(seen))}")

    # -- rows needing the scan; failed / unopenable files
    extra_rows: list[dict[str, Any]] = []
    scan_rows: list[dict[str, Any]] = []
    keep_mask = None
    if new_rows.num_rows and opts.method != "footer":
        cand_idx = np.flatnonzero(_scan_candidates(new_rows, opts.method))
        if len(cand_idx):
            keep = np.ones(new_rows.num_rows, dtype=bool)
            for i, d in zip(cand_idx, new_rows.take(pa.array(cand_idx)).to_pylist()):
                why = _needs_scan(d, opts.method)
                if why is not None:
                    keep[i] = False
                    d["_why"] = why
                    scan_rows.append(d)
            keep_mask = pa.array(keep)
    base_rows = new_rows.filter(keep_mask) if keep_mask is not None else new_rows

    def file_row(path: str, column: str | None, **kw: Any) -> dict[str, Any]:
        f = files[path]
        row = {k: None for k in ss.FILE_STATS_SCHEMA.names}
        row.update(snapshot_id=0, table_name=table.name, path=path, partition=f.partition,
                   partition_values=list(f.spec.items()) if f.partition else None, file_size=f.size,
                   file_mtime_ms=f.mtime_ms, column_name=column, has_stats=False, method="footer",
                   collected_at=collected_at.as_py())
        row.update(kw)
        return row

    if no_py and not names and opts.method != "footer":
        names = _spark_columns(spark, files[sorted(no_py)[0]].read_path, table.partition_columns)
    for path in sorted(set(no_py) - vanished):
        cols_for = names if names else [None]
        if opts.method == "footer":
            for c in cols_for:
                extra_rows.append(file_row(path, c, reason=f"{_NO_PY_FS}: {no_py[path]}"[:2000]))
        else:
            for c in cols_for:
                if c is None:
                    continue
                d = file_row(path, c, reason=_NO_PY_FS)
                d["_why"] = _NO_PY_FS
                scan_rows.append(d)

    # -- scan
    t = time.time()
    scanned_files: set[str] = set()
    if scan_rows:
        _scan(spark, scan_rows, files, failed, table, scanned_files)
    phases["scan_s"] = round(time.time() - t, 3)
    for d in scan_rows:
        d.pop("_why", None)
        d.pop("_stype", None)

    # -- failed files: one row per column, no stats, the error named
    for path, msg in sorted(failed.items()):
        for c in (names or [None]):
            extra_rows.append(file_row(path, c, error=msg, reason="unreadable_file"))
    failed_set = set(failed)
    if failed_set:
        base_rows = base_rows.filter(pc.invert(pc.is_in(base_rows["path"], pa.array(sorted(failed_set), pa.string()))))
        scan_rows = [d for d in scan_rows if d["path"] not in failed_set]

    fresh = pa.concat_tables([_norm(base_rows), _rows_from_dicts(scan_rows), _rows_from_dicts(extra_rows)])

    # -- 'all': a column some files lack is all-null in them (schema evolution)
    synthesized = False
    if requested is None and names:
        have: dict[str, set[str]] = defaultdict(set)
        rows_of: dict[str, int] = {}
        for tt in (fresh, reused):
            for p, c, fr in zip(tt["path"].to_pylist(), tt["column_name"].to_pylist(), tt["file_rows"].to_pylist()):
                if c is not None:
                    have[p].add(c)
                if fr is not None:
                    rows_of[p] = fr
        synth = []
        for p in live_paths:
            if p in failed_set:
                continue
            for c in names:
                if c not in have[p]:
                    fr = rows_of.get(p, 0)
                    synth.append(file_row(p, c, has_stats=True, null_count=fr, value_count=fr, file_rows=fr,
                                          reason="column_not_in_file"))
        if synth:
            fresh = pa.concat_tables([fresh, _rows_from_dicts(synth)])
            synthesized = True  # e.g. a new column reached unchanged files: the snapshot differs

    fresh = _norm(_fill_bound_columns(fresh))
    final = pa.concat_tables([fresh, _norm(reused)]) if reused.num_rows else fresh
    final = final.filter(pc.invert(pc.is_in(final["path"], pa.array(sorted(vanished), pa.string())))) if vanished else final

    # -- summary and commit
    fault_point("stats_after_read")
    column_methods, rows_total = _summary(final, names)
    errors = [{"path": p, "error": m} for p, m in sorted(failed.items())]
    changed = bool(read_paths - vanished) or bool(gone) or prev is None or synthesized or (
        reused.num_rows != prev.num_rows)
    run = {
        "run_id": opts.run_id, "table_name": table.name, "table_kind": table.kind, "table_root": table.root,
        "status": "partial" if failed else "ok", "started_at": started_at, "method": opts.method, "columns": names,
        "columns_requested": "all" if opts.columns is None else ",".join(opts.columns),
        "files_total": len(live_paths), "files_read": len(read_paths - vanished),
        "files_reused": int(pc.count_distinct(reused["path"]).as_py()) if reused.num_rows else 0,
        "files_new": n_new, "files_changed": n_changed, "files_gone": len(gone), "files_failed": len(failed),
        "files_scanned": len(scanned_files), "rows_total": rows_total,
        "bytes_total": sum(files[p].size for p in live_paths), "column_methods": column_methods,
        "errors": errors, "gone_paths": sorted(gone),
    }
    return _commit(spark, opts, table, run, final if changed else None, prev, io, base, location, started,
                   phases, messages)


def _summary(final: pa.Table, names: list[str]) -> tuple[list[dict[str, Any]], int]:
    """Rows per column by method (``no_stats`` when has_stats is false), and the live files' total rows."""
    if not final.num_rows:
        return [], 0
    kind = pc.if_else(final["has_stats"], final["method"], pa.scalar("no_stats"))
    g = pa.table({"c": final["column_name"], "k": kind}).group_by(["c", "k"], use_threads=False).aggregate(
        [("k", "count")])
    counts: dict[str, Counter] = defaultdict(Counter)
    for c, k, n in zip(g["c"].to_pylist(), g["k"].to_pylist(), g["k_count"].to_pylist()):
        if c is not None:
            counts[c][k] += n
    column_methods = [{"column_name": c, "footer": counts[c]["footer"], "scan": counts[c]["scan"],
                       "no_stats": counts[c]["no_stats"]} for c in names if c in counts]
    per_file = final.group_by("path", use_threads=False).aggregate([("file_rows", "max")])
    return column_methods, int(pc.sum(per_file["file_rows_max"]).as_py() or 0)


def _noop_run(spark, opts: CollectOptions, table: _Table, prev: pa.Table, io, base: str, location: str,
              requested: list[str] | None, started: float, started_at: str, phases: dict[str, float],
              messages: list[str]) -> dict[str, Any]:
    """Nothing changed since the latest snapshot: record the run only (listing + one stats read + one small write)."""
    names = list(requested) if requested is not None else list(dict.fromkeys(
        c for c in pc.unique(prev["column_name"]).to_pylist() if c is not None))
    if requested is not None:
        prev = prev.filter(pc.fill_null(pc.is_in(prev["column_name"], pa.array(requested, pa.string())), True))
    column_methods, rows_total = _summary(prev, names)
    n = len(table.files)
    phases.update(footer_s=0.0, scan_s=0.0)
    run = {
        "run_id": opts.run_id, "table_name": table.name, "table_kind": table.kind, "table_root": table.root,
        "status": "ok", "started_at": started_at, "method": opts.method, "columns": names,
        "columns_requested": "all" if opts.columns is None else ",".join(opts.columns),
        "files_total": n, "files_read": 0, "files_reused": n, "files_new": 0, "files_changed": 0,
        "files_gone": 0, "files_failed": 0, "files_scanned": 0, "rows_total": rows_total,
        "bytes_total": sum(f.size for f in table.files), "column_methods": column_methods, "errors": [],
        "gone_paths": [],
    }
    return _commit(spark, opts, table, run, None, prev, io, base, location, started, phases, messages)


def _commit(spark, opts: CollectOptions, table: _Table, run: dict[str, Any], final: pa.Table | None,
            prev: pa.Table | None, io, base: str, location: str, started: float, phases: dict[str, float],
            messages: list[str]) -> dict[str, Any]:
    """Write the snapshot (``final``) or only the run record (``final`` None), and build the result."""
    t = time.time()
    run.update(list_s=phases.get("list_s"), footer_s=phases.get("footer_s"), scan_s=phases.get("scan_s"))
    run["collected_at"] = stats_store.iso_utc()
    run["duration_s"] = round(time.time() - started, 3)
    try:
        if final is not None:
            snapshot_id = stats_store.write_snapshot(base, final, run, io, keep_snapshots=opts.keep_snapshots)
        else:
            stats_store.write_run(base, run, io)
            snapshot_id = (prev["snapshot_id"][0].as_py() if prev is not None and prev.num_rows
                           else stats_store.latest_snapshot_id(base, io))
    except stats_store.StatsConflictError:
        raise
    except OSError as exc:
        raise StatsCollectionError(f"cannot write the stats to {location}: {type(exc).__name__}: {exc}") from exc
    phases["write_s"] = round(time.time() - t, 3)
    if opts.stats_table:
        _register_catalog_tables(spark, opts.stats_table, location)
    result = {
        "status": run["status"], "run_id": opts.run_id, "table": opts.table, "kind": table.kind,
        "stats_location": location, "snapshot_id": snapshot_id, "new_snapshot": final is not None,
        "method": opts.method, "columns": run["columns"],
        **{k: run[k] for k in ("files_total", "files_read", "files_reused", "files_new", "files_changed",
                               "files_gone", "files_failed", "files_scanned", "rows_total", "bytes_total")},
        "column_methods": run["column_methods"], "errors": run["errors"], "gone_paths": run["gone_paths"],
        "messages": messages, "phases": phases, "duration_s": round(time.time() - started, 3),
    }
    if opts.stats_table:
        result["stats_table"] = opts.stats_table
    return result


def _table_columns(spark, table: _Table, failed: dict[str, str]) -> list[str]:
    """The columns of a readable file of the table (for error messages): one small footer job."""
    f = next((f for f in reversed(table.files) if f.path not in failed), None)
    if f is None:
        return []
    try:
        t, _ = read_footers_distributed(spark, [(f.read_path, f.path, None)], 1)
        return [c for c in t["column"].to_pylist() if c]
    except Exception:  # noqa: BLE001 - only for the message
        return []


def _scan(spark, scan_rows: list[dict[str, Any]], files: dict[str, _File], failed: dict[str, str],
          table: _Table, scanned_files: set[str]) -> None:
    """Fill ``scan_rows`` in place with exact values computed by Spark; record files that fail."""
    by_file: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for d in scan_rows:
        d["_stype"] = spark_type_for(d["arrow_type"], d["physical_type"])
        if d["_stype"] is None:
            if d["arrow_type"] is None and d["_why"] == _NO_PY_FS:
                d["_stype"] = "infer"
            else:
                d["reason"] = (d["reason"] or "") + f"; scan_unsupported_type:{d['arrow_type']}"
                continue
        by_file[d["path"]].append(d)
    if not by_file:
        return
    infer_types: dict[str, Any] = {}
    if any(d["_stype"] == "infer" for ds in by_file.values() for d in ds):
        # files pyarrow could not open: take the types from Spark's own schema of the table
        sample = [files[p].read_path for p, ds in by_file.items() if any(d["_stype"] == "infer" for d in ds)]
        try:
            sch = spark.read.parquet(*[_escape_glob(p) for p in sample[:1]]).schema
            infer_types = {f.name: f.dataType for f in sch.fields}
        except Exception as exc:  # noqa: BLE001
            for p in sample:
                failed[p] = f"cannot read the file's schema with Spark: {exc}"
        for ds in by_file.values():
            for d in ds:
                if d["_stype"] == "infer":
                    d["_stype"] = infer_types.get(d["column_name"])
    groups: dict[tuple, list[str]] = defaultdict(list)
    for p, ds in by_file.items():
        if p in failed:
            continue
        key = tuple(sorted({(d["column_name"], d["_stype"].simpleString()) for d in ds if d["_stype"] is not None}))
        if key:
            groups[key].append(p)
    for key, paths in groups.items():
        types = {}
        for p in paths:
            for d in by_file[p]:
                if d["_stype"] is not None:
                    types[d["column_name"]] = d["_stype"]
        columns = [(c, types[c]) for c, _ in key]
        try:
            res = scan_files(spark, [(p, files[p].read_path) for p in paths], columns)
        except Exception as exc:  # noqa: BLE001 - the whole group failed: name its files
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            for p in paths:
                failed[p] = f"scan failed: {msg}"[:2000]
            continue
        for p in paths:
            scanned_files.add(p)
            got = res.get(p)
            footer_rows = next((d["file_rows"] for d in by_file[p] if d["file_rows"] is not None), None)
            rows = got["rows"] if got else 0
            if footer_rows is not None and rows != footer_rows:
                failed[p] = (f"scan read {rows} rows but the footer says {footer_rows}: "
                             "the file is corrupt or unreadable by Spark")
                continue
            for d in by_file[p]:
                if d["_stype"] is None:
                    continue
                _apply_scan(d, got["cols"][d["column_name"]] if got else None, rows)


def _apply_scan(d: dict[str, Any], vals: dict[str, Any] | None, rows: int) -> None:
    why = d.get("_why") or "requested"
    d["file_rows"] = rows if d["file_rows"] is None else d["file_rows"]
    d["method"] = "scan"
    d["has_stats"] = True
    d["min_exact"] = d["max_exact"] = True
    d["reason"] = f"scanned:{why}"
    d["value_count"] = rows
    if vals is None:  # no rows
        d.update(min_value=None, max_value=None, null_count=0, min_exact=None, max_exact=None)
        if d["arrow_type"] in ("float", "double"):
            d["nan_count"] = 0
        return
    d["null_count"] = rows - int(vals["nonnull"] or 0)
    d["nan_count"] = vals["nan"]
    lo, hi = vals["min"], vals["max"]
    if not lo.is_valid:
        d.update(min_value=None, max_value=None, min_exact=None, max_exact=None)
        return
    target = _scan_value_type(d["arrow_type"], d["physical_type"], lo.type)
    lo_a = _convert_scanned(lo, target)
    hi_a = _convert_scanned(hi, target)
    if pa.types.is_floating(lo_a.type):
        lv, hv = lo_a[0].as_py(), hi_a[0].as_py()
        if lv == 0:
            lo_a = pa.array([-0.0], lo_a.type)  # the footer convention: zero min -0.0, zero max +0.0
        if hv == 0:
            hi_a = pa.array([0.0], hi_a.type)
    d["arrow_type"] = str(lo_a.type) if d["physical_type"] != "INT96" else "timestamp[us]"
    d["min_value"] = fst.bounds_to_text(lo_a)[0].as_py()
    d["max_value"] = fst.bounds_to_text(hi_a)[0].as_py()


def _register_catalog_tables(spark, name: str, location: str) -> None:
    """Expose the stats as catalog tables: ``name`` (file stats, every snapshot) and ``name_runs``."""
    files_loc = stats_store._join(location, stats_store.FILES_DIR)
    runs_loc = stats_store._join(location, stats_store.RUNS_DIR)
    q = ".".join(f"`{p.strip('`')}`" for p in name.split("."))
    q_runs = ".".join(f"`{p.strip('`')}`" for p in (name + "_runs").split("."))
    lit = lambda s: "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"  # noqa: E731
    spark.sql(f"CREATE TABLE IF NOT EXISTS {q} USING parquet LOCATION {lit(files_loc)}")
    spark.sql(f"REFRESH TABLE {q}")
    spark.sql(f"CREATE TABLE IF NOT EXISTS {q_runs} USING json LOCATION {lit(runs_loc)}")
    spark.sql(f"REFRESH TABLE {q_runs}")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: run, print the JSON result, write it to --result-json.

    Exit codes: 0 ok; 1 failed (nothing committed); 2 committed but some
    files could not be read (0 with --allow-errors).
    """
    from spark_jobs.table import TableError

    opts, result_path, allow_errors = parse_args(argv)

    def work(spark) -> tuple[dict, int]:
        result = run_collect(spark, opts)
        if result["status"] != "partial":
            return result, 0
        _log(f"{result['files_failed']} file(s) could not be read: " +
             "; ".join(f"{e['path']}: {e['error']}" for e in result["errors"][:5]))
        return result, 0 if allow_errors else 2

    return run_job("airflow-zorder-collect-stats", opts.table, opts.run_id, result_path, work,
                   (StatsCollectionError, TableError, stats_store.StatsConflictError, ValueError, OSError), _log)


if __name__ == "__main__":
    sys.exit(main())
