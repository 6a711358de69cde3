"""Data-skipping and clustering metrics over per-file min/max bounds.

The project's one metrics module (Airflow-free, Spark-free: numpy + pyarrow).
Everything here works on per-file bounds of one column -- ``mins``, ``maxs``
(Arrow arrays or numpy arrays of any orderable type) and ``has_stats`` -- as
returned by :func:`airflow_zorder.core.footer_stats.column_bounds`.

Layout
------
1. Bound normalisation: :func:`prepare_bounds` turns typed bounds (ints,
   floats, decimals, dates, timestamps, strings, binary, bool) into
   :class:`FileBounds`: numpy sort keys with the same order and equality as
   the values, plus per-file status masks.  Every metric is built on it, so
   all types are handled exactly once, here.  (Overlap/depth metrics --
   Snowflake's ``SYSTEM$CLUSTERING_INFORMATION`` -- will be added on top of
   the same keys with sweep lines / binary searches.)
2. Point-query pruning: :func:`point_query_fractions`,
   :func:`mean_point_query_fraction`.
3. Reference values: :func:`ideal_point_query_fraction`.
4. Table-level helper tying footer statistics to the metrics:
   :func:`files_fraction_for_columns`.

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

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "FileBounds",
    "prepare_bounds",
    "point_query_fractions",
    "mean_point_query_fraction",
    "ideal_point_query_fraction",
    "files_fraction_for_columns",
]

ArrayLike = Any  # pa.Array | pa.ChunkedArray | np.ndarray | Sequence


# --------------------------------------------------------------------------
# 1. Bound normalisation
# --------------------------------------------------------------------------


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
        try:
            arr = pa.array(seq)
        except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
            # e.g. Python ints beyond int64: the bounds' type (uint64), else exact decimals
            try:
                if type_ is None:
                    raise
                arr = pa.array(seq, type=type_)
            except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
                if not all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in seq):
                    raise
                arr = pa.array([None if v is None else Decimal(v) for v in seq], pa.decimal128(38, 0))
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


def _int_keys(arrays: list[pa.Array], dtype: pa.DataType, np_dtype: Any) -> list[np.ndarray] | None:
    try:
        cast = [a.cast(dtype, safe=True) for a in arrays]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return [pc.fill_null(a, 0).to_numpy(zero_copy_only=False).astype(np_dtype, copy=False) for a in cast]


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
        return pa.unify_schemas(
            [pa.schema([pa.field("x", t)]), pa.schema([pa.field("x", u)])], promote_options="permissive"
        ).field("x").type
    if pa.types.is_timestamp(t) and pa.types.is_timestamp(u) and t.tz == u.tz:
        return pa.unify_schemas(
            [pa.schema([pa.field("x", t)]), pa.schema([pa.field("x", u)])], promote_options="permissive"
        ).field("x").type  # finer unit
    return t  # cast the query values to the bounds' type


def _decimal128_low_words(a: pa.Array) -> np.ndarray:
    buf = a.buffers()[1]
    words = np.frombuffer(buf, dtype="<i8", count=2 * (a.offset + len(a)))
    out = words[2 * a.offset :: 2].astype(np.int64, copy=True)
    if a.null_count:
        out[~_valid_mask(a)] = 0
    return out


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
    if pa.types.is_floating(t):
        return [a.cast(pa.float64()).to_numpy(zero_copy_only=False).astype(np.float64, copy=False) for a in arrays]
    if pa.types.is_boolean(t):
        return [pc.fill_null(a, False).to_numpy(zero_copy_only=False).astype(np.uint8) for a in arrays]
    if pa.types.is_temporal(t):  # date, timestamp, time, duration: integer counts of one unit
        width = pa.int32() if t.bit_width == 32 else pa.int64()
        return [
            pc.fill_null(a.view(width) if a.null_count == 0 else a.cast(width), 0)
            .to_numpy(zero_copy_only=False)
            .astype(np.int64, copy=False)
            for a in arrays
        ]
    if pa.types.is_decimal(t) and t.bit_width == 128 and t.precision <= 18:
        # unscaled values fit in int64: the low word of the 128-bit two's complement is exact
        return [_decimal128_low_words(a) for a in arrays]
    # decimals, strings, binary and anything else orderable by Arrow: exact ranks
    return _rank_keys(arrays)


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
    lo_a = _to_arrow(mins)
    hi_a = _to_arrow(maxs, lo_a.type)
    n = len(lo_a)
    if len(hi_a) != n:
        raise ValueError(f"mins and maxs differ in length: {n} != {len(hi_a)}")
    if lo_a.type != hi_a.type:
        if pa.types.is_null(lo_a.type):
            lo_a = lo_a.cast(hi_a.type)
        else:
            hi_a = hi_a.cast(lo_a.type)
    if has_stats is None:
        has = np.ones(n, dtype=bool)
    else:
        if isinstance(has_stats, (pa.Array, pa.ChunkedArray)):
            has = pc.fill_null(has_stats, False).to_numpy(zero_copy_only=False)
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
            raise TypeError(f"query values of type {val_a.type} are not comparable with bounds of type {lo_a.type}: {exc}") from exc
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


# --------------------------------------------------------------------------
# 2. Point queries
# --------------------------------------------------------------------------


def _point_counts(fb: FileBounds, vk: np.ndarray, vvalid: np.ndarray) -> np.ndarray:
    """Number of files that may contain each query key (float64; NaN for null queries)."""
    lo_s = np.sort(fb.lo[fb.bounded])
    hi_s = np.sort(fb.hi[fb.bounded])
    n_unknown = int(np.count_nonzero(fb.unknown))
    # min <= v  minus  max < v  ==  min <= v <= max, because min <= max for every bounded file
    counts = (np.searchsorted(lo_s, vk, side="right") - np.searchsorted(hi_s, vk, side="left")).astype(np.float64)
    counts += n_unknown
    if vk.dtype.kind == "f":
        nan_q = np.isnan(vk)
        if nan_q.any():
            counts[nan_q] = n_unknown + lo_s.shape[0]  # bounds exclude NaN: prune nothing but empty files
    counts[~vvalid] = np.nan
    return counts


def point_query_fractions(
    mins: ArrayLike,
    maxs: ArrayLike,
    has_stats: ArrayLike | None,
    values: ArrayLike,
) -> np.ndarray:
    """Fraction of files that may contain each value of ``values`` (``c = v``).

    A file may contain ``v`` when ``min <= v <= max``; files with missing stats
    always count ("never pruned"), all-null files never count (see the module
    docstring).  The denominator is the total number of files.  Null query
    values give NaN.

    O((N + Q) log N): the bounds are sorted once and each query is two
    binary searches (``#(min <= v) - #(max < v)``).  Numbers, dates, times and
    timestamps compare on their native numpy representation; strings,
    binary and decimals through exact dense sort ranks of the union of bounds
    and queries.
    """
    fb, vk, vvalid = prepare_bounds(mins, maxs, has_stats, values)
    assert vk is not None and vvalid is not None
    if fb.num_files == 0:
        return np.full(vk.shape[0], np.nan)
    return _point_counts(fb, vk, vvalid) / fb.num_files


def mean_point_query_fraction(
    mins: ArrayLike,
    maxs: ArrayLike,
    has_stats: ArrayLike | None,
    values: ArrayLike,
) -> float:
    """Mean of :func:`point_query_fractions` over the non-null query values (NaN if none)."""
    fr = point_query_fractions(mins, maxs, has_stats, values)
    fr = fr[~np.isnan(fr)]
    return float(fr.mean()) if fr.size else float("nan")


# --------------------------------------------------------------------------
# 3. Reference values
# --------------------------------------------------------------------------


def ideal_point_query_fraction(num_files: int, num_clustering_columns: int) -> float:
    """Ideal expected fraction of files a point query on one clustering column reads.

    ``num_files ** (-1 / num_clustering_columns)``.

    Reasoning: a perfect clustering on ``d`` columns with independent, evenly
    spread values cuts the ``d``-dimensional value space into ``N`` cells of
    equal mass, one per file -- at best a grid with ``N ** (1/d)`` slices along
    each column.  A point query fixes one coordinate, i.e. hits one slice of
    that column, and every one of the ``N ** ((d-1)/d)`` files in the slice
    must be read: ``N ** (1 - 1/d)`` files, a fraction ``N ** (-1/d)``.  No
    layout does better for all ``d`` columns at once: if a query on column ``k``
    reads ``f_k`` of the files, the files' ranges must cut the space into at
    most ``prod(1/f_k)`` cells, so ``prod(1/f_k) >= N`` and, symmetrically,
    ``f_k >= N ** (-1/d)``.  ``d = 1`` is a plain sort (one file, ``1/N``);
    64 files on 3 columns -> 0.25 (a 4 x 4 x 4 grid).  Z-order and Hilbert
    curves reach this up to a small constant factor (cells straddling slice
    boundaries).
    """
    if num_files < 1:
        raise ValueError("num_files must be >= 1")
    if num_clustering_columns < 1:
        raise ValueError("num_clustering_columns must be >= 1")
    return float(num_files) ** (-1.0 / num_clustering_columns)


# --------------------------------------------------------------------------
# 4. Table-level helpers
# --------------------------------------------------------------------------


def files_fraction_for_columns(
    table_dir_or_files: str | os.PathLike | Sequence[str] | pa.Table,
    columns: Sequence[str],
    values_per_column: Mapping[str, ArrayLike] | Sequence[ArrayLike],
    *,
    filesystem: Any = None,
    max_workers: int | None = 16,
) -> dict[str, float]:
    """Mean fraction of files a point query reads, per column, from footer stats.

    ``table_dir_or_files``: a table directory (all ``*.parquet`` below it,
    hidden/underscore entries skipped), a list of Parquet files, or a stats
    table from :func:`~airflow_zorder.core.footer_stats.read_footers`.
    ``values_per_column``: query values per column, as a mapping or a
    sequence aligned with ``columns``.  Returns ``{column: mean fraction}``.
    Footers are read once for all columns.
    """
    from airflow_zorder.core import footer_stats

    columns = [columns] if isinstance(columns, str) else list(columns)
    if isinstance(values_per_column, Mapping):
        missing = [c for c in columns if c not in values_per_column]
        if missing:
            raise ValueError(f"no query values for columns {missing}")
        vals = {c: values_per_column[c] for c in columns}
    else:
        if len(values_per_column) != len(columns):
            raise ValueError("values_per_column must align with columns")
        vals = dict(zip(columns, values_per_column))

    if isinstance(table_dir_or_files, pa.Table):
        stats = table_dir_or_files
    else:
        if isinstance(table_dir_or_files, (str, os.PathLike)):
            files = footer_stats.list_parquet_files(os.fspath(table_dir_or_files), filesystem)
            if not files:
                raise ValueError(f"no Parquet files under {table_dir_or_files!r}")
        else:
            files = [os.fspath(p) for p in table_dir_or_files]
        stats = footer_stats.read_footers_parallel(files, columns, max_workers, filesystem)

    out: dict[str, float] = {}
    for c in columns:
        mins, maxs, has = footer_stats.column_bounds(stats, c)
        if len(mins) == 0:
            raise ValueError(f"no footer statistics rows for column {c!r} (a partition column?)")
        out[c] = mean_point_query_fraction(mins, maxs, has, vals[c])
    return out
