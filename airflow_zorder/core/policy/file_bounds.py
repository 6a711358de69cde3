"""Per-file min/max bounds of one column as numpy sort keys, with each file's status (bounded, empty, unknown).

Every metric and the pruning evaluator work on these keys: :func:`prepare_bounds` turns typed bounds (ints,
floats, decimals, dates, timestamps, strings, binary, bool) and optional query values into :class:`FileBounds`,
keys with the same order and equality as the values (floats and decimals through the one value-order codec,
:mod:`~airflow_zorder.core.stats.value_order`). Bounds as returned by
:func:`airflow_zorder.core.stats.stats_schema.column_bounds` (Arrow or numpy arrays of any orderable type).

File status (the "never guess" rule of the pruning evaluator)
--------------------------------------------------------------
* *bounded*: ``has_stats`` and both bounds present, ``min <= max``: the file
  may contain ``v`` iff ``min <= v <= max``.
* *empty*: ``has_stats`` and both bounds null: every value is null (footer
  stats of an all-null column), so the file never contains a non-null ``v``.
* *unknown*: anything else (``has_stats`` false, one bound null, a NaN bound,
  ``min > max``): the file may contain anything and is never pruned.

Float bounds exclude NaN (Parquet spec), so a NaN query value prunes nothing
but *empty* files.  ``-0.0 == 0.0`` as in IEEE comparisons.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.stats import value_order

__all__ = ["ArrayLike", "FileBounds", "arrow_bounds", "prepare_bounds"]

ArrayLike = Any  # pa.Array | pa.ChunkedArray | np.ndarray | Sequence


@dataclass(frozen=True)
class FileBounds:
    """Per-file bounds of one column as numpy sort keys.

    ``lo``/``hi`` have one entry per file (only meaningful where ``bounded``);
    keys are int64, uint64 or float64 and compare exactly like the original
    values (dense sort ranks for strings, binary and decimals).
    """

    lo: np.ndarray
    hi: np.ndarray
    bounded: np.ndarray  # bool: usable [lo, hi]
    empty: np.ndarray  # bool: stats say no non-null value

    @property
    def num_files(self) -> int:
        return int(self.lo.shape[0])

    @property
    def unknown(self) -> np.ndarray:
        """Files that can never be pruned (missing / untrustworthy stats)."""
        return ~(self.bounded | self.empty)


def _to_arrow(x: ArrayLike, type_: pa.DataType | None = None) -> pa.Array:
    if isinstance(x, pa.ChunkedArray):
        x = x.combine_chunks()
    if isinstance(x, pa.Array):
        arr = x
    elif isinstance(x, np.ndarray):
        if x.dtype == object:
            arr = pa.array(x.tolist())
        else:
            arr = pa.array(x)  # NaN stays NaN, NaT becomes null
    else:
        seq = list(x)
        if any(isinstance(v, dt.datetime) for v in seq) and any(
            isinstance(v, dt.date) and not isinstance(v, dt.datetime) for v in seq
        ):
            # pa.array([date, datetime]) infers date32 and silently truncates the datetime
            seq = [
                dt.datetime(v.year, v.month, v.day) if isinstance(v, dt.date) and not isinstance(v, dt.datetime) else v
                for v in seq
            ]
        try:
            arr = pa.array(seq)
        except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
            # e.g. Python ints beyond int64: the bounds' type (uint64), else exact decimals
            try:
                if type_ is None:
                    raise
                arr = pa.array(seq, type=type_)
                if arr.to_pylist() != seq:  # e.g. Decimal("5.5") silently truncated to an int64 5
                    raise pa.ArrowInvalid("lossy conversion")
            except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
                exact = (int, Decimal)
                if not all(v is None or (isinstance(v, exact) and not isinstance(v, bool)) for v in seq):
                    raise
                if all(v is None or isinstance(v, int) for v in seq):
                    arr = pa.array([None if v is None else Decimal(v) for v in seq], pa.decimal128(38, 0))
                else:  # ints mixed with Decimals: exact decimals
                    arr = pa.array([None if v is None else Decimal(v) for v in seq])
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    t = arr.type
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        arr = arr.cast(pa.string())
    elif pa.types.is_large_binary(t) or pa.types.is_binary_view(t) or pa.types.is_fixed_size_binary(t):
        arr = arr.cast(pa.binary())
    elif pa.types.is_float16(t):
        arr = arr.cast(pa.float32())
    return arr


def _valid_mask(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.ones(len(arr), dtype=bool)
    return pc.is_valid(arr).to_numpy(zero_copy_only=False)


def _filled(arr: Any, value: Any) -> Any:
    """``arr`` with its nulls replaced by ``value``; the array itself when it has none (a compute call spared: the
    common case, and a fleet's planning makes thousands of them)."""
    return arr if arr.null_count == 0 else pc.fill_null(arr, value)


def _int_keys(arrays: list[pa.Array], dtype: pa.DataType, np_dtype: Any) -> list[np.ndarray] | None:
    try:
        cast = [a.cast(dtype, safe=True) for a in arrays]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return [_filled(a, 0).to_numpy(zero_copy_only=False).astype(np_dtype, copy=False) for a in cast]


def _rank_keys(arrays: list[pa.Array]) -> list[np.ndarray]:
    """Dense sort ranks over the union of ``arrays`` (exact order and equality)."""
    lengths = [len(a) for a in arrays]
    allv = pa.concat_arrays(arrays)
    ranks = pc.rank(allv, sort_keys="ascending", tiebreaker="dense")  # nulls rank last (masked anyway)
    r = ranks.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    out = []
    start = 0
    for n in lengths:
        out.append(r[start : start + n])
        start += n
    return out


_INT_DIGITS = {8: 3, 16: 5, 32: 10, 64: 19}


def _as_decimal(t: pa.DataType) -> pa.DataType:
    if pa.types.is_integer(t):
        digits = _INT_DIGITS[t.bit_width] + (1 if t.bit_width == 64 and pa.types.is_unsigned_integer(t) else 0)
        return pa.decimal128(digits, 0)
    return t


def _family(t: pa.DataType) -> str:
    """Comparable kinds: query values are only converted within a family (or parsed from text)."""
    if pa.types.is_null(t):
        return "null"
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        return "datetime"
    if pa.types.is_time(t):
        return "time"
    if pa.types.is_string(t) or pa.types.is_binary(t):
        return "text"
    return str(t)


def _common_value_type(t: pa.DataType, u: pa.DataType) -> pa.DataType:
    if t == u:
        return t
    if pa.types.is_null(u):
        return t
    if pa.types.is_null(t):
        return u
    num = (pa.types.is_integer, pa.types.is_floating, pa.types.is_decimal)
    if any(f(t) for f in num) and any(f(u) for f in num):
        if pa.types.is_floating(t) or pa.types.is_floating(u):
            return pa.float64()
        if pa.types.is_integer(t) and pa.types.is_integer(u):
            return t  # handled by _encode (int64 / uint64 / exact fallback)
        # decimal with decimal or integer: exact common decimal type
        t, u = _as_decimal(t), _as_decimal(u)
        return (
            pa.unify_schemas(
                [pa.schema([pa.field("x", t)]), pa.schema([pa.field("x", u)])], promote_options="permissive"
            )
            .field("x")
            .type
        )
    if pa.types.is_timestamp(t) and pa.types.is_timestamp(u) and t.tz == u.tz:
        return (
            pa.unify_schemas(
                [pa.schema([pa.field("x", t)]), pa.schema([pa.field("x", u)])], promote_options="permissive"
            )
            .field("x")
            .type
        )  # finer unit
    if pa.types.is_date(t) and pa.types.is_timestamp(u):
        return u  # a date is midnight: exact as a timestamp (the reverse cast would truncate)
    if pa.types.is_date(t) and pa.types.is_date(u):
        return pa.date64()  # exact for both
    return t  # cast the query values to the bounds' type


def _encode(arrays: list[pa.Array]) -> list[np.ndarray]:
    """Numpy sort keys for arrays of one common Arrow type (nulls -> arbitrary key)."""
    t = arrays[0].type
    if pa.types.is_integer(t):
        keys = _int_keys(arrays, pa.int64(), np.int64)
        if keys is None:
            keys = _int_keys(arrays, pa.uint64(), np.uint64)
        if keys is None:  # mixed signs beyond int64: exact via decimal ranks
            keys = _rank_keys([a.cast(pa.decimal128(38, 0)) for a in arrays])
        return keys
    if pa.types.is_floating(t):  # normalised values (-0.0 -> 0.0, one NaN): they double as positions
        return [value_order.float_keys(a)[0] for a in arrays]
    if pa.types.is_boolean(t):
        return [_filled(a, False).to_numpy(zero_copy_only=False).astype(np.uint8) for a in arrays]
    if pa.types.is_temporal(t):  # date, timestamp, time, duration: integer counts of one unit
        width = pa.int32() if t.bit_width == 32 else pa.int64()
        return [
            _filled(a.view(width) if a.null_count == 0 else a.cast(width), 0)
            .to_numpy(zero_copy_only=False)
            .astype(np.int64, copy=False)
            for a in arrays
        ]
    if pa.types.is_decimal(t) and t.bit_width == 128 and t.precision <= 18:
        # unscaled values fit in int64: the low word of the 128-bit two's complement is exact
        return [value_order.decimal_keys(a) for a in arrays]
    # decimals, strings, binary and anything else orderable by Arrow: exact ranks
    return _rank_keys(arrays)


def arrow_bounds(mins: ArrayLike, maxs: ArrayLike) -> tuple[pa.Array, pa.Array]:
    """``mins`` and ``maxs`` as Arrow arrays of one type (all-null bounds take the other side's type)."""
    lo_a = _to_arrow(mins)
    hi_a = _to_arrow(maxs, lo_a.type)
    if len(hi_a) != len(lo_a):
        raise ValueError(f"mins and maxs differ in length: {len(lo_a)} != {len(hi_a)}")
    if lo_a.type != hi_a.type:
        if pa.types.is_null(lo_a.type):
            lo_a = lo_a.cast(hi_a.type)
        else:
            hi_a = hi_a.cast(lo_a.type)
    return lo_a, hi_a


def prepare_bounds(
    mins: ArrayLike,
    maxs: ArrayLike,
    has_stats: ArrayLike | None = None,
    values: ArrayLike | None = None,
) -> tuple[FileBounds, np.ndarray | None, np.ndarray | None]:
    """Normalise bounds (and optional query values) to comparable numpy keys.

    Returns ``(bounds, value_keys, value_valid)``; ``value_keys`` is None when
    ``values`` is None.  ``has_stats=None`` means "stats present for every
    file" (files whose bounds are both null then count as empty).  Query
    values (Python ints/floats/str/Decimal/date/datetime, numpy or Arrow
    arrays) are converted exactly to a type common with the bounds, within
    one family only: numbers (ints of any sign/width, decimals of any scale;
    with floats involved, float64), dates/timestamps (finer unit), strings/
    binary, bool, times.  Text values may also be parsed into the bounds' type
    (``"2024-01-31"`` for a date column).  Anything else raises ``TypeError``.
    """
    lo_a, hi_a = arrow_bounds(mins, maxs)
    n = len(lo_a)
    if has_stats is None:
        has = np.ones(n, dtype=bool)
    else:
        if isinstance(has_stats, (pa.Array, pa.ChunkedArray)):
            has = _filled(has_stats, False).to_numpy(zero_copy_only=False)
        else:
            has = np.asarray(has_stats)
        has = has.astype(bool, copy=False).reshape(-1)
        if has.shape[0] != n:
            raise ValueError(f"has_stats has {has.shape[0]} entries for {n} files")

    arrays = [lo_a, hi_a]
    val_a = None
    if values is not None:
        if np.isscalar(values) or isinstance(values, pa.Scalar):
            values = [values.as_py() if isinstance(values, pa.Scalar) else values]
        val_a = _to_arrow(values, lo_a.type)
        target = _common_value_type(lo_a.type, val_a.type)
        if pa.types.is_null(target):
            target = val_a.type if not pa.types.is_null(val_a.type) else pa.int64()
        fam_b, fam_v = _family(lo_a.type), _family(val_a.type)
        if not (fam_b == fam_v or fam_v in ("null", "text") or fam_b == "null"):
            raise TypeError(f"query values of type {val_a.type} are not comparable with bounds of type {lo_a.type}")
        both_int = pa.types.is_integer(lo_a.type) and pa.types.is_integer(val_a.type)
        try:
            if both_int:
                pass  # _encode finds an exact common integer key (int64, uint64 or decimal ranks)
            elif lo_a.type != target:
                lo_a, hi_a = lo_a.cast(target), hi_a.cast(target)
            if not both_int and val_a.type != target:
                val_a = val_a.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise TypeError(
                f"query values of type {val_a.type} are not comparable with bounds of type {lo_a.type}: {exc}"
            ) from exc
        arrays = [lo_a, hi_a, val_a]
    elif pa.types.is_null(lo_a.type):
        arrays = [lo_a.cast(pa.int64()), hi_a.cast(pa.int64())]

    lo_ok = _valid_mask(arrays[0])
    hi_ok = _valid_mask(arrays[1])
    keys = _encode(arrays)
    lo_k, hi_k = keys[0], keys[1]
    bounded = has & lo_ok & hi_ok
    if lo_k.dtype.kind == "f":
        bounded &= ~(np.isnan(lo_k) | np.isnan(hi_k))
    bounded &= ~(lo_k > hi_k)  # inconsistent stats are not trusted
    empty = has & ~lo_ok & ~hi_ok
    fb = FileBounds(lo=lo_k, hi=hi_k, bounded=bounded, empty=empty)
    if val_a is None:
        return fb, None, None
    return fb, keys[2], _valid_mask(arrays[2])
