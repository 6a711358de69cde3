"""Which columns to write without a Parquet dictionary: those the writer would build one for, then abandon.

parquet-mr dictionary-encodes every column and falls back to PLAIN when the dictionary passes
``parquet.dictionary.page.size`` (1 MiB) or stops paying for itself (dictionary + ids >= plain
values). For near-unique columns (ids, prices, free text) in a re-clustered file that is work
thrown away -- every value hashed into a dictionary, then the page re-encoded -- about a fifth of
the write's CPU on TPC-H lineitem. A sample of rows with the output file each lands in
estimates each column's distinct values per file from pair collisions within files; skew and
correlation with the clustering columns both add collisions, so the estimate errs toward keeping
the dictionary (the writer's own choice).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

DEFAULT_DICTIONARY_PAGE_SIZE = 1 << 20  # parquet-mr's parquet.dictionary.page.size
EVIDENCE = 20  # same-file pairs needed per row of a file: a dictionary-sized column shows ~20+ collisions


def sample_rows(rows: int, num_files: int, rows_per_file: float, cap: int = 250_000) -> int:
    """Rows to sample so that same-file pairs reach :data:`EVIDENCE` x ``rows_per_file`` (pairs ~ n^2 / 2 files)."""
    return int(min(rows, cap, max(20_000, math.sqrt(2 * EVIDENCE * max(1, num_files) * max(1.0, rows_per_file)) + 1)))


def entry_bytes(t: pa.DataType, values: pa.Array) -> float | None:
    """Bytes one value takes in a Parquet dictionary (and plain), as Spark writes the type; None: not judged."""
    if pa.types.is_boolean(t) or pa.types.is_nested(t) or pa.types.is_dictionary(t):
        return None  # booleans are never dictionary-encoded; nested columns keep the writer's choice
    if pa.types.is_decimal(t):
        if t.precision <= 9:
            return 4.0
        if t.precision <= 18:
            return 8.0
        return float(math.ceil((t.precision * math.log2(10) + 1) / 8))  # FIXED_LEN_BYTE_ARRAY
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        valid = values.drop_null()
        return 4.0 + (float(pc.mean(pc.binary_length(valid)).as_py() or 0.0) if len(valid) else 0.0)
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_date(t) or pa.types.is_timestamp(t):
        return 8.0 if t.bit_width == 64 else 4.0
    return None


def distinct_per_file(values: pa.Array, file_ids: np.ndarray) -> tuple[float, int]:
    """(estimated distinct non-null values per file, same-file pairs seen): 1 / P(two rows of a file are equal).

    Pooled over files, so files with a handful of sampled rows still count. Infinite when no
    pair collides.
    """
    valid = pc.is_valid(values).to_numpy(zero_copy_only=False)
    files = np.asarray(file_ids, dtype=np.int64)[valid]
    if len(files) < 2:
        return math.inf, 0
    encoded = pc.dictionary_encode(values.filter(pa.array(valid)))
    ids = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    per_file = np.bincount(files).astype(np.float64)
    pairs = float((per_file * (per_file - 1) / 2).sum())
    k = np.unique(files * len(encoded.dictionary) + ids, return_counts=True)[1].astype(np.float64)
    collisions = float((k * (k - 1) / 2).sum())
    return (pairs / collisions if collisions else math.inf), int(pairs)


def plain_columns(sample: pa.Table, file_ids: np.ndarray, rows_per_file: float, columns: Sequence[str],
                  page_size: int = DEFAULT_DICTIONARY_PAGE_SIZE) -> list[str]:
    """Columns whose dictionary the writer would abandon in files of ``rows_per_file`` rows.

    ``sample``: rows of the table (any order), ``file_ids``: the output file of each row.
    A column qualifies when its estimated dictionary per file exceeds ``page_size`` or, with
    its ids, is no smaller than the plain values.
    """
    out = []
    for name in columns:
        col = sample.column(name).combine_chunks()
        size = entry_bytes(col.type, col)
        if size is None or len(col) == 0:
            continue
        nonnull = rows_per_file * (1.0 - col.null_count / len(col))
        seen = pc.count_distinct(col).as_py()
        if nonnull < 1 or (seen * size * 8 < page_size and seen * 4 < nonnull):
            continue  # few distinct values in the whole sample: the dictionary pays for itself
        distinct, pairs = distinct_per_file(col, file_ids)
        if pairs < EVIDENCE * nonnull:
            continue  # too few same-file pairs to tell a large dictionary from none
        d = min(distinct, nonnull)
        dictionary = d * size
        ids = nonnull * max(1, math.ceil(math.log2(max(d, 2)))) / 8
        if dictionary > page_size or dictionary + ids >= nonnull * size:
            out.append(name)
    return out
