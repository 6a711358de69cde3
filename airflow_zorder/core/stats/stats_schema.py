"""The stats table: its versioned schema, and the typed / order-preserving bound columns.

The project's ONE definition of what the statistics collector
(``spark_jobs/collect_stats.py``) writes and what the sensor, the UI and the
metrics read.  Airflow-free and Spark-free (pyarrow + numpy).  Storage layout,
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
    Lossless text, the encoding of :mod:`~airflow_zorder.core.stats.footer_stats`
    (integers in decimal digits, doubles in shortest round-trip form, decimals
    with the column's scale, ISO dates / timestamps with the unit's digits and
    a ``Z`` for UTC-adjusted ones, strings as is, binary as lowercase hex).
    ``arrow_type`` names the type; exact typed values come back with
    ``footer_stats.decode_bounds(text, footer_stats.parse_arrow_type(t))``, or
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
    ``k = order_key(value, arrow_type)``.  Keys of different columns are not
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
footers cannot, so it is null for footer rows).
"""

from __future__ import annotations

import decimal
import struct
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "SCHEMA_VERSION",
    "SCHEMA_VERSION_KEY",
    "RUN_METADATA_KEY",
    "FILE_STATS_SCHEMA",
    "RUNS_SCHEMA",
    "EVENTS_SCHEMA",
    "METHODS",
    "order_key",
    "order_keys",
    "numeric_values",
    "bound_columns",
    "column_bounds",
    "to_footer_stats",
    "empty_file_stats",
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
        pa.field("method", pa.string()),  # 'footer' | 'scan' | 'delta_log' (core.stats.delta_log: read from a Delta log)
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


# --------------------------------------------------------------------------
# Order-preserving keys
# --------------------------------------------------------------------------
# Encodings (big-endian throughout; keys are only compared within one column):
#   integers, dates (days), times (ns since midnight): 9 bytes = v + 2**63 as an
#       unsigned 72-bit number (covers int64 and uint64 alike)
#   floats: 8 bytes, the IEEE-754 double with the sign bit flipped for positives
#       and all bits flipped for negatives; -0.0 keyed as +0.0, NaN as the
#       canonical quiet NaN (above +inf)
#   timestamps (any unit, any zone): 8 bytes of the whole seconds (int64, sign
#       bit flipped) + 4 bytes of nanoseconds within the second
#   decimals: scale-independent variable-length key: 0x80 for zero; else a sign
#       byte (0x40 negative, 0xC0 positive), then the decimal exponent E (value
#       = 0.d1d2d3... x 10**E) as 4 bytes (E + 2**31), the significant digits as
#       ASCII without trailing zeros, and a 0x00 terminator; for negatives every
#       byte after the sign byte is inverted
#   booleans: 1 byte; strings: their UTF-8 bytes; binary: the bytes

_SIGN64 = np.uint64(1 << 63)


def _int_key_np(v: np.ndarray, unsigned: bool) -> np.ndarray:
    """(n, 9) uint8 keys of int64 / uint64 values."""
    n = len(v)
    out = np.zeros((n, 9), dtype=np.uint8)
    if unsigned:
        u = v.astype(np.uint64, copy=False)
        out[:, 0] = (u >> np.uint64(63)).astype(np.uint8)
        low = u ^ _SIGN64
    else:
        low = v.astype(np.int64, copy=False).view(np.uint64) ^ _SIGN64
    out[:, 1:] = low.astype(">u8").view(np.uint8).reshape(n, 8)
    return out


def _float_key_np(v: np.ndarray) -> np.ndarray:
    f = v.astype(np.float64, copy=True)
    f[f == 0] = 0.0  # -0.0 -> +0.0
    f[np.isnan(f)] = np.nan  # canonical quiet NaN (positive)
    bits = f.view(np.uint64)
    neg = (bits & _SIGN64) != 0
    key = np.where(neg, ~bits, bits | _SIGN64)
    return key.astype(">u8").view(np.uint8).reshape(len(v), 8)


_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def _timestamp_key_np(v: np.ndarray, unit: str) -> np.ndarray:
    per = _PER_SECOND[unit]
    secs, frac = np.divmod(v.astype(np.int64), per)
    nanos = (frac * (1_000_000_000 // per)).astype(np.uint32)
    out = np.zeros((len(v), 12), dtype=np.uint8)
    out[:, :8] = (secs.view(np.uint64) ^ _SIGN64).astype(">u8").view(np.uint8).reshape(len(v), 8)
    out[:, 8:] = nanos.astype(">u4").view(np.uint8).reshape(len(v), 4)
    return out


def _decimal_key(d: decimal.Decimal) -> bytes:
    if d.is_zero():
        return b"\x80"
    sign, digits, exp = d.as_tuple()
    ds = "".join(map(str, digits)).lstrip("0")
    stripped = ds.rstrip("0")
    exp += len(ds) - len(stripped)
    e = len(stripped) + exp
    body = struct.pack(">I", e + (1 << 31)) + stripped.encode("ascii") + b"\x00"
    if sign:
        return b"\x40" + bytes(255 - b for b in body)
    return b"\xc0" + body


def _rows_to_binary(mat: np.ndarray, valid: np.ndarray) -> pa.Array:
    n, w = mat.shape
    data = pa.py_buffer(np.ascontiguousarray(mat).tobytes())
    offsets = pa.py_buffer((np.arange(n + 1, dtype=np.int32) * w).tobytes())
    validity = None
    if not valid.all():
        validity = pa.array(valid).buffers()[1]
    return pa.Array.from_buffers(pa.binary(), n, [validity, offsets, data], null_count=int((~valid).sum()))


def _valid_np(arr: pa.Array) -> np.ndarray:
    return np.asarray(pc.is_valid(arr).to_numpy(zero_copy_only=False), dtype=bool)


def order_keys(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Order-preserving binary keys of an Arrow array of bound values (null stays null).

    See the module docstring for the encodings.  Raises ``TypeError`` for
    types without a total order (nested, null, dictionary, ...).
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    t = values.type
    n = len(values)
    valid = _valid_np(values)
    if n == 0:
        return pa.array([], pa.binary())
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return values.cast(pa.string()).cast(pa.binary())
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t) or pa.types.is_fixed_size_binary(t):
        return values.cast(pa.binary())
    if pa.types.is_boolean(t):
        b = np.asarray(values.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.uint8).reshape(n, 1)
        return _rows_to_binary(b, valid)
    if pa.types.is_integer(t):
        filled = values.fill_null(0).to_numpy(zero_copy_only=False)
        return _rows_to_binary(_int_key_np(filled, pa.types.is_unsigned_integer(t)), valid)
    if pa.types.is_floating(t):
        filled = values.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False)
        return _rows_to_binary(_float_key_np(filled), valid)
    if pa.types.is_date32(t):
        filled = values.view(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        return _rows_to_binary(_int_key_np(filled, False), valid)
    if pa.types.is_date64(t):
        ms = values.view(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        return _rows_to_binary(_int_key_np(np.floor_divide(ms, 86_400_000), False), valid)
    if pa.types.is_time32(t) or pa.types.is_time64(t):
        raw = values.view(pa.int32() if pa.types.is_time32(t) else pa.int64()).fill_null(0)
        ns = raw.to_numpy(zero_copy_only=False).astype(np.int64) * (1_000_000_000 // _PER_SECOND[t.unit])
        return _rows_to_binary(_int_key_np(ns, False), valid)
    if pa.types.is_timestamp(t):
        raw = values.view(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        return _rows_to_binary(_timestamp_key_np(raw, t.unit), valid)
    if pa.types.is_decimal(t):
        return pa.array([None if v is None else _decimal_key(v) for v in values.to_pylist()], pa.binary())
    raise TypeError(f"no order key for Arrow type {t}")


def order_key(value: Any, arrow_type: str | pa.DataType) -> bytes | None:
    """The key of one value (e.g. a query literal) as it would be stored for a column of ``arrow_type``.

    ``arrow_type`` is the stats row's ``arrow_type`` string (or an Arrow
    type).  ``None`` gives ``None``.  Python values are converted with Arrow
    (``int``, ``float``, ``Decimal``, ``str``, ``bytes``, ``date``,
    ``datetime``, ``time``, ``bool``); a text in the stats encoding is
    accepted too (decoded with :func:`footer_stats.decode_bounds`).
    """
    from airflow_zorder.core.stats import footer_stats

    t = footer_stats.parse_arrow_type(arrow_type) if isinstance(arrow_type, str) else arrow_type
    if value is None:
        return None
    if pa.types.is_decimal(t):  # the key is scale-independent: any exact decimal value will do
        d = value if isinstance(value, decimal.Decimal) else decimal.Decimal(str(value))
        if not d.is_finite():
            raise ValueError(f"not a finite decimal: {value!r}")
        return _decimal_key(d)
    if isinstance(value, str) and not pa.types.is_string(t):
        arr = footer_stats.decode_bounds(pa.array([value], pa.string()), t)
    else:
        arr = pa.array([value], t)
    return order_keys(arr)[0].as_py()


# --------------------------------------------------------------------------
# Lossy numeric view
# --------------------------------------------------------------------------


def numeric_values(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """float64 view of bound values for charts (see module doc); null for strings and binary."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    t = values.type
    n = len(values)

    def f64(a: pa.Array) -> pa.Array:
        return a.cast(pa.float64(), safe=False)  # large integers round: this view is lossy by design

    if pa.types.is_decimal(t):
        return pa.array([None if v is None else float(v) for v in values.to_pylist()], pa.float64())
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return f64(values)
    if pa.types.is_boolean(t):
        return f64(values.cast(pa.int8()))
    if pa.types.is_date32(t):
        return f64(values.view(pa.int32()))
    if pa.types.is_date64(t):
        return pc.divide(f64(values.view(pa.int64())), 86_400_000.0)
    if pa.types.is_timestamp(t) or pa.types.is_time32(t) or pa.types.is_time64(t):
        raw = f64(values.view(pa.int32() if pa.types.is_time32(t) else pa.int64()))
        return pc.divide(raw, float(_PER_SECOND[t.unit]))
    return pa.nulls(n, pa.float64())


def bound_columns(
    min_text: pa.Array | pa.ChunkedArray,
    max_text: pa.Array | pa.ChunkedArray,
    arrow_types: pa.Array | pa.ChunkedArray,
) -> dict[str, pa.Array]:
    """``min_key``, ``max_key``, ``min_num``, ``max_num`` for rows given as text bounds + type strings.

    Rows are grouped by ``arrow_type`` and each group is decoded once with
    :func:`footer_stats.decode_bounds`; rows without a type (or with an
    undecodable one) get nulls.
    """
    from airflow_zorder.core.stats import footer_stats

    def flat(a: pa.Array | pa.ChunkedArray) -> pa.Array:
        return a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a

    lo_t, hi_t, ty = flat(min_text), flat(max_text), flat(arrow_types)
    n = len(lo_t)
    out_keys: dict[str, list] = {"min_key": [None] * n, "max_key": [None] * n}
    out_nums = {"min_num": np.full(n, np.nan), "max_num": np.full(n, np.nan)}
    num_valid = {"min_num": np.zeros(n, dtype=bool), "max_num": np.zeros(n, dtype=bool)}
    if n == 0:
        return {"min_key": pa.array([], pa.binary()), "max_key": pa.array([], pa.binary()),
                "min_num": pa.array([], pa.float64()), "max_num": pa.array([], pa.float64())}
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
                t = footer_stats.parse_arrow_type(name)
            except ValueError:
                continue
            take = pa.array(idx)
            for side, text in (("min", lo_t), ("max", hi_t)):
                vals = footer_stats.decode_bounds(text.take(take), t)
                keys = order_keys(vals).to_pylist()
                kl = out_keys[f"{side}_key"]
                for j, i in enumerate(idx):
                    kl[i] = keys[j]
                nums = numeric_values(vals)
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
# Bridges to the rest of the core
# --------------------------------------------------------------------------

_TO_FOOTER = {
    "path": "path",
    "column_name": "column",
    "arrow_type": "arrow_type",
    "physical_type": "physical_type",
    "min_value": "min",
    "max_value": "max",
    "null_count": "null_count",
    "value_count": "value_count",
    "has_stats": "has_stats",
    "min_exact": "min_exact",
    "max_exact": "max_exact",
    "reason": "reason",
    "num_row_groups": "num_row_groups",
    "file_rows": "file_rows",
    "file_size": "file_size",
    "partition": "partition",
    "created_by": "created_by",
}


def to_footer_stats(stats: pa.Table) -> pa.Table:
    """A stats-table slice in :data:`footer_stats.STATS_SCHEMA` form (names ``column``, ``min``, ``max``, ...).

    This is what :func:`footer_stats.column_bounds` and the
    :mod:`~airflow_zorder.core.policy.metrics` functions (``table_clustering``,
    ``partition_clustering``, ...) take.  Rows without a column name
    (placeholder rows) are dropped.
    """
    from airflow_zorder.core.stats import footer_stats

    if "column_name" in stats.column_names:
        stats = stats.filter(pc.is_valid(stats["column_name"]))
    cols = []
    for f in footer_stats.STATS_SCHEMA:
        src = next((k for k, v in _TO_FOOTER.items() if v == f.name), None)
        if src is not None and src in stats.column_names:
            cols.append(stats[src].cast(f.type))
        else:
            cols.append(pa.nulls(stats.num_rows, f.type))
    return pa.Table.from_arrays(cols, schema=footer_stats.STATS_SCHEMA)


def column_bounds(stats: pa.Table, column: str, *, exact_only: bool = False):
    """Typed ``(mins, maxs, has_stats)`` of one column from a stats table (see :func:`footer_stats.column_bounds`)."""
    from airflow_zorder.core.stats import footer_stats

    sel = stats.filter(pc.equal(stats["column_name"], column))
    return footer_stats.column_bounds(to_footer_stats(sel), column, exact_only=exact_only)
