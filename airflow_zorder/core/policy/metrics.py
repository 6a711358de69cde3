"""Data-skipping and clustering metrics over per-file min/max bounds.

The project's one metrics module (Airflow-free, Spark-free: numpy + pyarrow).
Everything here works on per-file bounds of one column -- ``mins``, ``maxs``
(Arrow arrays or numpy arrays of any orderable type) and ``has_stats`` -- as
returned by :func:`airflow_zorder.core.stats.stats_schema.column_bounds` -- or on
stats tables (:data:`~airflow_zorder.core.stats.stats_schema.FILE_STATS_SCHEMA`,
read directly).

Layout
------
1. Bound normalisation: :func:`prepare_bounds` turns typed bounds (ints,
   floats, decimals, dates, timestamps, strings, binary, bool) into
   :class:`FileBounds`: numpy sort keys with the same order and equality as
   the values, plus per-file status masks (floats and decimals through the
   one value-order codec, :mod:`~airflow_zorder.core.stats.value_order`).
   Every metric is built on it.
2. Point-query pruning: :func:`point_query_fractions`,
   :func:`mean_point_query_fraction`.
3. Reference values: :func:`ideal_point_query_fraction`.
4. Table-level helper tying footer statistics to the metrics:
   :func:`files_fraction_for_columns`.
5. Clustering information in the style of Snowflake's
   ``SYSTEM$CLUSTERING_INFORMATION`` (overlaps, depth, depth histogram,
   constant files, expected files read by a point query vs the ideal):
   :class:`ColumnClustering`, :func:`column_clustering`,
   :func:`file_overlaps_and_depths`, and over a footer stats table
   :func:`partition_clustering`, :func:`table_clustering`.  Vectorised,
   O(N log N) (one sort, prefix sums, a sparse-table range maximum); a
   million stats rows take about a second.
6. What re-clustering costs: :func:`unclustered_file_bytes`,
   :func:`bytes_added`, :func:`write_amplification` (bytes a run rewrote /
   bytes other writers added since the previous run).

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
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.policy.file_names import run_id_of
from airflow_zorder.core.stats import footer_stats, stats_schema, value_order

__all__ = [
    "FileBounds",
    "prepare_bounds",
    "point_query_fractions",
    "mean_point_query_fraction",
    "ideal_point_query_fraction",
    "files_fraction_for_columns",
    "ColumnClustering",
    "column_clustering",
    "file_overlaps_and_depths",
    "depth_histogram_keys",
    "partition_clustering",
    "table_clustering",
    "unclustered_file_bytes",
    "bytes_added",
    "write_amplification",
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
        return [value_order.decimal_keys(a) for a in arrays]
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


FILE_SIZE_TOLERANCE = 1.25  # files up to this many times the target count as target-sized in the bytes ideal


def size_weights(sizes: Any, target_file_bytes: int | None) -> Any:
    """How many target files each file counts as: 1, or its size over :data:`FILE_SIZE_TOLERANCE` times the target
    when bigger (all 1 without a target).  A point query that reads a file 4x the target reads 3.2 files' worth."""
    sizes = np.asarray(sizes, dtype=np.float64)
    if not target_file_bytes:
        return np.ones_like(sizes)
    return np.maximum(1.0, sizes / (FILE_SIZE_TOLERANCE * target_file_bytes))


def ideal_bytes_read(
    total_bytes: Any, num_files: Any, num_clustering_columns: int, target_file_bytes: int | None
) -> Any:
    """Bytes a point query reads in a perfect grid of ``total_bytes``: ``B * n ** (-1/d)`` with ``n`` the file count,
    or more files when the files are over :data:`FILE_SIZE_TOLERANCE` times ``target_file_bytes`` (numpy-friendly)."""
    n = (
        num_files
        if not target_file_bytes
        else np.maximum(num_files, total_bytes / (FILE_SIZE_TOLERANCE * target_file_bytes))
    )
    return total_bytes * np.power(n, -1.0 / num_clustering_columns)


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
    stats table (:func:`~airflow_zorder.core.stats.footer_stats.read_footers`, or a snapshot).
    ``values_per_column``: query values per column, as a mapping or a
    sequence aligned with ``columns``.  Returns ``{column: mean fraction}``.
    Footers are read once for all columns.
    """
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
        mins, maxs, has = stats_schema.column_bounds(stats, c)
        if len(mins) == 0:
            raise ValueError(f"no footer statistics rows for column {c!r} (a partition column?)")
        out[c] = mean_point_query_fraction(mins, maxs, has, vals[c])
    return out


# --------------------------------------------------------------------------
# 5. Clustering information (Snowflake SYSTEM$CLUSTERING_INFORMATION style)
# --------------------------------------------------------------------------
#
# Per file f of one column (closed intervals [min, max] in sort-key space):
#   overlaps(f) = number of OTHER files whose range intersects f's range;
#   depth(f)    = max over values x in [min_f, max_f] of #files containing x.
# Files without usable stats ("unknown") may contain any value: their range is
# taken as (-inf, +inf), so they overlap every other ranged file and add 1 to
# the depth at every value.  All-null files ("empty") hold no value at all:
# they overlap nothing, have depth 0 and are excluded from every average and
# from the histogram (counted in ``all_null_files``).
#
# Algorithms (N files, all vectorised numpy, O(N log N)):
#   * one stable sort of all bounded endpoints gives dense ranks 0..M-1 of the
#     distinct values (grouped: ranks of (group, value), group-major, with one
#     extra radix sort of the group ids); every count below is then a prefix
#     sum over M rank points, so the groups (partitions) of a column are
#     evaluated together: intervals of different groups never meet.
#   * overlaps(f) = #(lo_g <= hi_f) - #(hi_g < lo_f) - 1 (a file with
#     hi_g < lo_f also has lo_g <= hi_f, so it cancels).
#   * depth: the stack count c(x) = #(lo <= x) - #(hi < x) at every rank
#     point; depth(f) = max of c over the rank points in [lo_f, hi_f] (c only
#     rises at a min, and lo_f itself is a rank point) = one range-maximum
#     query per file on a sparse table.

_HIST_LINEAR_MAX = 16


def depth_histogram_keys(max_depth: int) -> list[int]:
    """Bucket keys (upper bounds) of the depth histogram up to ``max_depth``.

    ``0, 1, ..., 16`` always, then ``32, 64, 128, ...`` up to the first key
    ``>= max_depth`` (Snowflake's ``partition_depth_histogram`` buckets).
    """
    keys = list(range(_HIST_LINEAR_MAX + 1))
    while keys[-1] < max_depth:
        keys.append(keys[-1] * 2)
    return keys


def _depth_bucket_index(depth: np.ndarray) -> np.ndarray:
    """Index into :func:`depth_histogram_keys` of the smallest key >= depth."""
    d = depth.astype(np.int64, copy=False)
    idx = d.copy()
    big = d > _HIST_LINEAR_MAX
    if big.any():
        # ceil(log2(d)) == bit_length(d - 1), exactly via frexp; key 32 = 2**5 has index 17
        idx[big] = np.frexp((d[big] - 1).astype(np.float64))[1].astype(np.int64) - 5 + _HIST_LINEAR_MAX + 1
    return idx


def _hist_key(k: int) -> str:
    return f"{k:05d}"


@dataclass(frozen=True)
class ColumnClustering:
    """Clustering information of one column over a set of files.

    Field names follow Snowflake's ``SYSTEM$CLUSTERING_INFORMATION`` where one
    exists (``num_files`` = ``total_partition_count``, ``constant_files`` =
    ``total_constant_partition_count``, ``depth_histogram`` =
    ``partition_depth_histogram``).  Averages are over the *ranged* files
    (files with bounds plus files without usable stats); ``None`` when there
    is none.

    * ``files_with_stats``: files whose stats are usable (bounded or all-null);
      ``files_without_stats = num_files - files_with_stats`` (``has_stats``
      false, or bounds that cannot be trusted: one bound null, NaN, min > max).
      They can never be pruned and count as overlapping everything.
    * ``all_null_files``: stats say every value is null; no range, depth 0.
    * ``constant_files``: bounded files with ``min == max``.
    * ``depth_histogram``: ``{"00000": n, ..., "00016": n, "00032": n, ...}``;
      a ranged file of depth ``d`` counts in the smallest key ``>= d``
      (depth 17..32 -> ``"00032"``, 33..64 -> ``"00064"``); keys 0..16 are
      always present, larger keys up to the first one ``>= max_depth``.  Key
      ``"00000"`` is always 0 (every ranged file has depth >= 1).
    * ``expected_files_read``: expected number of files a point query
      ``c = v`` reads for ``v`` drawn uniformly over the column's range
      (``sum(width_i) / width_total`` over bounded files, plus every file
      without stats; all-null files are never read).  ``expected_fraction`` =
      that / ``num_files``.  ``fraction_space`` says how widths are measured:
      ``"value"``: in the value domain, width = max - min + resolution, where
      the resolution is one unit of the type (1 for integers/bool, one day /
      time unit for dates, times, timestamps, ``10**-scale`` for decimals, one
      ulp at the range's largest magnitude for floats) -- for discrete types
      this is the exact expectation for ``v`` uniform over the
      ``max - min + 1`` representable values; ``"rank"``: strings, binary
      (and floats with an infinite range): widths in the rank space of the
      distinct bound values, i.e. ``v`` uniform over the distinct min/max
      values that occur; ``None``: no bounded file.
    * ``ideal_fraction = num_files ** (-1 / num_clustering_columns)``
      (:func:`ideal_point_query_fraction`), ``ideal_files_read =
      num_files * ideal_fraction`` and ``ratio_to_ideal =
      expected_fraction / ideal_fraction`` (1 = as good as a perfect grid).
    * ``expected_bytes_read``: the bytes of those files (each file's read
      probability times its size; None without sizes); ``ideal_bytes_read =
      B * n ** (-1 / num_clustering_columns)``, ``B`` the files' bytes and
      ``n = max(num_files, B / (1.25 * target_file_bytes))`` (``num_files``
      without a target): a perfect grid of files no bigger than the target,
      with 25% to spare (:func:`ideal_bytes_read`);
      ``bytes_ratio_to_ideal`` their ratio.  Equal to ``ratio_to_ideal`` for
      equal-sized files at the target; above it when files are bigger than the
      target.
    * ``sized_ratio_to_ideal``: ``ratio_to_ideal`` with each file over 1.25x
      ``target_file_bytes`` counted as that many target files, in the files a
      query reads and in the ideal's file count (:func:`size_weights`); equal to
      ``ratio_to_ideal`` when no file is that big.  The sensor scores it, so
      its threshold cannot be passed by writing bigger files.
    """

    column: str | None
    arrow_type: str | None
    num_files: int
    files_with_stats: int
    files_without_stats: int
    all_null_files: int
    constant_files: int
    average_overlaps: float | None
    max_overlaps: int
    average_depth: float | None
    max_depth: int
    depth_histogram: dict[str, int]
    expected_files_read: float | None
    expected_fraction: float | None
    fraction_space: str | None
    num_clustering_columns: int
    ideal_fraction: float | None
    ideal_files_read: float | None
    ratio_to_ideal: float | None
    expected_bytes_read: float | None = None
    ideal_bytes_read: float | None = None
    bytes_ratio_to_ideal: float | None = None
    sized_ratio_to_ideal: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable dict (Python ints/floats/str/None only)."""
        return {
            "column": self.column,
            "arrow_type": self.arrow_type,
            "num_files": self.num_files,
            "files_with_stats": self.files_with_stats,
            "files_without_stats": self.files_without_stats,
            "all_null_files": self.all_null_files,
            "constant_files": self.constant_files,
            "average_overlaps": self.average_overlaps,
            "max_overlaps": self.max_overlaps,
            "average_depth": self.average_depth,
            "max_depth": self.max_depth,
            "depth_histogram": dict(self.depth_histogram),
            "expected_files_read": self.expected_files_read,
            "expected_fraction": self.expected_fraction,
            "fraction_space": self.fraction_space,
            "num_clustering_columns": self.num_clustering_columns,
            "ideal_fraction": self.ideal_fraction,
            "ideal_files_read": self.ideal_files_read,
            "ratio_to_ideal": self.ratio_to_ideal,
            "expected_bytes_read": self.expected_bytes_read,
            "ideal_bytes_read": self.ideal_bytes_read,
            "bytes_ratio_to_ideal": self.bytes_ratio_to_ideal,
            "sized_ratio_to_ideal": self.sized_ratio_to_ideal,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ColumnClustering:
        """Back from :meth:`to_dict` (dicts written before the bytes fields existed read them as None)."""
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def _range_max(vals: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``max(vals[a[i] : b[i] + 1])`` for every i (a <= b), sparse table, O((n + q) log n)."""
    if a.size == 0:
        return np.zeros(0, dtype=vals.dtype)
    length = b - a + 1
    level = np.frexp(length.astype(np.float64))[1] - 1  # floor(log2(length))
    max_level = int(level.max())
    out = vals[a].copy()  # level 0
    table = vals
    for j in range(1, max_level + 1):
        half = 1 << (j - 1)
        table = np.maximum(table[:-half], table[half:])  # table[i] = max(vals[i : i + 2**j])
        sel = np.flatnonzero(level == j)
        if sel.size:
            out[sel] = np.maximum(table[a[sel]], table[b[sel] - (1 << j) + 1])
    return out


@dataclass
class _Prepared:
    """Bounds of one column ready for :func:`_cluster_groups` (shared by several groupings)."""

    fb: FileBounds
    arrow_type: pa.DataType
    lo_a: pa.Array
    hi_a: pa.Array
    idx_b: np.ndarray  # indices of bounded files
    keys: np.ndarray  # concat(lo[idx_b], hi[idx_b])
    order: np.ndarray  # stable argsort of keys

    @classmethod
    def of(cls, lo_a: pa.Array, hi_a: pa.Array, has_stats: ArrayLike | None) -> _Prepared:
        fb, _, _ = prepare_bounds(lo_a, hi_a, has_stats)
        idx_b = np.flatnonzero(fb.bounded)
        keys = np.concatenate([fb.lo[idx_b], fb.hi[idx_b]])
        t = lo_a.type if not pa.types.is_null(lo_a.type) else hi_a.type
        return cls(fb, t, lo_a, hi_a, idx_b, keys, np.argsort(keys, kind="stable"))


def _group_ranks(prep: _Prepared, g: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dense ranks of ``(group, key)`` over all bounded endpoints: ``(rank_lo, rank_hi, group_of_rank)``.

    Ranks are ordered by group, then key; equal keys (``-0.0 == 0.0``) share a
    rank.  The key sort is shared by all groupings; grouping adds one stable
    (radix for < 65536 groups) sort of the group ids.
    """
    nb = prep.idx_b.shape[0]
    order = prep.order
    single = nb == 0 or g.min() == g.max()
    if not single:
        gg = np.concatenate([g, g])[order]
        gdt = np.uint16 if g.max() < 65536 else np.int64
        order = order[np.argsort(gg.astype(gdt), kind="stable")]
    ks = prep.keys[order]
    new = np.empty(ks.shape[0], dtype=bool)
    new[:1] = True
    np.not_equal(ks[1:], ks[:-1], out=new[1:])
    if single:
        point_group = np.full(int(np.count_nonzero(new)), g[0] if nb else 0, dtype=np.int64)
    else:
        gs = np.concatenate([g, g])[order]
        new[1:] |= gs[1:] != gs[:-1]
        point_group = gs[new]
    rank_sorted = np.cumsum(new) - 1
    ranks = np.empty(ks.shape[0], dtype=np.int64)
    ranks[order] = rank_sorted
    return ranks[:nb], ranks[nb:], point_group


def _value_kind(t: pa.DataType) -> str:
    if pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_temporal(t):
        return "int"
    if pa.types.is_decimal(t):
        return "int" if (t.bit_width == 128 and t.precision <= 18) else "decimal"
    if pa.types.is_floating(t):
        return "float"
    return "rank"


@dataclass
class _Grouped:
    """Per-file and per-group results of :func:`_cluster_groups`."""

    overlaps: np.ndarray  # per file (0 for all-null files)
    depth: np.ndarray  # per file (0 for all-null files)
    results: list[ColumnClustering]  # per group


def _exact_span(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """``hi - lo`` (hi >= lo) for int64/uint64 keys as float64, without overflow."""
    if hi.dtype == np.int64:
        return (hi.view(np.uint64) - lo.view(np.uint64)).astype(np.float64)
    return (hi.astype(np.uint64) - lo.astype(np.uint64)).astype(np.float64)


def _cluster_groups(
    prep: _Prepared,
    groups: np.ndarray | None,
    num_groups: int,
    num_clustering_columns: int,
    column: str | None = None,
    sizes: np.ndarray | None = None,
    target_file_bytes: int | None = None,
) -> _Grouped:
    """Per-group clustering of one column; ``sizes`` (bytes per file) add the bytes-read fields."""
    if num_clustering_columns < 1:
        raise ValueError("num_clustering_columns must be >= 1")
    fb = prep.fb
    n = fb.num_files
    G = num_groups
    if groups is None:
        groups = np.zeros(n, dtype=np.int64)
    else:
        groups = np.asarray(groups, dtype=np.int64)
        if groups.shape[0] != n:
            raise ValueError("groups must have one entry per file")
    t = prep.arrow_type
    lo_a, hi_a = prep.lo_a, prep.hi_a
    arrow_type = None if pa.types.is_null(t) else str(t)
    kind = _value_kind(t)

    empty, unknown = fb.empty, fb.unknown
    N_g = np.bincount(groups, minlength=G)
    U_g = np.bincount(groups[unknown], minlength=G)
    E_g = np.bincount(groups[empty], minlength=G)
    R_g = N_g - E_g  # ranged files: bounded + unknown

    idx_b = prep.idx_b
    nb = idx_b.size
    lo, hi, g = fb.lo[idx_b], fb.hi[idx_b], groups[idx_b]
    B_g = np.bincount(g, minlength=G)
    const_g = np.bincount(g[lo == hi], minlength=G)

    overlaps = np.zeros(n, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    maxc_g = np.zeros(G, dtype=np.int64)
    if nb:
        # dense ranks of the bounded endpoints within each group: rank points 0..M-1, group-major
        rlo, rhi, point_group = _group_ranks(prep, g)
        M = point_group.shape[0]
        n_lo = np.bincount(rlo, minlength=M)
        n_hi = np.bincount(rhi, minlength=M)
        le_lo = np.cumsum(n_lo)  # #(lo <= x)
        lt_hi = np.cumsum(n_hi) - n_hi  # #(hi < x)
        # other groups' intervals lie entirely below (counted in both) or above (in neither)
        overlaps[idx_b] = le_lo[rhi] - lt_hi[rlo] - 1 + U_g[g]
        c = le_lo - lt_hi  # files containing each rank point
        depth[idx_b] = _range_max(c, rlo, rhi) + U_g[g]
        np.maximum.at(maxc_g, point_group, c)
    idx_u = np.flatnonzero(unknown)
    if idx_u.size:
        gu = groups[idx_u]
        overlaps[idx_u] = R_g[gu] - 1
        depth[idx_u] = maxc_g[gu] + U_g[gu]

    ranged = ~empty
    gr = groups[ranged]
    sum_ov = np.bincount(gr, weights=overlaps[ranged], minlength=G)
    sum_depth = np.bincount(gr, weights=depth[ranged], minlength=G)
    max_ov = np.zeros(G, dtype=np.int64)
    max_depth = np.zeros(G, dtype=np.int64)
    np.maximum.at(max_ov, gr, overlaps[ranged])
    np.maximum.at(max_depth, gr, depth[ranged])
    nkeys = len(depth_histogram_keys(int(max_depth.max()) if G else 0))
    bucket = _depth_bucket_index(depth[ranged])
    hist = np.bincount(gr * nkeys + bucket, minlength=G * nkeys).reshape(G, nkeys) if G else np.zeros((0, nkeys))

    # expected files read by a point query, uniform over each group's range
    space: list[str | None] = [None] * G
    read_b = np.zeros(G, dtype=np.float64)
    bytes_b = np.zeros(G, dtype=np.float64)  # expected bytes read of the bounded files
    size_b = sizes[idx_b] if sizes is not None else np.zeros(nb)
    weight = size_weights(sizes if sizes is not None else np.zeros(n), target_file_bytes)
    weight_b = weight[idx_b]
    wread_b = np.zeros(G, dtype=np.float64)  # expected files read, each file counted as its weight
    use_rank = np.zeros(G, dtype=bool)
    if nb:
        has_b = B_g > 0
        if kind in ("int", "float", "decimal"):
            if kind == "int":
                plo, phi = lo, hi
                if plo.dtype.kind not in "iu" or plo.dtype.itemsize < 8:
                    plo, phi = plo.astype(np.int64), phi.astype(np.int64)
            elif kind == "float":
                plo, phi = lo, hi
            else:  # wide decimals: approximate value positions in float64
                sub = pa.array(idx_b)
                plo = lo_a.take(sub).cast(pa.float64()).to_numpy(zero_copy_only=False)
                phi = hi_a.take(sub).cast(pa.float64()).to_numpy(zero_copy_only=False)
            # min / max position per group (groups without bounded files are masked below)
            if plo.dtype.kind == "f":
                gmin = np.full(G, np.inf)
                gmax = np.full(G, -np.inf)
            else:
                info = np.iinfo(plo.dtype)
                gmin = np.full(G, info.max, dtype=plo.dtype)
                gmax = np.full(G, info.min, dtype=plo.dtype)
            np.minimum.at(gmin, g, plo)
            np.maximum.at(gmax, g, phi)
            gmin[~has_b] = 0
            gmax[~has_b] = 0
            if kind == "int":
                # exact: v uniform over the max - min + 1 representable values
                total = _exact_span(gmax, gmin) + 1.0
                widths = _exact_span(phi, plo) + 1.0
            else:
                if kind == "float":
                    ftype = np.float32 if t.bit_width <= 32 else np.float64
                    mag = np.maximum(np.abs(gmin), np.abs(gmax))
                    with np.errstate(over="ignore", invalid="ignore"):
                        res_g = np.spacing(mag.astype(ftype)).astype(np.float64)  # one ulp
                else:
                    res_g = np.full(G, 10.0 ** (-t.scale))
                with np.errstate(over="ignore", invalid="ignore"):
                    total = (gmax - gmin) + res_g
                    widths = (phi - plo) + res_g[g]
                use_rank = has_b & ~np.isfinite(total)
            with np.errstate(over="ignore", invalid="ignore"):
                sum_w = np.bincount(g, weights=np.where(np.isfinite(widths), widths, 0.0), minlength=G)
                finite = np.where(np.isfinite(widths), widths, 0.0)
                sum_wb = np.bincount(g, weights=finite * size_b, minlength=G)
                sum_ww = np.bincount(g, weights=finite * weight_b, minlength=G)
            ok = has_b & ~use_rank
            read_b[ok] = sum_w[ok] / total[ok]
            bytes_b[ok] = sum_wb[ok] / total[ok]
            wread_b[ok] = sum_ww[ok] / total[ok]
            for i in np.flatnonzero(ok):
                space[i] = "value"
        else:
            use_rank = has_b
        if use_rank.any():
            K_g = np.bincount(point_group, minlength=G)  # distinct bound values per group
            rw = rhi - rlo + 1
            sum_rw = np.bincount(g, weights=rw, minlength=G)
            read_b[use_rank] = sum_rw[use_rank] / K_g[use_rank]
            sum_rwb = np.bincount(g, weights=rw * size_b, minlength=G)
            bytes_b[use_rank] = sum_rwb[use_rank] / K_g[use_rank]
            sum_rww = np.bincount(g, weights=rw * weight_b, minlength=G)
            wread_b[use_rank] = sum_rww[use_rank] / K_g[use_rank]
            for i in np.flatnonzero(use_rank):
                space[i] = "rank"

    if sizes is not None:
        B_all = np.bincount(groups, weights=sizes, minlength=G)
        bytes_read = bytes_b + np.bincount(groups[unknown], weights=sizes[unknown], minlength=G)
        W_all = np.bincount(groups, weights=weight, minlength=G)
        wread = wread_b + np.bincount(groups[unknown], weights=weight[unknown], minlength=G)
    keys = depth_histogram_keys(int(max_depth.max()) if G else 0)
    results: list[ColumnClustering] = []
    for i in range(G):
        Ni, Ri = int(N_g[i]), int(R_g[i])
        mx = int(max_depth[i])
        nk = len(depth_histogram_keys(mx))
        hist_i = {_hist_key(keys[j]): int(hist[i, j]) for j in range(nk)}
        if Ni:
            files_read = float(read_b[i] + U_g[i])
            frac = files_read / Ni
            ideal = ideal_point_query_fraction(Ni, num_clustering_columns)
            ratio = frac / ideal
        else:
            files_read = frac = ideal = ratio = None
        exp_b = ideal_b = ratio_b = sized = None
        if sizes is not None and Ni and B_all[i] > 0:
            exp_b = float(bytes_read[i])
            ideal_b = float(ideal_bytes_read(float(B_all[i]), float(Ni), num_clustering_columns, target_file_bytes))
            ratio_b = exp_b / ideal_b
            sized = float(wread[i] / W_all[i] ** (1.0 - 1.0 / num_clustering_columns))
        results.append(
            ColumnClustering(
                column=column,
                arrow_type=arrow_type,
                num_files=Ni,
                files_with_stats=Ni - int(U_g[i]),
                files_without_stats=int(U_g[i]),
                all_null_files=int(E_g[i]),
                constant_files=int(const_g[i]),
                average_overlaps=float(sum_ov[i] / Ri) if Ri else None,
                max_overlaps=int(max_ov[i]),
                average_depth=float(sum_depth[i] / Ri) if Ri else None,
                max_depth=mx,
                depth_histogram=hist_i,
                expected_files_read=files_read,
                expected_fraction=frac,
                fraction_space=space[i],
                num_clustering_columns=int(num_clustering_columns),
                ideal_fraction=ideal,
                ideal_files_read=None if ideal is None else float(Ni * ideal),
                ratio_to_ideal=ratio,
                expected_bytes_read=exp_b,
                ideal_bytes_read=ideal_b,
                bytes_ratio_to_ideal=ratio_b,
                sized_ratio_to_ideal=sized,
            )
        )
    return _Grouped(overlaps=overlaps, depth=depth, results=results)


def _bounds_arrays(mins: ArrayLike, maxs: ArrayLike) -> tuple[pa.Array, pa.Array]:
    lo_a = _to_arrow(mins)
    hi_a = _to_arrow(maxs, lo_a.type)
    if lo_a.type != hi_a.type:
        if pa.types.is_null(lo_a.type):
            lo_a = lo_a.cast(hi_a.type)
        else:
            hi_a = hi_a.cast(lo_a.type)
    return lo_a, hi_a


def file_overlaps_and_depths(
    mins: ArrayLike, maxs: ArrayLike, has_stats: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Per-file ``(overlaps, depth)`` (int64 arrays) of one column.

    Definitions as in :class:`ColumnClustering`: closed intervals; files
    without usable stats overlap every other ranged file and are as deep as
    the deepest point; all-null files get 0 and 0.  O(N log N).
    """
    lo_a, hi_a = _bounds_arrays(mins, maxs)
    gr = _cluster_groups(_Prepared.of(lo_a, hi_a, has_stats), None, 1, 1)
    return gr.overlaps, gr.depth


def column_clustering(
    mins: ArrayLike,
    maxs: ArrayLike,
    has_stats: ArrayLike | None = None,
    num_clustering_columns: int = 1,
    *,
    column: str | None = None,
    file_sizes: ArrayLike | None = None,
    target_file_bytes: int | None = None,
) -> ColumnClustering:
    """Clustering information of one column from its per-file bounds.

    ``mins``/``maxs``/``has_stats`` as for :func:`prepare_bounds` (typically
    from :func:`~airflow_zorder.core.stats.stats_schema.column_bounds`);
    ``num_clustering_columns`` is the ``d`` of the ideal ``N ** (-1/d)``; ``file_sizes`` (bytes per file) and
    ``target_file_bytes`` add the bytes-read fields.  See :class:`ColumnClustering` for the definitions.  O(N log N).
    """
    lo_a, hi_a = _bounds_arrays(mins, maxs)
    sizes = None if file_sizes is None else np.nan_to_num(np.asarray(file_sizes, dtype=np.float64))
    prep = _Prepared.of(lo_a, hi_a, has_stats)
    return _cluster_groups(prep, None, 1, num_clustering_columns, column, sizes, target_file_bytes).results[0]


# ----- stats tables -----------------------------------------------------------


def _group_ids(values: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, list[Any]]:
    enc = pc.dictionary_encode(values, null_encoding="encode")
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks()
    return enc.indices.to_numpy(zero_copy_only=False).astype(np.int64), enc.dictionary.to_pylist()


def _file_sizes(rows: pa.Table) -> np.ndarray | None:
    """Each row's ``file_size`` as float64 (unknown: 0); None when the rows carry no sizes at all."""
    if "file_size" not in rows.column_names or rows.num_rows == 0 or rows["file_size"].null_count == rows.num_rows:
        return None
    return pc.fill_null(rows["file_size"], 0).to_numpy(zero_copy_only=False).astype(np.float64)


def partition_clustering(
    stats_table: pa.Table,
    columns: Sequence[str] | str,
    partition_key: str = "partition",
    num_clustering_columns: int | None = None,
    target_file_bytes: int | None = None,
) -> dict[Any, dict[str, ColumnClustering]]:
    """``{partition: {column: ColumnClustering}}`` from a footer stats table.

    ``stats_table`` has :data:`~airflow_zorder.core.stats.stats_schema.FILE_STATS_SCHEMA`
    (one row per (file, column): a snapshot or footer rows); files are grouped by ``partition_key``
    (the Hive partition path, e.g. ``"dt=2024-01-01"``; ``None`` for files
    outside any partition).  ``num_clustering_columns`` defaults to
    ``len(columns)``; ``target_file_bytes`` sizes the files of the bytes-read
    ideal (see :class:`ColumnClustering`).  Columns without rows in a partition
    are absent from its dict.  All partitions are evaluated in one vectorised
    pass per column.
    """
    columns = [columns] if isinstance(columns, str) else list(columns)
    d = num_clustering_columns or len(columns)
    split = stats_schema.split_by_column(stats_table, [partition_key, "file_size"])
    out: dict[Any, dict[str, ColumnClustering]] = {}
    for c in columns:
        t = split.get(c)
        if t is None or t.num_rows == 0:
            continue
        gids, names = _group_ids(t[partition_key])
        prep = _Prepared.of(*stats_schema.typed_bounds(t))
        res = _cluster_groups(prep, gids, len(names), d, c, _file_sizes(t), target_file_bytes).results
        for name, r in zip(names, res):
            if r.num_files:
                out.setdefault(name, {})[c] = r
    return out


def table_clustering(
    stats_table: pa.Table,
    columns: Sequence[str] | str,
    num_clustering_columns: int | None = None,
    partition_key: str = "partition",
    target_file_bytes: int | None = None,
) -> dict[str, Any]:
    """Table-level clustering summary (JSON-serialisable dict).

    Keys:

    * ``num_files``: distinct paths in the stats table; ``columns``;
      ``num_clustering_columns`` (default ``len(columns)``);
    * ``per_column``: ``{column: ColumnClustering.to_dict()}`` over all files
      (partitions ignored, like Snowflake);
    * ``partitions``: ``{partition: {"num_files", "ratio_to_ideal",
      "worst_column", "columns": {column: dict}}}`` -- the key is the Hive
      partition path, ``""`` for files outside any partition; a partition's
      ``ratio_to_ideal`` is the max over its columns;
    * ``partition_ratio``: per column, ``sum_p expected_files_read(p) /
      sum_p ideal_files_read(p)``: how many times more files a point query
      on the column reads than an ideal layout of each partition would
      (partitioning itself is taken as given, since rewriting files inside a
      partition cannot beat it);
    * ``worst_column``, ``headline``: the column with the largest
      ``partition_ratio`` and that value (1.0 = ideal; for an unpartitioned
      table it equals the column's ``ratio_to_ideal``); ``worst_partition``;
    * ``bytes_partition_ratio`` and ``bytes_headline``: the same in bytes read
      (``expected_bytes_read`` over ``ideal_bytes_read``, files sized by
      ``target_file_bytes``; see :class:`ColumnClustering`).
    """
    columns = [columns] if isinstance(columns, str) else list(columns)
    d = num_clustering_columns or len(columns)
    split = stats_schema.split_by_column(stats_table, [partition_key, "file_size"])
    per_column: dict[str, dict[str, Any]] = {}
    partitions: dict[str, dict[str, Any]] = {}
    partition_ratio: dict[str, float | None] = {}
    bytes_ratio: dict[str, float | None] = {}
    for c in columns:
        t = split.get(c)
        if t is None or t.num_rows == 0:
            per_column[c] = None  # type: ignore[assignment]
            partition_ratio[c] = bytes_ratio[c] = None
            continue
        prep = _Prepared.of(*stats_schema.typed_bounds(t))
        sizes = _file_sizes(t)
        whole = _cluster_groups(prep, None, 1, d, c, sizes, target_file_bytes).results[0]
        per_column[c] = whole.to_dict()
        gids, names = _group_ids(t[partition_key])
        res = _cluster_groups(prep, gids, len(names), d, c, sizes, target_file_bytes).results
        read = ideal = read_b = ideal_b = 0.0
        for name, r in zip(names, res):
            if not r.num_files:
                continue
            key = "" if name is None else str(name)
            p = partitions.setdefault(
                key, {"num_files": 0, "ratio_to_ideal": None, "worst_column": None, "columns": {}}
            )
            p["columns"][c] = r.to_dict()
            p["num_files"] = max(p["num_files"], r.num_files)
            if r.ratio_to_ideal is not None and (p["ratio_to_ideal"] is None or r.ratio_to_ideal > p["ratio_to_ideal"]):
                p["ratio_to_ideal"], p["worst_column"] = r.ratio_to_ideal, c
            read += r.expected_files_read or 0.0
            ideal += r.ideal_files_read or 0.0
            read_b += r.expected_bytes_read or 0.0
            ideal_b += r.ideal_bytes_read or 0.0
        partition_ratio[c] = read / ideal if ideal > 0 else None
        bytes_ratio[c] = read_b / ideal_b if ideal_b > 0 else None
    scored = [(v, c) for c, v in partition_ratio.items() if v is not None]
    bytes_scored = [v for v in bytes_ratio.values() if v is not None]
    worst_column, headline = (max(scored)[1], max(scored)[0]) if scored else (None, None)
    pscored = [(p["ratio_to_ideal"], k) for k, p in partitions.items() if p["ratio_to_ideal"] is not None]
    described = stats_schema.column_rows(stats_table)
    num_files = int(pc.count_distinct(described["path"]).as_py()) if described.num_rows else 0
    return {
        "num_files": num_files,
        "columns": columns,
        "num_clustering_columns": d,
        "per_column": per_column,
        "partition_ratio": partition_ratio,
        "worst_column": worst_column,
        "headline": headline,
        "bytes_partition_ratio": bytes_ratio,
        "bytes_headline": max(bytes_scored) if bytes_scored else None,
        "worst_partition": max(pscored)[1] if pscored else None,
        "partitions": dict(sorted(partitions.items())),
    }


# --------------------------------------------------------------------------
# 6. What re-clustering costs
# --------------------------------------------------------------------------


def unclustered_file_bytes(snapshot: pa.Table) -> dict[str, int]:
    """Path -> size of the snapshot's files that no clustering run wrote: the data other writers added.

    A clustering run names every file it writes ``part-NNNNN-zorder-<run_id>.parquet``
    (:func:`airflow_zorder.core.policy.file_names.run_id_of`); any other name is an ingest job's (or any other
    writer's) file.  ``snapshot``: FILE_STATS_SCHEMA rows (one per file and column; a Delta version's rows too).
    """
    if snapshot.num_rows == 0:
        return {}
    out: dict[str, int] = {}
    sizes = pc.fill_null(snapshot["file_size"], 0).to_pylist()
    for path, size in zip(snapshot["path"].to_pylist(), sizes):
        if path is not None and path not in out and run_id_of(path) is None:
            out[path] = int(size)
    return out


def bytes_added(unclustered: Mapping[str, int], previous: Mapping[str, int] | None) -> int:
    """Bytes other writers added between two states of a table: the files in ``unclustered`` (the state a run
    started from, :func:`unclustered_file_bytes`) that are not in ``previous`` (the state the previous run
    started from).  ``previous`` None (the first run): every file no clustering run wrote.

    A file another writer added and no run has rewritten yet is counted once, by the first run after it
    appeared: it is in both states afterwards.  Files are told apart by path.
    """
    if previous is None:
        return int(sum(unclustered.values()))
    return int(sum(size for path, size in unclustered.items() if path not in previous))


def write_amplification(bytes_rewritten: float, added: float | None) -> float | None:
    """Bytes rewritten / bytes added (the benchmarks' and the UI's rule): how many times each added byte was
    rewritten.  None when the bytes added are unknown or zero (nothing to amplify).

    Over several runs, pass the sums (total rewritten / total added), not a mean of the runs' ratios.
    """
    if added is None or added <= 0:
        return None
    return float(bytes_rewritten) / float(added)
