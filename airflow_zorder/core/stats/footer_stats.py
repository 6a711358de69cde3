"""Per-file, per-column min/max/null statistics read from Parquet footers.

Airflow-free and Spark-free: only pyarrow and numpy.  Only the footer of each
file is read (one tail read per file, normally a single 64 KiB read); no data
page is touched.

Main entry points
-----------------
``read_footers(paths, columns, filesystem=None)``
    One row per (file, requested column) as a :class:`pyarrow.Table` with the
    schema :data:`STATS_SCHEMA`.
``read_footers_parallel(paths, columns, max_workers=16, filesystem=None)``
    The same table, reading the footers with a thread pool (footer reads are
    I/O bound; 2,000 local files take a fraction of a second).
``column_bounds(stats_table_or_files, column)``
    Typed ``(mins, maxs, has_stats)`` for one column: Arrow arrays of the
    column's logical type plus a numpy bool mask.  This is what
    :mod:`airflow_zorder.core.policy.metrics` consumes.

Semantics (what "never guess" means here)
-----------------------------------------
* Row groups are merged: min of mins, max of maxs, sum of null counts.  If
  *any* non-empty row group lacks usable min/max for the column, the file's
  stats for that column are missing: ``has_stats`` false, ``min``/``max``
  null, ``reason`` says why.  An all-null row group (null_count == rows) has no
  min/max but is fully described, so it does not make the file's stats
  missing.
* ``has_stats`` true with null ``min``/``max`` means: every value of the
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
  itself (a small compact-protocol reader, only for files with a requested
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

Text representation in the table
--------------------------------
One table holds many columns of different types, so ``min``/``max`` are
stored as ``string`` with a lossless, per-type text encoding; ``arrow_type``
(``str()`` of the Arrow type) says how to decode it (:func:`decode_bounds`):

=====================  ====================================================
integers               decimal digits (``-3``, ``18446744073709551615``)
float / double         shortest round-trip repr (``1.5``, ``-0``, ``1e+300``)
decimal                plain decimal with the column's scale (``-4.56``)
bool                   ``true`` / ``false``
date32                 ISO date (``2020-01-31``)
timestamp[unit(, tz)]  ISO ``YYYY-MM-DD HH:MM:SS[.fraction]`` with the
                       unit's digits; UTC-adjusted timestamps end in ``Z``
time32 / time64        integer count of the unit since midnight
string                 the string itself
binary                 lowercase hex of the bytes
=====================  ====================================================

Arrow types are the logical types: string / large_string / string_view ->
``string``; all binary flavours and fixed_size_binary -> ``binary``; INT32/64
decimals and byte-array decimals -> ``decimal128`` (``decimal256`` above
precision 38).
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
import urllib.parse
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

try:  # the low-level reader behind pq.ParquetFile (see _metadata_from_footer)
    from pyarrow._parquet import ParquetReader as _ParquetReader
except ImportError:  # pragma: no cover - other pyarrow layouts: use the public path
    _ParquetReader = None

__all__ = [
    "STATS_SCHEMA",
    "read_footers",
    "read_footers_parallel",
    "read_file_footer",
    "column_bounds",
    "decode_bounds",
    "list_parquet_files",
    "hive_partition_values",
    "parse_arrow_type",
    "rows_to_table",
    "bounds_to_text",
]

# --------------------------------------------------------------------------
# Output schema
# --------------------------------------------------------------------------

STATS_SCHEMA = pa.schema(
    [
        pa.field("path", pa.string(), nullable=False),
        pa.field("column", pa.string(), nullable=False),
        # Arrow logical type of the column in this file, str() form, see parse_arrow_type.
        pa.field("arrow_type", pa.string()),
        pa.field("physical_type", pa.string()),
        # Lossless text encoding of the bounds (see module docstring); null when missing.
        pa.field("min", pa.string()),
        pa.field("max", pa.string()),
        pa.field("null_count", pa.int64()),
        # Values in the column chunk(s), nulls included (== rows for flat columns).
        pa.field("value_count", pa.int64()),
        # min/max usable for every row group (or the column is all null in the file).
        pa.field("has_stats", pa.bool_(), nullable=False),
        # True: exact; False: truncated (still a valid bound); null: unknown.
        pa.field("min_exact", pa.bool_()),
        pa.field("max_exact", pa.bool_()),
        # Why has_stats is false (null when it is true).
        pa.field("reason", pa.string()),
        pa.field("num_row_groups", pa.int32()),
        pa.field("file_rows", pa.int64()),
        pa.field("file_size", pa.int64()),
        # Hive partition path segment of the file, e.g. "dt=2024-01-01/hr=3"; null if none.
        pa.field("partition", pa.string()),
        pa.field("created_by", pa.string()),
    ]
)

_MAGIC = b"PAR1"
_MAGIC_ENCRYPTED = b"PARE"
_TAIL_READ = 64 * 1024
_LOCAL_TAIL_READ = 16 * 1024


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
                os.path.join(root, f)
                for f in files
                if f.endswith(".parquet") and not f.startswith(_HIDDEN_PREFIXES)
            )
        return sorted(out)
    from pyarrow import fs as pafs

    sel = pafs.FileSelector(table_dir.rstrip("/"), recursive=True)
    base = table_dir.rstrip("/")
    out = []
    for info in filesystem.get_file_info(sel):
        if info.type != pafs.FileType.File or not info.path.endswith(".parquet"):
            continue
        rel = info.path[len(base):].lstrip("/") if info.path.startswith(base) else info.base_name
        if any(part.startswith(_HIDDEN_PREFIXES) for part in rel.split("/")):
            continue
        out.append(info.path)
    return sorted(out)


def hive_partition_values(path: str) -> dict[str, str]:
    """``{key: value}`` from Hive-style ``k=v`` directory segments of ``path``.

    Values are URL-unquoted (Hive/Spark escape special characters as ``%XX``).
    Spark's ``__HIVE_DEFAULT_PARTITION__`` is returned as is.
    """
    parts = path.replace("\\", "/").split("/")[:-1]
    out: dict[str, str] = {}
    for seg in parts:
        if "=" in seg:
            k, _, v = seg.partition("=")
            if k:
                out[urllib.parse.unquote(k)] = urllib.parse.unquote(v)
    return out


def _partition_string(path: str) -> str | None:
    segs = [s for s in path.replace("\\", "/").split("/")[:-1] if "=" in s and not s.startswith("=")]
    return "/".join(segs) or None


# --------------------------------------------------------------------------
# Footer bytes
# --------------------------------------------------------------------------


def _read_footer_bytes(path: str, filesystem: Any) -> tuple[bytes, int]:
    """Return (thrift FileMetaData bytes, file size) with one tail read (two if huge)."""
    if filesystem is None:
        # Local: positional reads, and a smaller first read (local reads are cheap;
        # typical footers are a few KiB).
        fd = os.open(path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            if size < 12:
                raise ValueError(f"{path}: not a Parquet file ({size} bytes)")
            n = min(size, _LOCAL_TAIL_READ)
            tail = os.pread(fd, n, size - n)
            footer = _footer_from_tail(path, tail, size)
            if footer is None:
                flen = struct.unpack("<I", tail[-8:-4])[0]
                footer = os.pread(fd, flen, size - 8 - flen)
            return footer, size
        finally:
            os.close(fd)
    with filesystem.open_input_file(path) as f:
        size = f.size()
        if size < 12:
            raise ValueError(f"{path}: not a Parquet file ({size} bytes)")
        n = min(size, _TAIL_READ)
        tail = f.read_at(n, size - n)
        footer = _footer_from_tail(path, tail, size)
        if footer is None:
            flen = struct.unpack("<I", tail[-8:-4])[0]
            footer = f.read_at(flen, size - 8 - flen)
        return bytes(footer), size


def _footer_from_tail(path: str, tail: bytes, size: int) -> bytes | None:
    magic = tail[-4:]
    if magic == _MAGIC_ENCRYPTED:
        raise ValueError(f"{path}: encrypted Parquet footer is not supported")
    if magic != _MAGIC:
        raise ValueError(f"{path}: not a Parquet file (bad magic {magic!r})")
    flen = struct.unpack("<I", tail[-8:-4])[0]
    if flen + 12 > size:
        raise ValueError(f"{path}: corrupt Parquet footer length {flen}")
    if flen + 8 <= len(tail):
        return tail[len(tail) - 8 - flen : len(tail) - 8]
    return None


def _metadata_from_footer(footer: bytes) -> pq.FileMetaData:
    buf = _MAGIC + footer + struct.pack("<I", len(footer)) + _MAGIC
    if _ParquetReader is not None:
        # pyarrow's reader without ``ParquetFile``'s Python set-up (nested path
        # maps etc.), which costs more than the footer parse itself.
        reader = _ParquetReader()
        try:
            reader.open(pa.BufferReader(buf))
        except TypeError:  # pragma: no cover - a pyarrow whose private reader changed: public path
            return pq.read_metadata(pa.BufferReader(buf))
        return reader.metadata
    return pq.read_metadata(pa.BufferReader(buf))


# --------------------------------------------------------------------------
# Minimal Thrift compact-protocol reader for Statistics.is_{min,max}_value_exact
# --------------------------------------------------------------------------
# parquet.thrift field ids used:
#   FileMetaData.row_groups = 4 (list<RowGroup>)
#   RowGroup.columns = 1 (list<ColumnChunk>)
#   ColumnChunk.meta_data = 3 (ColumnMetaData)
#   ColumnMetaData.statistics = 12 (Statistics)
#   Statistics.is_max_value_exact = 7, is_min_value_exact = 8 (bool)

_CT_STOP, _CT_TRUE, _CT_FALSE, _CT_BYTE, _CT_I16, _CT_I32, _CT_I64 = 0, 1, 2, 3, 4, 5, 6
_CT_DOUBLE, _CT_BINARY, _CT_LIST, _CT_SET, _CT_MAP, _CT_STRUCT = 7, 8, 9, 10, 11, 12

# Functions take (bytes, offset) and return the new offset: plain locals are
# much faster than a reader object in CPython (footers of 2,000 files are
# parsed in well under a second).


def _varint(b: bytes, i: int) -> tuple[int, int]:
    out = 0
    shift = 0
    while True:
        x = b[i]
        i += 1
        out |= (x & 0x7F) << shift
        if x < 0x80:
            return out, i
        shift += 7


def _skip_varints(b: bytes, i: int, n: int) -> int:
    if n and max(b[i : i + n]) < 0x80:  # all one-byte varints (typical for small counts)
        return i + n
    for _ in range(n):
        while b[i] & 0x80:
            i += 1
        i += 1
    return i


def _list_header(b: bytes, i: int) -> tuple[int, int, int]:
    h = b[i]
    i += 1
    n = h >> 4
    if n == 15:
        n, i = _varint(b, i)
    return n, h & 0x0F, i


def _skip(b: bytes, i: int, t: int) -> int:
    """Skip one value of compact type ``t`` (in field context)."""
    if t <= _CT_FALSE:
        return i  # booleans live in the field header
    if t == _CT_BYTE:
        return i + 1
    if t <= _CT_I64:
        while b[i] & 0x80:
            i += 1
        return i + 1
    if t == _CT_DOUBLE:
        return i + 8
    if t == _CT_BINARY:
        n, i = _varint(b, i)
        return i + n
    if t == _CT_STRUCT:
        return _skip_struct(b, i)
    if t in (_CT_LIST, _CT_SET):
        n, et, i = _list_header(b, i)
        if et in (_CT_TRUE, _CT_FALSE, _CT_BYTE):
            return i + n  # one byte per element
        if et in (_CT_I16, _CT_I32, _CT_I64):
            return _skip_varints(b, i, n)
        if et == _CT_DOUBLE:
            return i + 8 * n
        if et == _CT_BINARY:
            for _ in range(n):
                m, i = _varint(b, i)
                i += m
            return i
        if et == _CT_STRUCT:
            for _ in range(n):
                i = _skip_struct(b, i)
            return i
        for _ in range(n):
            i = _skip(b, i, et)
        return i
    if t == _CT_MAP:
        n, i = _varint(b, i)
        if n:
            kv = b[i]
            i += 1
            kt, vt = kv >> 4, kv & 0x0F
            for _ in range(n):
                i = _skip(b, i, kt if kt > _CT_FALSE else _CT_BYTE)
                i = _skip(b, i, vt if vt > _CT_FALSE else _CT_BYTE)
        return i
    raise ValueError(f"bad thrift compact type {t}")


def _skip_struct(b: bytes, i: int) -> int:
    while True:
        h = b[i]
        i += 1
        t = h & 0x0F
        if t == _CT_STOP:
            return i
        if not h >> 4:  # long form: zigzag varint field id follows
            while b[i] & 0x80:
                i += 1
            i += 1
        if t <= _CT_FALSE:
            continue
        if _CT_I16 <= t <= _CT_I64:
            while b[i] & 0x80:
                i += 1
            i += 1
        elif t == _CT_BINARY:
            n, i = _varint(b, i)
            i += n
        else:
            i = _skip(b, i, t)


def _field(b: bytes, i: int, last: int) -> tuple[int, int, int]:
    """Read a field header: (field id, type, new offset); type 0 = stop."""
    h = b[i]
    i += 1
    t = h & 0x0F
    if t == _CT_STOP:
        return 0, 0, i
    d = h >> 4
    if d:
        return last + d, t, i
    z, i = _varint(b, i)
    return (z >> 1) ^ -(z & 1), t, i


def _exact_flags(footer: bytes) -> list[list[tuple[bool | None, bool | None]]]:
    """``flags[row_group][leaf_column] = (is_min_value_exact, is_max_value_exact)``.

    ``None`` where the writer did not set the field (or there are no statistics).
    """
    b = footer
    out: list[list[tuple[bool | None, bool | None]]] = []
    i = 0
    fid = 0
    while True:
        fid, t, i = _field(b, i, fid)
        if t == _CT_STOP:
            return out
        if fid == 4 and t == _CT_LIST:  # FileMetaData.row_groups
            n, _, i = _list_header(b, i)
            for _ in range(n):
                cols, i = _rg_flags(b, i)
                out.append(cols)
        else:
            i = _skip(b, i, t)


def _rg_flags(b: bytes, i: int) -> tuple[list[tuple[bool | None, bool | None]], int]:
    cols: list[tuple[bool | None, bool | None]] = []
    fid = 0
    while True:
        fid, t, i = _field(b, i, fid)
        if t == _CT_STOP:
            return cols, i
        if fid == 1 and t == _CT_LIST:  # RowGroup.columns
            n, _, i = _list_header(b, i)
            for _ in range(n):
                flags, i = _chunk_flags(b, i)
                cols.append(flags)
        else:
            i = _skip(b, i, t)


def _chunk_flags(b: bytes, i: int) -> tuple[tuple[bool | None, bool | None], int]:
    res: tuple[bool | None, bool | None] = (None, None)
    fid = 0
    while True:  # field loop with scalar skipping inlined (hot path)
        h = b[i]
        i += 1
        t = h & 0x0F
        if t == _CT_STOP:
            return res, i
        d = h >> 4
        if d:
            fid += d
        else:
            z, i = _varint(b, i)
            fid = (z >> 1) ^ -(z & 1)
        if fid == 3 and t == _CT_STRUCT:  # ColumnChunk.meta_data
            res, i = _colmeta_flags(b, i)
        elif t <= _CT_FALSE:
            pass
        elif _CT_I16 <= t <= _CT_I64:
            while b[i] & 0x80:
                i += 1
            i += 1
        elif t == _CT_BINARY:
            n, i = _varint(b, i)
            i += n
        else:
            i = _skip(b, i, t)


def _colmeta_flags(b: bytes, i: int) -> tuple[tuple[bool | None, bool | None], int]:
    res: tuple[bool | None, bool | None] = (None, None)
    fid = 0
    while True:  # field loop with scalar skipping inlined (hot path)
        h = b[i]
        i += 1
        t = h & 0x0F
        if t == _CT_STOP:
            return res, i
        d = h >> 4
        if d:
            fid += d
        else:
            z, i = _varint(b, i)
            fid = (z >> 1) ^ -(z & 1)
        if fid == 12 and t == _CT_STRUCT:  # ColumnMetaData.statistics
            mn: bool | None = None
            mx: bool | None = None
            sfid = 0
            while True:
                sfid, st, i = _field(b, i, sfid)
                if st == _CT_STOP:
                    break
                if sfid == 7 and st <= _CT_FALSE:  # is_max_value_exact
                    mx = st == _CT_TRUE
                elif sfid == 8 and st <= _CT_FALSE:  # is_min_value_exact
                    mn = st == _CT_TRUE
                else:
                    i = _skip(b, i, st)
            res = (mn, mx)
        elif t <= _CT_FALSE:
            pass
        elif _CT_I16 <= t <= _CT_I64:
            while b[i] & 0x80:
                i += 1
            i += 1
        elif t == _CT_BINARY:
            n, i = _varint(b, i)
            i += n
        else:
            i = _skip(b, i, t)


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


def _decimal_type(p: int, s: int) -> pa.DataType:
    return pa.decimal128(p, s) if p <= 38 else pa.decimal256(p, s)


def _column_type(col: Any) -> _ColType:
    """Arrow logical type + extraction kind for a Parquet leaf ``ColumnSchema``."""
    phys = col.physical_type
    lt = col.logical_type
    ltt = lt.type
    if phys == "INT96":
        return _ColType(pa.timestamp("ns"), _K_RAW, "int96")
    if ltt == "DECIMAL":
        return _ColType(_decimal_type(col.precision, col.scale), _K_DECIMAL)
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
                (8, True): pa.int8(), (16, True): pa.int16(), (32, True): pa.int32(), (64, True): pa.int64(),
                (8, False): pa.uint8(), (16, False): pa.uint16(), (32, False): pa.uint32(), (64, False): pa.uint64(),
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


_TYPE_SIMPLE = {
    "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
    "uint8": pa.uint8(), "uint16": pa.uint16(), "uint32": pa.uint32(), "uint64": pa.uint64(),
    "halffloat": pa.float16(), "float": pa.float32(), "double": pa.float64(),
    "bool": pa.bool_(), "date32[day]": pa.date32(), "date64[ms]": pa.date64(),
    "string": pa.string(), "large_string": pa.string(), "string_view": pa.string(),
    "binary": pa.binary(), "large_binary": pa.binary(), "binary_view": pa.binary(),
}
_RE_DECIMAL = re.compile(r"^decimal(32|64|128|256)\((\d+), (-?\d+)\)$")
_RE_TS = re.compile(r"^timestamp\[(s|ms|us|ns)(?:, tz=(.+))?\]$")
_RE_TIME = re.compile(r"^time(32|64)\[(s|ms|us|ns)\]$")


def parse_arrow_type(s: str) -> pa.DataType:
    """Inverse of ``str(type)`` for the scalar types that can carry bounds.

    Strings and binaries of every flavour map to ``string`` / ``binary``
    (``fixed_size_binary[n]`` too): bounds compare the same way.
    """
    t = _TYPE_SIMPLE.get(s)
    if t is not None:
        return t
    m = _RE_DECIMAL.match(s)
    if m:
        return _decimal_type(int(m.group(2)), int(m.group(3)))
    m = _RE_TS.match(s)
    if m:
        return pa.timestamp(m.group(1), m.group(2))
    m = _RE_TIME.match(s)
    if m:
        return pa.time32(m.group(2)) if m.group(1) == "32" else pa.time64(m.group(2))
    if s.startswith("fixed_size_binary["):
        return pa.binary()
    raise ValueError(f"unsupported Arrow type for bounds: {s!r}")


# --------------------------------------------------------------------------
# Reading one footer
# --------------------------------------------------------------------------


@dataclass
class _Row:
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


def _stat_value(s: Any, kind: int, is_min: bool) -> Any:
    if kind == _K_RAW:
        return s.min_raw if is_min else s.max_raw
    return s.min if is_min else s.max


# One-entry cache of the per-schema work (leaf lookup, column types): the files of
# a table nearly always share one schema, and ``ParquetSchema.equals`` (C++) is
# much cheaper than rebuilding the plan from the schema's Python objects.
_PLAN_CACHE: tuple | None = None


def _schema_plan(
    schema: Any, num_columns: int
) -> tuple[dict[str, int], set[str], dict[int, _ColType], list[str]]:
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
) -> list[_Row]:
    """Statistics for one file (internal row objects; see :func:`read_footers`).

    ``columns=None``: every top-level column of the file, in schema order
    (an unreadable file then gives no rows with ``on_error="missing"``).
    :func:`rows_to_table` turns the rows into a :data:`STATS_SCHEMA` table.
    """
    try:
        footer, size = _read_footer_bytes(path, filesystem)
        md = _metadata_from_footer(footer)
    except Exception as exc:  # noqa: BLE001 - reported per file when asked
        if on_error == "raise":
            raise
        part = _partition_string(path)
        return [
            _Row(path, c, None, None, None, None, None, None, False, None, None,
                 f"unreadable_file:{type(exc).__name__}: {exc}", 0, 0, 0, part, None)
            for c in (columns or ())
        ]

    created_by = md.created_by
    schema = md.schema
    leaf_of, nested_tops, type_of, top_names = _schema_plan(schema, md.num_columns)
    if columns is None:
        columns = top_names
    partition_keys = hive_partition_values(path)
    part = _partition_string(path)
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
            flags = _exact_flags(footer)
        except Exception:  # noqa: BLE001 - unknown exactness rather than failure
            flags = None

    rows: list[_Row] = []
    for name, idx, ctype, reason in plans:
        if idx is None:
            rows.append(_Row(path, name, None, None, None, None, None, None, False, None, None,
                             reason, num_rgs, file_rows, size, part, created_by))
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
        rows.append(_Row(path, name, ctype, phys, mn, mx, nulls, values, has, mn_exact, mx_exact,
                         reason, num_rgs, file_rows, size, part, created_by))
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


def _to_text(arr: pa.Array) -> pa.Array:
    t = arr.type
    if pa.types.is_binary(t):
        return pa.array([None if v is None else v.hex() for v in arr.to_pylist()], pa.string())
    if pa.types.is_time32(t):
        return arr.view(pa.int32()).cast(pa.string())
    if pa.types.is_time64(t):
        return arr.view(pa.int64()).cast(pa.string())
    if pa.types.is_string(t):
        return arr
    return arr.cast(pa.string())


def bounds_to_text(values: pa.Array) -> pa.Array:
    """The table's lossless text encoding (``min``/``max`` column) of typed bound values.

    Inverse of :func:`decode_bounds`.  Timestamps with a zone are written in
    UTC (``...Z``), as footer bounds of UTC-adjusted columns are.
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    t = values.type
    if pa.types.is_timestamp(t) and t.tz is not None and t.tz != "UTC":
        values = values.cast(pa.timestamp(t.unit, "UTC"))
    elif pa.types.is_large_string(t) or pa.types.is_string_view(t):
        values = values.cast(pa.string())
    elif pa.types.is_large_binary(t) or pa.types.is_binary_view(t) or pa.types.is_fixed_size_binary(t):
        values = values.cast(pa.binary())
    return _to_text(values)


def decode_bounds(text: pa.Array, t: pa.DataType) -> pa.Array:
    """Decode the table's text encoding (``min``/``max`` column) to Arrow type ``t``."""
    if isinstance(text, pa.ChunkedArray):
        text = text.combine_chunks()
    if pa.types.is_binary(t):
        return pa.array([None if v is None else bytes.fromhex(v) for v in text.to_pylist()], pa.binary())
    if pa.types.is_time32(t):
        return text.cast(pa.int32()).view(t)
    if pa.types.is_time64(t):
        return text.cast(pa.int64()).view(t)
    if pa.types.is_string(t):
        return text.cast(pa.string())
    return text.cast(t)


def rows_to_table(rows: list[_Row]) -> pa.Table:
    """A :data:`STATS_SCHEMA` table from :func:`read_file_footer` rows."""
    return _rows_to_table(rows)


def _rows_to_table(rows: list[_Row]) -> pa.Table:
    n = len(rows)
    mins: list[str | None] = [None] * n
    maxs: list[str | None] = [None] * n
    groups: dict[pa.DataType, list[int]] = {}
    for i, r in enumerate(rows):
        if r.ctype is not None and r.ctype.arrow is not None:
            groups.setdefault(r.ctype.arrow, []).append(i)
    for t, idxs in groups.items():
        lo = _to_text(_typed_array([rows[i].min for i in idxs], t)).to_pylist()
        hi = _to_text(_typed_array([rows[i].max for i in idxs], t)).to_pylist()
        for j, i in enumerate(idxs):
            mins[i] = lo[j]
            maxs[i] = hi[j]
    cols = {
        "path": [r.path for r in rows],
        "column": [r.column for r in rows],
        "arrow_type": [
            str(r.ctype.arrow) if r.ctype is not None and r.ctype.arrow is not None else None for r in rows
        ],
        "physical_type": [r.physical_type for r in rows],
        "min": mins,
        "max": maxs,
        "null_count": [r.null_count for r in rows],
        "value_count": [r.value_count for r in rows],
        "has_stats": [r.has_stats for r in rows],
        "min_exact": [r.min_exact for r in rows],
        "max_exact": [r.max_exact for r in rows],
        "reason": [r.reason for r in rows],
        "num_row_groups": [r.num_row_groups for r in rows],
        "file_rows": [r.file_rows for r in rows],
        "file_size": [r.file_size for r in rows],
        "partition": [r.partition for r in rows],
        "created_by": [r.created_by for r in rows],
    }
    return pa.Table.from_pydict(cols, schema=STATS_SCHEMA)


def _normalise_args(paths: Iterable[str] | str, columns: Sequence[str] | str) -> tuple[list[str], list[str]]:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if isinstance(columns, str):
        columns = [columns]
    paths = [os.fspath(p) for p in paths]
    columns = list(columns)
    if len(set(columns)) != len(columns):
        raise ValueError(f"duplicate column names: {columns}")
    return paths, columns


def row_count(path: str, filesystem: Any = None) -> int:
    """Rows in one Parquet file, from its footer (one tail read)."""
    return int(_metadata_from_footer(_read_footer_bytes(path, filesystem)[0]).num_rows)


def read_footers(
    paths: Iterable[str] | str,
    columns: Sequence[str] | str,
    filesystem: Any = None,
    on_error: str = "raise",
) -> pa.Table:
    """Footer statistics of ``columns`` in each file of ``paths``, sequentially.

    Returns a table with :data:`STATS_SCHEMA`, one row per (file, column) in
    input order (files, then columns), except partition columns (skipped).

    ``filesystem``: an optional ``pyarrow.fs.FileSystem``; paths are then in
    its namespace.  Without it, paths are local and read with plain ``open``.
    ``on_error``: ``"raise"`` (default) or ``"missing"`` (an unreadable file
    gives rows with ``has_stats`` false and ``reason = "unreadable_file:..."``).
    """
    paths, columns = _normalise_args(paths, columns)
    if on_error not in ("raise", "missing"):
        raise ValueError("on_error must be 'raise' or 'missing'")
    rows: list[_Row] = []
    for p in paths:
        rows.extend(read_file_footer(p, columns, filesystem, on_error))
    return _rows_to_table(rows)


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
        raise ValueError("on_error must be 'raise' or 'missing'")
    if (max_workers is not None and max_workers <= 1) or len(paths) <= 1:
        return read_footers(paths, columns, filesystem, on_error)
    # Chunk the work so the pool overhead per file stays small.
    workers = max_workers or min(32, (os.cpu_count() or 1) + 4)
    chunk = max(1, min(64, len(paths) // (workers * 4) or 1))
    batches = [paths[i : i + chunk] for i in range(0, len(paths), chunk)]

    def work(batch: list[str]) -> list[_Row]:
        out: list[_Row] = []
        for p in batch:
            out.extend(read_file_footer(p, columns, filesystem, on_error))
        return out

    rows: list[_Row] = []
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="footer") as ex:
        for part in ex.map(work, batches):
            rows.extend(part)
    return _rows_to_table(rows)


# --------------------------------------------------------------------------
# Typed bounds for one column
# --------------------------------------------------------------------------


_FAMILIES = (
    pa.types.is_integer,
    pa.types.is_floating,
    pa.types.is_decimal,
    pa.types.is_timestamp,
    pa.types.is_date,
    pa.types.is_time,
)


def _common_type(column: str, types: list[pa.DataType]) -> pa.DataType:
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
            return pa.unify_schemas(
                [pa.schema([pa.field("x", t)]) for t in distinct], promote_options="permissive"
            ).field("x").type
    raise TypeError(f"column {column!r} has incompatible types across files: {[str(t) for t in distinct]}")


def column_bounds(
    stats_table_or_files: pa.Table | Iterable[str] | str,
    column: str,
    *,
    filesystem: Any = None,
    exact_only: bool = False,
    max_workers: int | None = 16,
) -> tuple[pa.Array, pa.Array, np.ndarray]:
    """Typed ``(mins, maxs, has_stats)`` of ``column``, one entry per file row.

    ``stats_table_or_files`` is a table from :func:`read_footers` (rows of
    other columns are ignored) or file paths (read with
    :func:`read_footers_parallel`).  ``mins``/``maxs`` are Arrow arrays of the
    column's logical type (unified across files with Arrow's permissive
    promotion when files disagree, e.g. int32 and int64 -> int64); null where
    stats are missing or the file's values are all null.  ``has_stats`` is a
    numpy bool array: false = unknown bounds, the file may contain anything.

    ``exact_only=True`` treats bounds that are not known to be exact
    (``min_exact``/``max_exact`` false *or* null, i.e. truncated or unknown)
    as missing.  The default keeps them: truncated bounds are still bounds.
    """
    if isinstance(stats_table_or_files, pa.Table):
        table = stats_table_or_files
    else:
        table = read_footers_parallel(stats_table_or_files, [column], max_workers, filesystem)
    sel = pc.equal(table["column"], column)
    t = table.filter(sel)
    n = t.num_rows
    has = t["has_stats"].to_numpy(zero_copy_only=False).astype(bool, copy=True)
    type_strs = t["arrow_type"].to_pylist()
    distinct = {s for s in type_strs if s is not None}
    if not distinct:
        empty_t = pa.null()
        return pa.nulls(n, empty_t), pa.nulls(n, empty_t), np.zeros(n, dtype=bool)
    types = {s: parse_arrow_type(s) for s in distinct}
    target = _common_type(column, list(types.values()))
    mins_text = t["min"].combine_chunks()
    maxs_text = t["max"].combine_chunks()
    if len(distinct) == 1 and None not in type_strs:
        mins = decode_bounds(mins_text, target)
        maxs = decode_bounds(maxs_text, target)
    else:
        mins_l: list = [None] * n
        maxs_l: list = [None] * n
        for s, ty in types.items():
            idx = np.flatnonzero(np.array([x == s for x in type_strs]))
            take = pa.array(idx)
            lo = decode_bounds(mins_text.take(take), ty).cast(target).to_pylist()
            hi = decode_bounds(maxs_text.take(take), ty).cast(target).to_pylist()
            for j, i in enumerate(idx):
                mins_l[i] = lo[j]
                maxs_l[i] = hi[j]
        mins = pa.array(mins_l, target)
        maxs = pa.array(maxs_l, target)
    if exact_only:
        ex = pc.and_(
            pc.fill_null(t["min_exact"], False), pc.fill_null(t["max_exact"], False)
        ).to_numpy(zero_copy_only=False)
        bounded = pc.is_valid(mins).to_numpy(zero_copy_only=False)
        drop = has & bounded & ~ex
        if drop.any():
            has = has & ~drop
            keep = pa.array(~drop)
            mins = pc.if_else(keep, mins, pa.scalar(None, target))
            maxs = pc.if_else(keep, maxs, pa.scalar(None, target))
    return mins, maxs, has
