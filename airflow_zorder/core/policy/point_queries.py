"""Point queries (``c = v``) over per-file bounds: the fraction of files each reads, and what an ideal layout reads.

Files with missing stats always count ("never pruned"), all-null files never do
(:mod:`~airflow_zorder.core.policy.file_bounds`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.policy.file_bounds import ArrayLike, FileBounds, prepare_bounds
from airflow_zorder.core.stats import footer_stats, stats_schema

__all__ = [
    "FILE_SIZE_TOLERANCE",
    "point_query_fractions",
    "mean_point_query_fraction",
    "size_weights",
    "ideal_bytes_read",
    "ideal_point_query_fraction",
    "files_fraction_for_columns",
]


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
    always count ("never pruned"), all-null files never count (see
    :mod:`~airflow_zorder.core.policy.file_bounds`).  The denominator is the total number of files.  Null query
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


FILE_SIZE_TOLERANCE = 1.25  # files up to this many times the target count as target-sized in the bytes ideal


def size_weights(sizes: Any, target_file_size: int | None) -> Any:
    """How many target files each file counts as: 1, or its size over :data:`FILE_SIZE_TOLERANCE` times the target
    when bigger (all 1 without a target).  A point query that reads a file 4x the target reads 3.2 files' worth."""
    sizes = np.asarray(sizes, dtype=np.float64)
    if not target_file_size:
        return np.ones_like(sizes)
    return np.maximum(1.0, sizes / (FILE_SIZE_TOLERANCE * target_file_size))


def ideal_bytes_read(
    total_bytes: Any, num_files: Any, num_clustering_columns: int, target_file_size: int | None
) -> Any:
    """Bytes a point query reads in a perfect grid of ``total_bytes``: ``B * n ** (-1/d)`` with ``n`` the file count,
    or more files when the files are over :data:`FILE_SIZE_TOLERANCE` times ``target_file_size`` (numpy-friendly)."""
    n = (
        num_files
        if not target_file_size
        else np.maximum(num_files, total_bytes / (FILE_SIZE_TOLERANCE * target_file_size))
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
            raise InvalidInputError(f"no query values for columns {missing}")
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
                raise InvalidInputError(f"no Parquet files under {table_dir_or_files!r}")
        else:
            files = [os.fspath(p) for p in table_dir_or_files]
        stats = footer_stats.read_footers_parallel(files, columns, max_workers, filesystem)

    out: dict[str, float] = {}
    for c in columns:
        mins, maxs, has = stats_schema.column_bounds(stats, c)
        if len(mins) == 0:
            raise InvalidInputError(f"no footer statistics rows for column {c!r} (a partition column?)")
        out[c] = mean_point_query_fraction(mins, maxs, has, vals[c])
    return out
