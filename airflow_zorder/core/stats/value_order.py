"""The one value-order codec: typed bound values to order-preserving keys, and to lossless text and back.

Airflow-free and Spark-free (pyarrow + numpy), shipped to the executors.  Every place that compares bound
values of any type goes through here: the stats table's binary ``min_key``/``max_key`` and its text bounds
(:mod:`~airflow_zorder.core.stats.stats_schema`), the metrics' numpy sort keys
(:mod:`~airflow_zorder.core.policy.metrics`) and the clustering job's range ids
(:mod:`~airflow_zorder.core.layout.ranges`).

Three representations
---------------------
numpy sort keys (:func:`sort_keys`, :func:`float_keys`, :func:`decimal_keys`)
    Fixed-width numpy arrays whose order and equality are the values' (vectorised, zero-copy where the
    Arrow buffer allows; slots under nulls are arbitrary).  Floats: ``-0.0 == 0.0``, every NaN equal and
    above ``+inf`` (Spark's order).
binary keys (:func:`order_keys`, :func:`order_key`)
    Bytes whose memcmp order is the value order, for every atomic type (encodings below); what the stats
    table stores, so SQL engines prune with ``min_key <= k AND k <= max_key``.
text (:func:`bounds_to_text`, :func:`decode_bounds`, :func:`parse_arrow_type`)
    The stats table's lossless per-type text (``min_value``/``max_value``), decoded by the ``arrow_type``
    string that names the type:

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

:func:`numeric_values` is the lossy float view (``min_num``/``max_num``, charts only).

Binary key encodings (big-endian throughout; keys are only compared within one column):
  integers, dates (days), times (ns since midnight): 9 bytes = v + 2**63 as an unsigned 72-bit number
      (covers int64 and uint64 alike)
  floats: 8 bytes, the total-order key of :func:`float_keys` with the sign bit flipped (-0.0 keyed as
      +0.0, NaN as the canonical quiet NaN, above +inf)
  timestamps (any unit, any zone): 8 bytes of the whole seconds (int64, sign bit flipped) + 4 bytes of
      nanoseconds within the second
  decimals: scale-independent variable-length key: 0x80 for zero; else a sign byte (0x40 negative, 0xC0
      positive), then the decimal exponent E (value = 0.d1d2d3... x 10**E) as 4 bytes (E + 2**31), the
      significant digits as ASCII without trailing zeros, and a 0x00 terminator; for negatives every byte
      after the sign byte is inverted
  booleans: 1 byte; strings: their UTF-8 bytes; binary: the bytes
"""

from __future__ import annotations

import decimal
import re
import struct
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "decimal_type",
    "parse_arrow_type",
    "bounds_to_text",
    "decode_bounds",
    "fixed_view",
    "float_keys",
    "decimal_keys",
    "sort_keys",
    "order_keys",
    "order_key",
    "numeric_values",
]

PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


# --------------------------------------------------------------------------
# Arrow type names
# --------------------------------------------------------------------------


def decimal_type(precision: int, scale: int) -> pa.DataType:
    """``decimal128(p, s)``, or ``decimal256`` above precision 38: the type decimal bounds are kept in."""
    return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)


_TYPE_SIMPLE = {
    "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
    "uint8": pa.uint8(), "uint16": pa.uint16(), "uint32": pa.uint32(), "uint64": pa.uint64(),
    "halffloat": pa.float16(), "float": pa.float32(), "double": pa.float64(),
    "bool": pa.bool_(), "date32[day]": pa.date32(), "date64[ms]": pa.date64(),
    "string": pa.string(), "large_string": pa.string(), "string_view": pa.string(),
    "binary": pa.binary(), "large_binary": pa.binary(), "binary_view": pa.binary(),
}  # fmt: skip
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
        return decimal_type(int(m.group(2)), int(m.group(3)))
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
# Text
# --------------------------------------------------------------------------


def bounds_to_text(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The stats table's lossless text (``min_value``/``max_value``) of typed bound values.

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
    t = values.type
    if pa.types.is_binary(t):
        return pa.array([None if v is None else v.hex() for v in values.to_pylist()], pa.string())
    if pa.types.is_time32(t):
        return values.view(pa.int32()).cast(pa.string())
    if pa.types.is_time64(t):
        return values.view(pa.int64()).cast(pa.string())
    if pa.types.is_string(t):
        return values
    return values.cast(pa.string())


def decode_bounds(text: pa.Array | pa.ChunkedArray, t: pa.DataType) -> pa.Array:
    """Decode the stats table's text (``min_value``/``max_value``) to Arrow type ``t``."""
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


# --------------------------------------------------------------------------
# numpy sort keys
# --------------------------------------------------------------------------

_SIGN64 = np.uint64(1 << 63)
_F64_NAN_BITS = np.int64(0x7FF8000000000000)
_LOW63 = np.int64(0x7FFFFFFFFFFFFFFF)


def fixed_view(arr: pa.Array, dtype: np.dtype) -> np.ndarray:
    """Zero-copy numpy view of a fixed-width array's data buffer (slot values under nulls are arbitrary)."""
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=dtype)
    width = arr.type.byte_width
    count = n * width // dtype.itemsize
    buf = arr.buffers()[1]
    if buf is None:  # all null, no data buffer
        return np.zeros(count, dtype=dtype)
    return np.frombuffer(buf, dtype=dtype, count=count, offset=arr.offset * width)


def float_keys(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(normalised float64 values, int64 total-order keys) of a float array.

    -0.0 -> 0.0 and every NaN -> one canonical NaN, keyed above +inf.
    """
    raw = fixed_view(arr, np.dtype(f"float{arr.type.bit_width}"))
    f = raw.astype(np.float64)  # always a fresh copy; float16/32 -> float64 is exact
    with np.errstate(invalid="ignore"):  # signalling NaNs would warn
        f += 0.0  # IEEE: -0.0 + 0.0 == +0.0
    bits = f.view(np.int64)
    nan = np.isnan(f)
    if nan.any():
        bits[nan] = _F64_NAN_BITS  # canonical quiet NaN, positive sign: above +inf
    # Sign-magnitude -> two's complement: flip the magnitude bits of negatives.
    keys = bits ^ ((bits >> 63) & _LOW63)
    return f, keys


def decimal_keys(arr: pa.Array) -> np.ndarray:
    """Exact order keys of decimals: int64 when precision <= 18, else big-endian sign-flipped bytes (S16/S32)."""
    t = arr.type
    if t.byte_width == 16 and t.precision <= 18:
        # |unscaled| < 10**18 < 2**63: the low little-endian word *is* the value.
        return fixed_view(arr, np.dtype("<i8"))[0::2]
    width = t.byte_width
    raw = fixed_view(arr, np.dtype("u1")).reshape(-1, width)
    be = raw[:, ::-1].copy()  # little-endian two's complement -> big-endian
    be[:, 0] ^= 0x80  # flip the sign bit: unsigned byte order == numeric order
    return be.view(f"S{width}").reshape(-1)  # numpy compares S as memcmp of equal-width items


def sort_keys(arr: pa.Array) -> np.ndarray:
    """numpy keys in value order for bool, integer, temporal, float and decimal arrays (TypeError otherwise).

    Integers and temporal types keep their stored integer (dates in days, timestamps in their unit);
    slots under nulls are arbitrary.
    """
    t = arr.type
    if pa.types.is_boolean(t):
        return pc.fill_null(arr, False).to_numpy(zero_copy_only=False).view(np.uint8)
    if pa.types.is_integer(t):
        signed = not pa.types.is_unsigned_integer(t)
        return fixed_view(arr, np.dtype(f"{'i' if signed else 'u'}{t.bit_width // 8}"))
    if pa.types.is_temporal(t) and not (pa.types.is_duration(t) or pa.types.is_interval(t)):
        return fixed_view(arr, np.dtype(f"i{t.bit_width // 8}"))
    if pa.types.is_floating(t):
        return float_keys(arr)[1]
    if pa.types.is_decimal(t):
        return decimal_keys(arr)
    raise TypeError(f"no numpy sort keys for Arrow type {t}")


# --------------------------------------------------------------------------
# Binary keys
# --------------------------------------------------------------------------


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


def _float_key_np(arr: pa.Array) -> np.ndarray:
    """(n, 8) uint8 keys of a float array: the total-order key with the sign bit flipped, big-endian."""
    keys = float_keys(arr)[1].view(np.uint64) ^ _SIGN64
    return keys.astype(">u8").view(np.uint8).reshape(len(arr), 8)


def _timestamp_key_np(v: np.ndarray, unit: str) -> np.ndarray:
    per = PER_SECOND[unit]
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
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        return values.cast(pa.binary())
    if pa.types.is_boolean(t):
        b = np.asarray(values.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.uint8).reshape(n, 1)
        return _rows_to_binary(b, valid)
    if pa.types.is_integer(t):
        filled = values.fill_null(0).to_numpy(zero_copy_only=False)
        return _rows_to_binary(_int_key_np(filled, pa.types.is_unsigned_integer(t)), valid)
    if pa.types.is_floating(t):
        return _rows_to_binary(_float_key_np(values), valid)
    if pa.types.is_date32(t):
        filled = values.view(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        return _rows_to_binary(_int_key_np(filled, False), valid)
    if pa.types.is_date64(t):
        ms = values.view(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        return _rows_to_binary(_int_key_np(np.floor_divide(ms, 86_400_000), False), valid)
    if pa.types.is_time32(t) or pa.types.is_time64(t):
        raw = values.view(pa.int32() if pa.types.is_time32(t) else pa.int64()).fill_null(0)
        ns = raw.to_numpy(zero_copy_only=False).astype(np.int64) * (1_000_000_000 // PER_SECOND[t.unit])
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
    accepted too (decoded with :func:`decode_bounds`).
    """
    t = parse_arrow_type(arrow_type) if isinstance(arrow_type, str) else arrow_type
    if value is None:
        return None
    if pa.types.is_decimal(t):  # the key is scale-independent: any exact decimal value will do
        d = value if isinstance(value, decimal.Decimal) else decimal.Decimal(str(value))
        if not d.is_finite():
            raise ValueError(f"not a finite decimal: {value!r}")
        return _decimal_key(d)
    if isinstance(value, str) and not pa.types.is_string(t):
        arr = decode_bounds(pa.array([value], pa.string()), t)
    else:
        arr = pa.array([value], t)
    return order_keys(arr)[0].as_py()


# --------------------------------------------------------------------------
# Lossy numeric view
# --------------------------------------------------------------------------


def numeric_values(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """float64 view of bound values for charts: numbers, booleans 0/1, dates in days, timestamps in seconds
    since the epoch, times in seconds since midnight; null for strings and binary."""
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
        return pc.divide(raw, float(PER_SECOND[t.unit]))
    return pa.nulls(n, pa.float64())
