"""Per-file, per-column min/max/null statistics read from Parquet footers.

Airflow-free and Spark-free: only pyarrow and numpy.  Only the footer of each
file is read (one tail read per file, normally a single 64 KiB read); no data
page is touched.

Main entry points
-----------------
``read_footers(paths, columns, filesystem=None)``
    One row per (file, requested column) as a :class:`pyarrow.Table` with the
    stats table's one row schema,
    :data:`~airflow_zorder.core.stats.stats_schema.FILE_STATS_SCHEMA`
    (``method = "footer"``; the binary keys and numeric views are left null).
``read_footers_parallel(paths, columns, max_workers=16, filesystem=None)``
    The same table, reading the footers with a thread pool (footer reads are
    I/O bound; 2,000 local files take a fraction of a second).
``column_bounds(stats_table_or_files, column)``
    Typed ``(mins, maxs, has_stats)`` for one column: Arrow arrays of the
    column's logical type plus a numpy bool mask (footers read first when
    given paths; :func:`stats_schema.column_bounds` for a table).

The footer bytes and the Thrift reader are in
:mod:`~airflow_zorder.core.stats.parquet_footer`; the text encoding of the
bounds in :mod:`~airflow_zorder.core.stats.value_order`.

Semantics (what "never guess" means here)
-----------------------------------------
* Row groups are merged: min of mins, max of maxs, sum of null counts.  If
  *any* non-empty row group lacks usable min/max for the column, the file's
  stats for that column are missing: ``has_stats`` false, ``min_value``/``max_value``
  null, ``reason`` says why.  An all-null row group (null_count == rows) has no
  min/max but is fully described, so it does not make the file's stats
  missing.
* ``has_stats`` true with null ``min_value``/``max_value`` means: every value of the
  column in that file is null (or the file has no rows).  Such a file can
  never match ``c = v``.
* INT96 timestamps: their footer statistics are unusable (undefined sort
  order), always reported missing (``reason = "int96"``).
* Floating point: per the Parquet spec, min/max exclude NaN.  parquet-cpp
  writes no min/max when a row group is all NaN (-> missing here), and a
  min/max that is itself NaN (some older writers) is treated as missing.  A
  file may therefore still contain NaN values beyond its (finite) bounds; the
  footer cannot tell.  Zero signs are normalised as the spec asks readers to:
  a zero min is reported as ``-0.0`` and a zero max as ``+0.0``.
* Deprecated statistics (``min``/``max`` thrift fields written by old
  parquet-mr, with signed byte order for binary) are judged by parquet-cpp
  itself (``ApplicationVersion::HasCorrectStatistics``): when they are not
  trustworthy pyarrow exposes no statistics at all (``is_stats_set`` false),
  which becomes "missing" here.  pyarrow does not expose the
  ``is_min_max_deprecated`` bit itself.
* Truncated string/binary statistics.  parquet-cpp (pyarrow) never truncates:
  it drops min/max larger than 4096 bytes (-> missing here).  parquet-rs
  (tpchgen-cli, delta-rs, DataFusion) truncates min/max of byte arrays to 64
  bytes by default (the min becomes a prefix, the max a prefix with its last
  character incremented) and marks this with the Parquet 2.10 fields
  ``is_min_value_exact`` / ``is_max_value_exact``.  pyarrow does not expose
  these fields, so this module decodes them from the footer's Thrift bytes
  itself (:mod:`~airflow_zorder.core.stats.parquet_footer`, only for files with a requested
  byte-array column written by something other than parquet-cpp).  Truncated
  bounds are still valid *bounds* (safe for pruning and for the metrics), but
  are flagged ``min_exact`` / ``max_exact`` = false.  When a writer does not
  write the flags (e.g. parquet-mr/Spark, DuckDB) exactness is unknown and
  the flags are null; parquet-mr truncates footer statistics only when
  ``parquet.statistics.truncate.length`` is configured (off by default), and
  such truncation cannot be detected from the footer.  Fixed-width types are
  always exact.
* Hive-style partition columns (``k=v/`` path segments) are not stored in
  the files: a requested column that is absent from a file but is one of its
  partition keys produces no row for that file.  A requested column that is
  neither in the file nor a partition key gives a row with
  ``reason = "column_not_in_file"`` and ``has_stats`` false.
* Only top-level, non-repeated primitive columns have statistics here; a
  nested column gives ``reason = "nested_column"``.

Bounds in the table
-------------------
One table holds many columns of different types, so ``min_value``/``max_value``
are stored as ``string`` with a lossless, per-type text encoding
(:func:`value_order.bounds_to_text`); ``arrow_type`` (``str()`` of the Arrow
type) says how to decode it (:func:`value_order.decode_bounds`).
Arrow types are the logical types: string / large_string / string_view ->
``string``; all binary flavours and fixed_size_binary -> ``binary``; INT32/64
decimals and byte-array decimals -> ``decimal128`` (``decimal256`` above
precision 38).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.stats import parquet_footer, stats_schema, value_order
from airflow_zorder.core.storage.locations import parse_partition_path

__all__ = [
    "FooterRow",
    "read_footers",
    "read_footers_parallel",
    "read_file_footer",
    "column_bounds",
    "list_parquet_files",
    "partition_of",
    "row_count",
    "rows_to_table",
]

# --------------------------------------------------------------------------
# Paths and partitions
# --------------------------------------------------------------------------

_HIDDEN_PREFIXES = ("_", ".")


def list_parquet_files(table_dir: str, filesystem: Any = None) -> list[str]:
    """All ``*.parquet`` files under ``table_dir`` (recursive), sorted.

    Hidden entries (names starting with ``_`` or ``.``: ``_SUCCESS``,
    ``_delta_log``, ``.crc`` files, ...) are skipped, directories included.
    """
    if filesystem is None:
        out = []
        for root, dirs, files in os.walk(table_dir):
            dirs[:] = [d for d in dirs if not d.startswith(_HIDDEN_PREFIXES)]
            out.extend(
                os.path.join(root, f) for f in files if f.endswith(".parquet") and not f.startswith(_HIDDEN_PREFIXES)
            )
        return sorted(out)
    from pyarrow import fs as pafs

    sel = pafs.FileSelector(table_dir.rstrip("/"), recursive=True)
    base = table_dir.rstrip("/")
    out = []
    for info in filesystem.get_file_info(sel):
        if info.type != pafs.FileType.File or not info.path.endswith(".parquet"):
            continue
        rel = info.path[len(base) :].lstrip("/") if info.path.startswith(base) else info.base_name
        if any(part.startswith(_HIDDEN_PREFIXES) for part in rel.split("/")):
            continue
        out.append(info.path)
    return sorted(out)


def partition_of(path: str) -> str | None:
    """The Hive partition directory of a file (``dt=2024-01-01/hr=3``: its ``k=v`` segments), or None."""
    segs = [seg for seg in path.replace("\\", "/").split("/")[:-1] if "=" in seg and not seg.startswith("=")]
    return "/".join(segs) or None


# --------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------

# kinds: how to pull a python value out of pyarrow Statistics
_K_INT, _K_FLOAT, _K_DECIMAL, _K_BOOL, _K_STRING, _K_BINARY, _K_RAW = range(7)
_BYTE_KINDS = (_K_STRING, _K_BINARY, _K_DECIMAL)

_UNIT = {"milliseconds": "ms", "microseconds": "us", "nanoseconds": "ns"}


@dataclass(frozen=True)
class _ColType:
    arrow: pa.DataType | None  # None: unsupported
    kind: int
    reason: str | None = None  # why unsupported


def _column_type(col: Any) -> _ColType:
    """Arrow logical type + extraction kind for a Parquet leaf ``ColumnSchema``."""
    phys = col.physical_type
    lt = col.logical_type
    ltt = lt.type
    if phys == "INT96":
        return _ColType(pa.timestamp("ns"), _K_RAW, "int96")
    if ltt == "DECIMAL":
        return _ColType(value_order.decimal_type(col.precision, col.scale), _K_DECIMAL)
    if phys == "BOOLEAN":
        return _ColType(pa.bool_(), _K_BOOL)
    if phys == "FLOAT":
        return _ColType(pa.float32(), _K_FLOAT)
    if phys == "DOUBLE":
        return _ColType(pa.float64(), _K_FLOAT)
    if phys in ("INT32", "INT64"):
        if ltt in ("NONE", "UNDEFINED"):
            return _ColType(pa.int32() if phys == "INT32" else pa.int64(), _K_INT)
        js = _lt_json(lt)
        if ltt == "INT":
            bw, signed = int(js["bitWidth"]), bool(js["isSigned"])
            t = {
                (8, True): pa.int8(),
                (16, True): pa.int16(),
                (32, True): pa.int32(),
                (64, True): pa.int64(),
                (8, False): pa.uint8(),
                (16, False): pa.uint16(),
                (32, False): pa.uint32(),
                (64, False): pa.uint64(),
            }[(bw, signed)]
            return _ColType(t, _K_INT)
        if ltt == "DATE":
            return _ColType(pa.date32(), _K_RAW)
        if ltt == "TIMESTAMP":
            unit = _UNIT[js["timeUnit"]]
            return _ColType(pa.timestamp(unit, "UTC" if js["isAdjustedToUTC"] else None), _K_RAW)
        if ltt == "TIME":
            unit = _UNIT[js["timeUnit"]]
            return _ColType(pa.time32(unit) if unit == "ms" else pa.time64(unit), _K_RAW)
        return _ColType(None, _K_INT, f"unsupported_logical_type:{ltt}")
    if phys == "BYTE_ARRAY":
        if ltt in ("STRING", "ENUM", "JSON"):
            return _ColType(pa.string(), _K_STRING)
        if ltt in ("NONE", "UNDEFINED", "BSON"):
            return _ColType(pa.binary(), _K_BINARY)
        return _ColType(None, _K_BINARY, f"unsupported_logical_type:{ltt}")
    if phys == "FIXED_LEN_BYTE_ARRAY":
        if ltt in ("NONE", "UNDEFINED", "UUID"):
            return _ColType(pa.binary(), _K_BINARY)
        # FLOAT16, INTERVAL, ...: no sensible byte order for bounds
        return _ColType(None, _K_BINARY, f"unsupported_logical_type:{ltt}")
    return _ColType(None, _K_BINARY, f"unsupported_physical_type:{phys}")


_LT_JSON_CACHE: dict[str, dict] = {}


def _lt_json(lt: Any) -> dict:
    s = lt.to_json()
    d = _LT_JSON_CACHE.get(s)
    if d is None:
        d = _LT_JSON_CACHE[s] = json.loads(s)
    return d


# --------------------------------------------------------------------------
# Reading one footer
# --------------------------------------------------------------------------


@dataclass
class FooterRow:
    """One (file, column) of :func:`read_file_footer`, before :func:`rows_to_table` (typed python bounds)."""

    path: str
    column: str
    ctype: _ColType | None
    physical_type: str | None
    min: Any
    max: Any
    null_count: int | None
    value_count: int | None
    has_stats: bool
    min_exact: bool | None
    max_exact: bool | None
    reason: str | None
    num_row_groups: int
    file_rows: int
    file_size: int
    partition: str | None
    created_by: str | None

    @classmethod
    def without_stats(
        cls,
        path: str,
        column: str,
        reason: str,
        num_row_groups: int,
        file_rows: int,
        file_size: int,
        partition: str | None,
        created_by: str | None,
    ) -> FooterRow:
        """A (file, column) the footer gives no bounds for, and why (``reason``)."""
        return cls(
            path,
            column,
            None,
            None,
            None,
            None,
            None,
            None,
            False,
            None,
            None,
            reason,
            num_row_groups,
            file_rows,
            file_size,
            partition,
            created_by,
        )


def _stat_value(s: Any, kind: int, is_min: bool) -> Any:
    if kind == _K_RAW:
        return s.min_raw if is_min else s.max_raw
    return s.min if is_min else s.max


# One-entry cache of the per-schema work (leaf lookup, column types): the files of
# a table nearly always share one schema, and ``ParquetSchema.equals`` (C++) is
# much cheaper than rebuilding the plan from the schema's Python objects.
_PLAN_CACHE: tuple | None = None


def _schema_plan(schema: Any, num_columns: int) -> tuple[dict[str, int], set[str], dict[int, _ColType], list[str]]:
    """(leaf index by name, nested top-level names, column types (filled lazily), top-level names in order)."""
    global _PLAN_CACHE
    cached = _PLAN_CACHE
    if cached is not None and cached[0].equals(schema):
        return cached[1], cached[2], cached[3], cached[4]
    leaf_of: dict[str, int] = {}
    nested_tops: set[str] = set()
    tops: dict[str, None] = {}
    for i in range(num_columns):
        col = schema.column(i)
        p = col.path
        if p == col.name and col.max_repetition_level == 0:
            leaf_of[p] = i
            tops[p] = None
        else:
            top = p.split(".", 1)[0]
            nested_tops.add(top)
            tops[top] = None
    type_of: dict[int, _ColType] = {}
    _PLAN_CACHE = (schema, leaf_of, nested_tops, type_of, list(tops))
    return leaf_of, nested_tops, type_of, list(tops)


def read_file_footer(
    path: str,
    columns: Sequence[str] | None,
    filesystem: Any = None,
    on_error: str = "raise",
) -> list[FooterRow]:
    """Statistics for one file (internal row objects; see :func:`read_footers`).

    ``columns=None``: every top-level column of the file, in schema order
    (an unreadable file then gives no rows with ``on_error="missing"``).
    :func:`rows_to_table` turns the rows into a ``FILE_STATS_SCHEMA`` table.
    """
    try:
        footer, size = parquet_footer.read_footer_bytes(path, filesystem)
        md = parquet_footer.metadata_from_footer(footer)
    except Exception as exc:  # noqa: BLE001 - reported per file when asked
        if on_error == "raise":
            raise
        part = partition_of(path)
        return [
            FooterRow.without_stats(path, c, f"unreadable_file:{type(exc).__name__}: {exc}", 0, 0, 0, part, None)
            for c in (columns or ())
        ]

    created_by = md.created_by
    schema = md.schema
    leaf_of, nested_tops, type_of, top_names = _schema_plan(schema, md.num_columns)
    if columns is None:
        columns = top_names
    part = partition_of(path)
    partition_keys = parse_partition_path(part, strict=False) if part else {}
    num_rgs = md.num_row_groups
    file_rows = md.num_rows
    rgs = [md.row_group(r) for r in range(num_rgs)]
    rg_rows = [rg.num_rows for rg in rgs]

    writer_truncates_never = created_by is not None and created_by.startswith("parquet-cpp")
    flags: list | None = None
    need_flags = False

    plans = []
    for name in columns:
        idx = leaf_of.get(name)
        if idx is None:
            if name in partition_keys:
                continue  # partition column: not stored in the file
            reason = "nested_column" if name in nested_tops else "column_not_in_file"
            plans.append((name, None, None, reason))
            continue
        ctype = type_of.get(idx)
        if ctype is None:
            ctype = type_of[idx] = _column_type(schema.column(idx))
        plans.append((name, idx, ctype, ctype.reason))
        if ctype.reason is None and ctype.kind in _BYTE_KINDS and not writer_truncates_never:
            need_flags = True

    if need_flags:
        try:
            flags = parquet_footer.exact_flags(footer)
        except Exception:  # noqa: BLE001 - unknown exactness rather than failure
            flags = None

    rows: list[FooterRow] = []
    for name, idx, ctype, reason in plans:
        if idx is None:
            rows.append(FooterRow.without_stats(path, name, reason, num_rgs, file_rows, size, part, created_by))
            continue
        phys = schema.column(idx).physical_type
        kind = ctype.kind
        fixed_width = kind not in (_K_STRING, _K_BINARY) and not (
            kind == _K_DECIMAL and phys in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY")
        )
        has = reason is None
        mn = mx = None
        mn_exact: bool | None = True
        mx_exact: bool | None = True
        nulls: int | None = 0
        values = 0
        for r, rg in enumerate(rgs):
            cc = rg.column(idx)
            values += cc.num_values
            if rg_rows[r] == 0:
                continue
            if not cc.is_stats_set:
                nulls = None
                if has:
                    has, reason = False, "row_group_without_stats"
                continue
            s = cc.statistics
            if s.has_null_count and nulls is not None:
                nulls += s.null_count
            elif not s.has_null_count:
                nulls = None
            if not has:
                continue
            if not s.has_min_max:
                if s.has_null_count and s.null_count == rg_rows[r]:
                    continue  # all-null row group: nothing to bound
                has, reason = False, "row_group_without_min_max"
                continue
            try:
                lo = _stat_value(s, kind, True)
                hi = _stat_value(s, kind, False)
            except Exception as exc:  # noqa: BLE001 - e.g. invalid UTF-8 in a string stat
                has, reason = False, f"undecodable_stats:{type(exc).__name__}"
                continue
            if lo is None or hi is None:
                has, reason = False, "row_group_without_min_max"
                continue
            if kind == _K_FLOAT and (math.isnan(lo) or math.isnan(hi)):
                has, reason = False, "nan_in_stats"
                continue
            if kind == _K_BINARY and not isinstance(lo, bytes):
                lo, hi = bytes(lo), bytes(hi)
            if fixed_width:
                lo_ex = hi_ex = True
            elif writer_truncates_never:
                lo_ex = hi_ex = True
            elif flags is not None and r < len(flags) and idx < len(flags[r]):
                lo_ex, hi_ex = flags[r][idx]
            else:
                lo_ex = hi_ex = None
            if mn is None or lo < mn:
                mn, mn_exact = lo, lo_ex
            elif lo == mn and mn_exact is not True:
                mn_exact = lo_ex if lo_ex is True else mn_exact
            if mx is None or hi > mx:
                mx, mx_exact = hi, hi_ex
            elif hi == mx and mx_exact is not True:
                mx_exact = hi_ex if hi_ex is True else mx_exact
        if has and mn is not None and kind == _K_FLOAT:
            if mn == 0:
                mn = -0.0
            if mx == 0:
                mx = 0.0
        if has and mn is not None and mn > mx:
            has, reason = False, "min_greater_than_max"
        if not has:
            mn = mx = None
            mn_exact = mx_exact = None
        elif mn is None:
            mn_exact = mx_exact = None  # all null: no bounds
        rows.append(
            FooterRow(
                path,
                name,
                ctype,
                phys,
                mn,
                mx,
                nulls,
                values,
                has,
                mn_exact,
                mx_exact,
                reason,
                num_rgs,
                file_rows,
                size,
                part,
                created_by,
            )
        )
    return rows


# --------------------------------------------------------------------------
# Table building
# --------------------------------------------------------------------------


def _typed_array(values: list, t: pa.DataType) -> pa.Array:
    """Arrow array of type ``t`` from python stat values (raw ints for temporal types)."""
    if pa.types.is_timestamp(t) or pa.types.is_time64(t) or pa.types.is_date64(t):
        return pa.array(values, pa.int64()).view(t)
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pa.array(values, pa.int32()).view(t)
    return pa.array(values, t)


def rows_to_table(rows: list[FooterRow], *, table_name: str = "", collected_at: dt.datetime | None = None) -> pa.Table:
    """The stats rows (``FILE_STATS_SCHEMA``, ``method = "footer"``) of :func:`read_file_footer` rows.

    ``table_name`` and ``collected_at`` (default now) are stamped on every row; the partition comes from the
    path, ``snapshot_id`` is 0 (the store numbers snapshots), binary keys and numeric views are left null.
    """
    n = len(rows)
    mins: list[str | None] = [None] * n
    maxs: list[str | None] = [None] * n
    groups: dict[pa.DataType, list[int]] = {}
    for i, r in enumerate(rows):
        if r.ctype is not None and r.ctype.arrow is not None:
            groups.setdefault(r.ctype.arrow, []).append(i)
    for t, idxs in groups.items():
        lo = value_order.bounds_to_text(_typed_array([rows[i].min for i in idxs], t)).to_pylist()
        hi = value_order.bounds_to_text(_typed_array([rows[i].max for i in idxs], t)).to_pylist()
        for j, i in enumerate(idxs):
            mins[i] = lo[j]
            maxs[i] = hi[j]
    values_of: dict[str, list[tuple[str, str]]] = {}
    for r in rows:
        if r.partition is not None and r.partition not in values_of:
            values_of[r.partition] = list(parse_partition_path(r.partition, strict=False).items())
    when = collected_at or dt.datetime.now(dt.UTC)
    cols = {
        "snapshot_id": pa.repeat(pa.scalar(0, pa.int64()), n),
        "table_name": pa.repeat(pa.scalar(table_name, pa.string()), n),
        "path": [r.path for r in rows],
        "partition": [r.partition for r in rows],
        "partition_values": [None if r.partition is None else values_of[r.partition] for r in rows],
        "file_size": [r.file_size for r in rows],
        "file_rows": [r.file_rows for r in rows],
        "num_row_groups": [r.num_row_groups for r in rows],
        "created_by": [r.created_by for r in rows],
        "column_name": [r.column for r in rows],
        "arrow_type": [str(r.ctype.arrow) if r.ctype is not None and r.ctype.arrow is not None else None for r in rows],
        "physical_type": [r.physical_type for r in rows],
        "min_value": mins,
        "max_value": maxs,
        "null_count": [r.null_count for r in rows],
        "value_count": [r.value_count for r in rows],
        "has_stats": [r.has_stats for r in rows],
        "min_exact": [r.min_exact for r in rows],
        "max_exact": [r.max_exact for r in rows],
        "reason": [r.reason for r in rows],
        "method": pa.repeat(pa.scalar("footer", pa.string()), n),
        "collected_at": pa.repeat(pa.scalar(when, pa.timestamp("us", tz="UTC")), n),
    }
    return stats_schema.file_stats_table(cols, n)


def _normalise_args(paths: Iterable[str] | str, columns: Sequence[str] | str) -> tuple[list[str], list[str]]:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if isinstance(columns, str):
        columns = [columns]
    paths = [os.fspath(p) for p in paths]
    columns = list(columns)
    if len(set(columns)) != len(columns):
        raise InvalidInputError(f"duplicate column names: {columns}")
    return paths, columns


def row_count(path: str, filesystem: Any = None) -> int:
    """Rows in one Parquet file, from its footer (one tail read)."""
    return int(parquet_footer.metadata_from_footer(parquet_footer.read_footer_bytes(path, filesystem)[0]).num_rows)


def read_footers(
    paths: Iterable[str] | str,
    columns: Sequence[str] | str,
    filesystem: Any = None,
    on_error: str = "raise",
) -> pa.Table:
    """Footer statistics of ``columns`` in each file of ``paths``, sequentially.

    Returns stats rows (:func:`rows_to_table`), one per (file, column) in
    input order (files, then columns), except partition columns (skipped).

    ``filesystem``: an optional ``pyarrow.fs.FileSystem``; paths are then in
    its namespace.  Without it, paths are local and read with plain ``open``.
    ``on_error``: ``"raise"`` (default) or ``"missing"`` (an unreadable file
    gives rows with ``has_stats`` false and ``reason = "unreadable_file:..."``).
    """
    paths, columns = _normalise_args(paths, columns)
    if on_error not in ("raise", "missing"):
        raise InvalidInputError("on_error must be 'raise' or 'missing'")
    rows: list[FooterRow] = []
    for p in paths:
        rows.extend(read_file_footer(p, columns, filesystem, on_error))
    return rows_to_table(rows)


def read_footers_parallel(
    paths: Iterable[str] | str,
    columns: Sequence[str] | str,
    max_workers: int | None = 16,
    filesystem: Any = None,
    on_error: str = "raise",
) -> pa.Table:
    """:func:`read_footers` with a thread pool of ``max_workers`` threads.

    Same output (same row order).  Footer reads are small I/O requests, so
    threads help most on remote filesystems; locally the Python part of the
    stats extraction dominates.
    """
    paths, columns = _normalise_args(paths, columns)
    if on_error not in ("raise", "missing"):
        raise InvalidInputError("on_error must be 'raise' or 'missing'")
    if (max_workers is not None and max_workers <= 1) or len(paths) <= 1:
        return read_footers(paths, columns, filesystem, on_error)
    # Chunk the work so the pool overhead per file stays small.
    workers = max_workers or min(32, (os.cpu_count() or 1) + 4)
    chunk = max(1, min(64, len(paths) // (workers * 4) or 1))
    batches = [paths[i : i + chunk] for i in range(0, len(paths), chunk)]

    def work(batch: list[str]) -> list[FooterRow]:
        out: list[FooterRow] = []
        for p in batch:
            out.extend(read_file_footer(p, columns, filesystem, on_error))
        return out

    rows: list[FooterRow] = []
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="footer") as ex:
        for part in ex.map(work, batches):
            rows.extend(part)
    return rows_to_table(rows)


# --------------------------------------------------------------------------
# Typed bounds for one column
# --------------------------------------------------------------------------


def column_bounds(
    stats_table_or_files: pa.Table | Iterable[str] | str,
    column: str,
    *,
    filesystem: Any = None,
    exact_only: bool = False,
    max_workers: int | None = 16,
) -> tuple[pa.Array, pa.Array, np.ndarray]:
    """Typed ``(mins, maxs, has_stats)`` of ``column``, one entry per file row.

    ``stats_table_or_files`` is a stats table (rows of other columns are
    ignored) or file paths (their footers read with :func:`read_footers_parallel`);
    see :func:`stats_schema.column_bounds` for the result and ``exact_only``.
    """
    if isinstance(stats_table_or_files, pa.Table):
        table = stats_table_or_files
    else:
        table = read_footers_parallel(stats_table_or_files, [column], max_workers, filesystem)
    return stats_schema.column_bounds(table, column, exact_only=exact_only)
