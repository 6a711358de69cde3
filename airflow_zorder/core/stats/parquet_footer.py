"""The Parquet footer on its own: one tail read, pyarrow's parse, and a small Thrift compact-protocol reader.

Airflow-free and Spark-free (pyarrow only), shipped to the executors.  :func:`read_footer_bytes` reads a
file's Thrift ``FileMetaData`` with one tail read (two for huge footers); :func:`metadata_from_footer`
parses it with pyarrow; :func:`exact_flags` decodes the Parquet 2.10 ``is_min_value_exact`` /
``is_max_value_exact`` statistics fields, which pyarrow does not expose (parquet-rs writers truncate
byte-array bounds and say so there).  Per-file statistics are built from these in
:mod:`~airflow_zorder.core.stats.footer_stats`.
"""

from __future__ import annotations

import os
import struct
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

try:  # the low-level reader behind pq.ParquetFile (see metadata_from_footer)
    from pyarrow._parquet import ParquetReader as _ParquetReader
except ImportError:  # pragma: no cover - other pyarrow layouts: use the public path
    _ParquetReader = None

__all__ = ["ExactFlags", "read_footer_bytes", "metadata_from_footer", "exact_flags"]

#: ``flags[row_group][leaf_column] = (is_min_value_exact, is_max_value_exact)``; None = not written.
ExactFlags = list[list[tuple[bool | None, bool | None]]]

_MAGIC = b"PAR1"
_MAGIC_ENCRYPTED = b"PARE"
_TAIL_READ = 64 * 1024
_LOCAL_TAIL_READ = 16 * 1024
_KEY_VALUES_LIMIT = 64 * 1024  # larger key-value metadata is dropped before parsing (a Hudi bloom filter)

# --------------------------------------------------------------------------
# Footer bytes
# --------------------------------------------------------------------------


def read_footer_bytes(path: str, filesystem: Any) -> tuple[bytes, int]:
    """(Thrift FileMetaData bytes, file size) with one tail read (two if huge).

    ``filesystem``: a ``pyarrow.fs.FileSystem``, or None for a local path (positional OS reads).
    """
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


def drop_large_key_values(footer: bytes, limit: int = _KEY_VALUES_LIMIT) -> bytes:
    """The footer without its key-value metadata when that holds more than ``limit`` bytes, else unchanged.

    Apache Hudi writes a bloom filter of its record keys there (~430 KB a file by default): parsing it into pyarrow
    (and Python) for every file costs more than the statistics, and none of them is in it. The fields after it
    (``created_by``, ``column_orders``) stay; the next field's header is re-encoded (compact protocol field ids are
    deltas from the previous field's).
    """
    i, fid = 0, 0
    while True:
        start = i
        fid_before = fid
        fid, t, i = _field(footer, i, fid)
        if t == _CT_STOP:
            return footer
        end = _skip(footer, i, t)
        if fid != 5:  # FileMetaData.key_value_metadata
            i = end
            continue
        if end - start <= limit:
            return footer
        nid, nt, rest = _field(footer, end, fid)
        if nt == _CT_STOP:
            return footer[:start] + footer[end:]
        delta = nid - fid_before
        header = bytes([(delta << 4) | nt]) if 0 < delta <= 15 else bytes([nt]) + _zigzag16(nid)
        return footer[:start] + header + footer[rest:]


def _zigzag16(n: int) -> bytes:
    z = (n << 1) ^ (n >> 15)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def metadata_from_footer(footer: bytes) -> pq.FileMetaData:
    """pyarrow's ``FileMetaData`` parsed from the Thrift bytes of :func:`read_footer_bytes` (a large key-value
    metadata left out: :func:`drop_large_key_values`)."""
    if len(footer) > _KEY_VALUES_LIMIT:
        footer = drop_large_key_values(footer)
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


def exact_flags(footer: bytes) -> ExactFlags:
    """``flags[row_group][leaf_column] = (is_min_value_exact, is_max_value_exact)`` from the Thrift bytes.

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
