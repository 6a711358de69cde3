"""The stats table: its versioned schema, and the typed / order-preserving bound columns.

The project's ONE definition of a stats row: what the footer reader
(:mod:`~airflow_zorder.core.stats.footer_stats`), the Delta log reader
(:mod:`~airflow_zorder.core.delta.delta_log`) and the statistics collector
(``spark_jobs/collect_stats.py``) emit, what the store writes, and what the
metrics, the pruning evaluator, the policy, the hook and the UI read -- one
record per on-disk concept, shared by writer and reader.  Airflow-free and Spark-free (pyarrow + numpy).  Storage layout,
atomic snapshots and the readers live in :mod:`airflow_zorder.core.stats.stats_store`.

Three record kinds, all easy to read from Spark SQL, DuckDB and pyarrow (no
column is named with an SQL reserved word such as ``table`` or ``column``):

:data:`FILE_STATS_SCHEMA` -- one row per (data file, column) of a snapshot
    (Parquet; ``files/snapshot-<id>.parquet``).  A snapshot is complete: it
    holds every live data file of the table at collection time (rows of
    unchanged files are carried forward from the previous snapshot with their
    original ``collected_at`` and ``method``), so "the latest stats" is one
    file.  Files that disappeared are not in it (the run record lists them).
:data:`RUNS_SCHEMA` -- one record per collection run (JSON line;
    ``runs/run-<time>-<run id>.json``): counts of files read / reused / gone /
    failed, the methods used per column, errors.  The history of runs is kept.
:data:`EVENTS_SCHEMA` -- one record per table event, e.g. a clustering run
    (JSON line; ``events/event-<time>-<run id>.json``).

Bounds: three representations per row
-------------------------------------
``min_value`` / ``max_value`` (string)
    Lossless text, the encoding of :mod:`~airflow_zorder.core.stats.value_order`
    (integers in decimal digits, doubles in shortest round-trip form, decimals
    with the column's scale, ISO dates / timestamps with the unit's digits and
    a ``Z`` for UTC-adjusted ones, strings as is, binary as lowercase hex).
    ``arrow_type`` names the type; exact typed values come back with
    ``value_order.decode_bounds(text, value_order.parse_arrow_type(t))``, or
    for one column with :func:`column_bounds`.  In SQL, ``CAST(min_value AS
    DECIMAL(15,2))`` / ``DATE`` / ``TIMESTAMP`` / ``BIGINT`` / ``DOUBLE`` is
    exact too (``unhex`` for binary).
``min_key`` / ``max_key`` (binary)
    An order-preserving byte key: for two bounds of the same column,
    byte-wise (memcmp) order equals value order -- exactly, for every atomic
    type: integers of any width and signedness (uint64 included), decimals of
    any precision and scale (compared by value, so files written with
    different scales still compare right), doubles (-0.0 == 0.0, NaN above
    +inf), timestamps of any unit (compared at nanosecond resolution), dates,
    times, booleans, full strings (UTF-8 bytes, no truncation) and binary.
    Spark, DuckDB and pyarrow all compare binary values byte-wise, so a
    pruning filter is ``min_key <= k AND k <= max_key`` with
    ``k = value_order.order_key(value, arrow_type)`` (encodings there).  Keys of different columns are not
    comparable with each other.
``min_num`` / ``max_num`` (double)
    Lossy numeric view for charts and quick looks only -- never for pruning:
    numbers as doubles, booleans 0/1, dates in days and timestamps in seconds
    since the Unix epoch, times in seconds since midnight; null for strings
    and binary.

Other row semantics (see :data:`FILE_STATS_SCHEMA` field comments):
``has_stats`` false = unknown bounds (never prune the file); ``has_stats``
true with null bounds = every value is null (or the file has no rows).
Floating point bounds exclude NaN for both methods (the Parquet rule);
``nan_count`` says how many NaN there are when known (the scan counts them;
footers cannot, so it is null for footer rows).  Rows read straight from
footers (not through the collector) leave the keys and numeric views null.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.stats import value_order

__all__ = [
    "SCHEMA_VERSION",
    "SCHEMA_VERSION_KEY",
    "RUN_METADATA_KEY",
    "FILE_STATS_SCHEMA",
    "RUNS_SCHEMA",
    "EVENTS_SCHEMA",
    "METHODS",
    "BOUNDS_FIELDS",
    "empty_file_stats",
    "file_stats_table",
    "replace_columns",
    "column_rows",
    "split_by_column",
    "bound_columns",
    "typed_bounds",
    "column_bounds",
]

#: Bumped whenever a field is added, removed or changes meaning.  Written into
#: every snapshot file's Parquet key-value metadata and into every run record.
SCHEMA_VERSION = 1
SCHEMA_VERSION_KEY = b"airflow_zorder.stats.schema_version"
#: The run record (JSON) of the run that wrote a snapshot, also kept in the
#: snapshot file's metadata so a lost ``runs/`` record can be rebuilt.
RUN_METADATA_KEY = b"airflow_zorder.stats.run"

#: How a row's values were obtained.
METHODS = ("footer", "scan")

FILE_STATS_SCHEMA = pa.schema(
    [
        # -- identity
        pa.field("snapshot_id", pa.int64(), nullable=False),  # 1, 2, 3, ... per stats location
        pa.field("table_name", pa.string(), nullable=False),  # the table as named to the collector
        # -- the data file
        pa.field("path", pa.string(), nullable=False),  # as listed (plain path or URI)
        pa.field("partition", pa.string()),  # "k=v/k2=v2" as on disk; null when unpartitioned
        pa.field("partition_values", pa.map_(pa.string(), pa.string())),  # unescaped; null when unpartitioned
        pa.field("file_size", pa.int64()),  # bytes, from the listing
        pa.field("file_mtime_ms", pa.int64()),  # modification time (ms since epoch), from the listing
        pa.field("file_rows", pa.int64()),
        pa.field("num_row_groups", pa.int32()),
        pa.field("created_by", pa.string()),  # the writer, from the footer
        # -- the column (null only for the single placeholder row of a file with no column rows)
        pa.field("column_name", pa.string()),
        pa.field("arrow_type", pa.string()),  # str() of the Arrow logical type of the bounds
        pa.field("physical_type", pa.string()),  # Parquet physical type (INT32, BYTE_ARRAY, INT96, ...)
        pa.field("min_value", pa.string()),  # lossless text (module doc); null = no bound
        pa.field("max_value", pa.string()),
        pa.field("min_key", pa.binary()),  # order-preserving key (module doc)
        pa.field("max_key", pa.binary()),
        pa.field("min_num", pa.float64()),  # lossy, charts only
        pa.field("max_num", pa.float64()),
        pa.field("null_count", pa.int64()),  # null = unknown
        pa.field("nan_count", pa.int64()),  # floats: NaN values (not in min/max); null = unknown
        pa.field("value_count", pa.int64()),  # values incl. nulls (= file_rows for flat columns)
        pa.field("has_stats", pa.bool_(), nullable=False),  # false: bounds unknown, never prune
        pa.field("min_exact", pa.bool_()),  # true exact; false truncated (still a bound); null unknown
        pa.field("max_exact", pa.bool_()),
        pa.field("reason", pa.string()),  # why has_stats is false, or a note (e.g. column_not_in_file)
        # -- provenance
        pa.field(
            "method", pa.string()
        ),  # 'footer' | 'scan' | 'delta_log' (core.delta.delta_log: read from a Delta log)
        pa.field("error", pa.string()),  # the file could not be read (retried next run); null = fine
        pa.field("collected_at", pa.timestamp("us", tz="UTC"), nullable=False),  # when this row was read
    ],
    metadata={SCHEMA_VERSION_KEY: str(SCHEMA_VERSION).encode()},
)

_COLUMN_METHODS = pa.struct(
    [("column_name", pa.string()), ("footer", pa.int64()), ("scan", pa.int64()), ("no_stats", pa.int64())]
)
_ERRORS = pa.list_(pa.struct([("path", pa.string()), ("error", pa.string())]))

RUNS_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string()),
        pa.field("schema_version", pa.int32()),
        pa.field("table_name", pa.string()),
        pa.field("table_kind", pa.string()),  # 'path' | 'catalog'
        pa.field("table_root", pa.string()),
        pa.field("status", pa.string()),  # 'ok' | 'partial' (some files failed; their rows carry `error`)
        pa.field("snapshot_id", pa.int64()),  # the latest snapshot after this run
        pa.field("new_snapshot", pa.bool_()),  # false: nothing changed, the previous snapshot stands
        pa.field("previous_snapshot_id", pa.int64()),
        pa.field("started_at", pa.timestamp("us", tz="UTC")),
        pa.field("collected_at", pa.timestamp("us", tz="UTC")),  # when the run committed
        pa.field("duration_s", pa.float64()),
        pa.field("method", pa.string()),  # requested: 'auto' | 'footer' | 'scan'
        pa.field("columns", pa.list_(pa.string())),  # collected columns (resolved)
        pa.field("columns_requested", pa.string()),  # 'all' or the comma-separated names given
        pa.field("files_total", pa.int64()),  # live files in the snapshot
        pa.field("files_read", pa.int64()),  # read this run (new, changed, or missing columns)
        pa.field("files_reused", pa.int64()),  # carried forward unchanged
        pa.field("files_new", pa.int64()),
        pa.field("files_changed", pa.int64()),
        pa.field("files_gone", pa.int64()),
        pa.field("files_failed", pa.int64()),
        pa.field("files_scanned", pa.int64()),  # files the scan read (some columns)
        pa.field("rows_total", pa.int64()),
        pa.field("bytes_total", pa.int64()),
        pa.field("column_methods", pa.list_(_COLUMN_METHODS)),  # per column: rows by method
        pa.field("errors", _ERRORS),
        pa.field("gone_paths", pa.list_(pa.string())),
        pa.field("list_s", pa.float64()),
        pa.field("footer_s", pa.float64()),
        pa.field("scan_s", pa.float64()),
        pa.field("write_s", pa.float64()),
    ],
    metadata={SCHEMA_VERSION_KEY: str(SCHEMA_VERSION).encode()},
)


def metadata_run_record(
    run_id: str,
    table_name: str,
    table_kind: str,
    table_root: str,
    version: int | None,
    method: str,
    read_at: dt.datetime | None,
    committed_at: dt.datetime | None,
) -> dict[str, Any]:
    """A collection-run-like record (:data:`RUNS_SCHEMA` keys) for statistics a table format's own metadata gave at
    ``version`` (a Delta log, Iceberg manifests, Hudi's base-file footers): ``collected_at`` = when it was read (the
    statistics are current as of then), ``committed_at`` = when that version was committed."""
    iso = lambda t: None if t is None else t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # noqa: E731
    return {
        "run_id": run_id,
        "schema_version": SCHEMA_VERSION,
        "table_name": table_name,
        "table_kind": table_kind,
        "table_root": table_root,
        "status": "ok",
        "snapshot_id": version,
        "new_snapshot": False,
        "previous_snapshot_id": version,
        "method": method,
        "collected_at": iso(read_at),
        "committed_at": iso(committed_at),
    }


EVENTS_SCHEMA = pa.schema(
    [
        pa.field("kind", pa.string()),  # 'cluster'
        pa.field("run_id", pa.string()),
        pa.field("schema_version", pa.int32()),
        pa.field("table_name", pa.string()),
        pa.field("at", pa.timestamp("us", tz="UTC")),  # when the event finished
        pa.field("status", pa.string()),  # e.g. 'clustered' | 'noop'
        pa.field("columns", pa.list_(pa.string())),
        pa.field("curve", pa.string()),
        pa.field("partitions", pa.list_(pa.string())),  # partitions rewritten ('<whole table>' if unpartitioned)
        pa.field("files_before", pa.int64()),
        pa.field("files_after", pa.int64()),
        pa.field("rows_before", pa.int64()),
        pa.field("rows_after", pa.int64()),
        pa.field("bytes_before", pa.int64()),
        pa.field("bytes_after", pa.int64()),
        pa.field("duration_s", pa.float64()),
        pa.field("details", pa.string()),  # JSON text with anything else worth keeping
    ],
    metadata={SCHEMA_VERSION_KEY: str(SCHEMA_VERSION).encode()},
)


def empty_file_stats() -> pa.Table:
    """A zero-row table with :data:`FILE_STATS_SCHEMA`."""
    return FILE_STATS_SCHEMA.empty_table()


def file_stats_table(columns: Mapping[str, Any], num_rows: int) -> pa.Table:
    """:data:`FILE_STATS_SCHEMA` rows from ``{field: Arrow array or list}``; fields not given are null."""
    arrays = []
    for f in FILE_STATS_SCHEMA:
        v = columns.get(f.name)
        if v is None:
            arrays.append(pa.nulls(num_rows, f.type))
        elif isinstance(v, (pa.Array, pa.ChunkedArray)):
            arrays.append(v.cast(f.type))
        else:
            arrays.append(pa.array(v, f.type))
    return pa.Table.from_arrays(arrays, schema=FILE_STATS_SCHEMA)


def replace_columns(rows: pa.Table, values: Mapping[str, Any]) -> pa.Table:
    """``rows`` with the named fields replaced by ``{field: Arrow array or list}`` (cast to the schema's types)."""
    for name, v in values.items():
        f = FILE_STATS_SCHEMA.field(name)
        arr = v.cast(f.type) if isinstance(v, (pa.Array, pa.ChunkedArray)) else pa.array(v, f.type)
        rows = rows.set_column(rows.schema.get_field_index(name), f, arr)
    return rows


def column_rows(stats: pa.Table) -> pa.Table:
    """The rows that describe a column: without the placeholder row (null ``column_name``) of a file that has none."""
    if stats["column_name"].null_count:
        return stats.filter(pc.is_valid(stats["column_name"]))
    return stats


#: The fields typed bounds are read from (:func:`typed_bounds`).
BOUNDS_FIELDS = ("path", "column_name", "arrow_type", "min_value", "max_value", "has_stats", "min_exact", "max_exact")


def split_by_column(stats: pa.Table, extra: Sequence[str] = ()) -> dict[str, pa.Table]:
    """``{column name: its rows}`` with :data:`BOUNDS_FIELDS` plus ``extra`` (one sort and slices, not one filter per column)."""
    stats = column_rows(stats)
    wanted = [c for c in dict.fromkeys([*BOUNDS_FIELDS, *extra]) if c in stats.column_names]
    t = stats.select(wanted)
    if t.num_rows == 0:
        return {}
    enc = pc.dictionary_encode(t["column_name"]).combine_chunks()
    codes = enc.indices.to_numpy(zero_copy_only=False)
    names = enc.dictionary.to_pylist()
    order = np.argsort(codes, kind="stable")
    t = t.take(pa.array(order))
    bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
    return {names[i]: t.slice(int(bounds[i]), int(bounds[i + 1] - bounds[i])) for i in range(len(names))}


def bound_columns(
    min_text: pa.Array | pa.ChunkedArray,
    max_text: pa.Array | pa.ChunkedArray,
    arrow_types: pa.Array | pa.ChunkedArray,
) -> dict[str, pa.Array]:
    """``min_key``, ``max_key``, ``min_num``, ``max_num`` for rows given as text bounds + type strings.

    Rows are grouped by ``arrow_type`` and each group is decoded once with
    :func:`value_order.decode_bounds`; rows without a type (or with an
    undecodable one) get nulls.
    """

    def flat(a: pa.Array | pa.ChunkedArray) -> pa.Array:
        return a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a

    lo_t, hi_t, ty = flat(min_text), flat(max_text), flat(arrow_types)
    n = len(lo_t)
    out_keys: dict[str, list] = {"min_key": [None] * n, "max_key": [None] * n}
    out_nums = {"min_num": np.full(n, np.nan), "max_num": np.full(n, np.nan)}
    num_valid = {"min_num": np.zeros(n, dtype=bool), "max_num": np.zeros(n, dtype=bool)}
    if n == 0:
        return {
            "min_key": pa.array([], pa.binary()),
            "max_key": pa.array([], pa.binary()),
            "min_num": pa.array([], pa.float64()),
            "max_num": pa.array([], pa.float64()),
        }
    has_bound = np.asarray(pc.or_(pc.is_valid(lo_t), pc.is_valid(hi_t)).to_numpy(zero_copy_only=False), dtype=bool)
    if not has_bound.any():
        pass
    else:
        enc = pc.dictionary_encode(ty, null_encoding="mask")
        codes = enc.indices.to_numpy(zero_copy_only=False)
        names = enc.dictionary.to_pylist()
        codes = np.where(np.asarray(pc.is_valid(enc.indices).to_numpy(zero_copy_only=False), dtype=bool), codes, -1)
        for code, name in enumerate(names):
            idx = np.flatnonzero((codes == code) & has_bound)
            if not len(idx):
                continue
            try:
                t = value_order.parse_arrow_type(name)
            except ValueError:
                continue
            take = pa.array(idx)
            for side, text in (("min", lo_t), ("max", hi_t)):
                vals = value_order.decode_bounds(text.take(take), t)
                keys = value_order.order_keys(vals).to_pylist()
                kl = out_keys[f"{side}_key"]
                for j, i in enumerate(idx):
                    kl[i] = keys[j]
                nums = value_order.numeric_values(vals)
                nv = np.asarray(pc.is_valid(nums).to_numpy(zero_copy_only=False), dtype=bool)
                out_nums[f"{side}_num"][idx] = nums.fill_null(0.0).to_numpy(zero_copy_only=False)
                num_valid[f"{side}_num"][idx] = nv
    res: dict[str, pa.Array] = {
        "min_key": pa.array(out_keys["min_key"], pa.binary()),
        "max_key": pa.array(out_keys["max_key"], pa.binary()),
    }
    for k in ("min_num", "max_num"):
        res[k] = pa.array(out_nums[k], pa.float64(), mask=~num_valid[k])
    return res


# --------------------------------------------------------------------------
# Typed bounds
# --------------------------------------------------------------------------

_FAMILIES = (
    pa.types.is_integer,
    pa.types.is_floating,
    pa.types.is_decimal,
    pa.types.is_timestamp,
    pa.types.is_date,
    pa.types.is_time,
)


def _common_type(column: str | None, types: list[pa.DataType]) -> pa.DataType:
    """The type all files' bounds of ``column`` are cast to, without losing exactness.

    Widening inside one family is allowed (int32 + int64, float + double,
    decimal(5,2) + decimal(15,3), timestamp[us] + timestamp[ns]); mixing
    families (e.g. decimal and double) raises ``TypeError`` rather than
    producing rounded bounds.
    """
    distinct = list(dict.fromkeys(types))
    if len(distinct) == 1:
        return distinct[0]
    for fam in _FAMILIES:
        if all(fam(t) for t in distinct):
            if fam is pa.types.is_timestamp and len({t.tz for t in distinct}) > 1:
                break
            return (
                pa.unify_schemas([pa.schema([pa.field("x", t)]) for t in distinct], promote_options="permissive")
                .field("x")
                .type
            )
    raise TypeError(f"column {column!r} has incompatible types across files: {[str(t) for t in distinct]}")


def typed_bounds(rows: pa.Table, *, exact_only: bool = False) -> tuple[pa.Array, pa.Array, np.ndarray]:
    """Typed ``(mins, maxs, has_stats)`` of rows that all describe one column (see :func:`column_bounds`).

    The common case (one bound type) is one vectorised decode; files that
    disagree on the type are decoded per type and unified.
    """
    n = rows.num_rows
    has = rows["has_stats"].to_numpy(zero_copy_only=False).astype(bool, copy=True)
    distinct = pc.unique(rows["arrow_type"]).to_pylist()
    names = [s for s in distinct if s is not None]
    if not names:
        return pa.nulls(n, pa.null()), pa.nulls(n, pa.null()), np.zeros(n, dtype=bool)
    column = rows["column_name"][0].as_py() if "column_name" in rows.column_names else None
    types = {s: value_order.parse_arrow_type(s) for s in names}
    target = _common_type(column, list(types.values()))
    mins_text = rows["min_value"].combine_chunks()
    maxs_text = rows["max_value"].combine_chunks()
    if len(distinct) == 1:
        mins = value_order.decode_bounds(mins_text, target)
        maxs = value_order.decode_bounds(maxs_text, target)
    else:
        mins_l: list = [None] * n
        maxs_l: list = [None] * n
        type_col = rows["arrow_type"]
        for s, ty in types.items():
            idx = np.flatnonzero(pc.fill_null(pc.equal(type_col, s), False).to_numpy(zero_copy_only=False))
            take = pa.array(idx)
            lo = value_order.decode_bounds(mins_text.take(take), ty).cast(target).to_pylist()
            hi = value_order.decode_bounds(maxs_text.take(take), ty).cast(target).to_pylist()
            for j, i in enumerate(idx):
                mins_l[i] = lo[j]
                maxs_l[i] = hi[j]
        mins = pa.array(mins_l, target)
        maxs = pa.array(maxs_l, target)
    if exact_only:
        ex = pc.and_(pc.fill_null(rows["min_exact"], False), pc.fill_null(rows["max_exact"], False)).to_numpy(
            zero_copy_only=False
        )
        bounded = pc.is_valid(mins).to_numpy(zero_copy_only=False)
        drop = has & bounded & ~ex
        if drop.any():
            has = has & ~drop
            keep = pa.array(~drop)
            mins = pc.if_else(keep, mins, pa.scalar(None, target))
            maxs = pc.if_else(keep, maxs, pa.scalar(None, target))
    return mins, maxs, has


def column_bounds(stats: pa.Table, column: str, *, exact_only: bool = False) -> tuple[pa.Array, pa.Array, np.ndarray]:
    """Typed ``(mins, maxs, has_stats)`` of ``column``, one entry per file row of ``stats``.

    ``mins``/``maxs`` are Arrow arrays of the column's logical type (unified
    across files with Arrow's permissive promotion when files disagree, e.g.
    int32 and int64 -> int64); null where stats are missing or the file's
    values are all null.  ``has_stats`` is a numpy bool array: false =
    unknown bounds, the file may contain anything.  ``exact_only=True``
    treats bounds not known to be exact (``min_exact``/``max_exact`` false
    *or* null, i.e. truncated or unknown) as missing; by default they are
    kept: truncated bounds are still bounds.
    """
    return typed_bounds(stats.filter(pc.equal(stats["column_name"], column)), exact_only=exact_only)
