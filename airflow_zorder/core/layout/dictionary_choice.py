"""Which columns to write without a Parquet dictionary: those the writer would build one for, then abandon.

parquet-mr dictionary-encodes every column and falls back to PLAIN when the dictionary passes
``parquet.dictionary.page.size`` (1 MiB) or stops paying for itself (dictionary + ids >= plain
values). For near-unique columns (ids, prices, free text) in a re-clustered file that is work
thrown away -- every value hashed into a dictionary, then the page re-encoded -- about a fifth of
the write's CPU on TPC-H lineitem. A sample of rows with the output file each lands in
estimates each column's distinct values per file from pair collisions within files; skew and
correlation with the clustering columns both add collisions, so the estimate errs toward keeping
the dictionary (the writer's own choice). The sample is a few whole input files: pairs from one
input file and pairs across input files are counted apart and mixed as the output files mix
input files, so a column in input-file order is judged as the output files will hold it.
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
    """Rows to sample so that same-file pairs reach :data:`EVIDENCE` x ``rows_per_file`` (pairs ~ n^2 / 2 files).

    At least 60,000: with 20,000 the estimate for TPC-H ``l_partkey`` per Z-order file (42,000
    distinct) ranged 37,000-73,000 over seeds and once crossed the PLAIN threshold (~69,000);
    with 60,000 it stays within 45,000-51,000.
    """
    return int(min(rows, cap, max(60_000, math.sqrt(2 * EVIDENCE * max(1, num_files) * max(1.0, rows_per_file)) + 1)))


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


def _pairs(groups: np.ndarray) -> float:
    """Unordered pairs of rows that share a group."""
    k = np.unique(groups, return_counts=True)[1].astype(np.float64)
    return float((k * (k - 1) / 2).sum())


def same_source_weight(
    file_ids: np.ndarray,
    source_ids: np.ndarray,
    source_rows: np.ndarray,
    num_sources: int,
    rows_per_file: float,
    num_files: int,
) -> float:
    """Estimated share of an output file's row pairs whose two rows come from the same input file, in the whole table.

    The sample holds a few whole input files; each one's sampled rows, scaled to its size, tell
    how it spreads over the output files, and the table's other input files are taken to spread
    alike: 1 / (input files) when every input file feeds every output file evenly, 1 when each
    output file is one input file's rows (re-clustering a table already clustered this way).
    ``source_rows``: rows in each sampled input file, indexed by source id.
    """
    sampled = np.bincount(source_ids, minlength=len(source_rows)).astype(np.float64)
    scale = np.where(sampled > 0, np.asarray(source_rows, dtype=np.float64) / np.maximum(sampled, 1), 0.0)
    width = int(file_ids.max()) + 1
    pair_ids, counts = np.unique(np.asarray(source_ids, np.int64) * width + file_ids, return_counts=True)
    rows_in = counts * scale[pair_ids // width]  # rows of input i landing in output o
    k = int((sampled > 0).sum())
    same = (num_sources / max(1, k)) * float((rows_in**2).sum())
    return float(min(1.0, same / max(1.0, num_files * rows_per_file**2)))


def distinct_per_file(
    values: pa.Array, file_ids: np.ndarray, source_ids: np.ndarray | None = None, same_source: float | None = None
) -> tuple[float, int]:
    """(estimated distinct non-null values per file, same-file pairs seen): 1 / P(two rows of a file are equal).

    Pooled over files, so files with a handful of sampled rows still count. Infinite when no
    pair collides. With ``source_ids`` (the input file of each row, the sample being a few
    whole input files) and ``same_source`` (:func:`same_source_weight`), pairs from one input
    file and pairs across input files are measured apart and mixed as the whole table mixes
    them: a column in input-file order (ids assigned at ingestion) repeats within an input file
    far more than in the output files, which a whole-file sample alone would count as a small
    dictionary. Without pairs across input files the pooled estimate stands.
    """
    valid = pc.is_valid(values).to_numpy(zero_copy_only=False)
    files = np.asarray(file_ids, dtype=np.int64)[valid]
    if len(files) < 2:
        return math.inf, 0
    encoded = pc.dictionary_encode(values.filter(pa.array(valid)))
    ids = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    width = len(encoded.dictionary) + 1
    pairs, collisions = _pairs(files), _pairs(files * width + ids)
    if source_ids is not None and same_source is not None:
        src = np.asarray(source_ids, dtype=np.int64)[valid]
        by_source = files * (int(src.max()) + 1) + src
        pairs_same, collisions_same = _pairs(by_source), _pairs(by_source * width + ids)
        pairs_cross, collisions_cross = pairs - pairs_same, collisions - collisions_same
        if pairs_same > 0 and pairs_cross > 0:
            p = same_source * collisions_same / pairs_same + (1 - same_source) * collisions_cross / pairs_cross
            return (1 / p if p > 0 else math.inf), int(pairs)
    return (pairs / collisions if collisions else math.inf), int(pairs)


def plain_columns(
    sample: pa.Table,
    file_ids: np.ndarray,
    rows_per_file: float,
    columns: Sequence[str],
    page_size: int = DEFAULT_DICTIONARY_PAGE_SIZE,
    source_ids: np.ndarray | None = None,
    same_source: float | None = None,
) -> list[str]:
    """Columns whose dictionary the writer would abandon in files of ``rows_per_file`` rows.

    ``sample``: rows of the table (any order), ``file_ids``: the output file of each row;
    ``source_ids``/``same_source``: see :func:`distinct_per_file`. A column qualifies when its
    estimated dictionary per file exceeds ``page_size`` or, with its ids, is no smaller than
    the plain values.
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
        distinct, pairs = distinct_per_file(col, file_ids, source_ids, same_source)
        if pairs < EVIDENCE * nonnull:
            continue  # too few same-file pairs to tell a large dictionary from none
        d = min(distinct, nonnull)
        dictionary = d * size
        ids = nonnull * max(1, math.ceil(math.log2(max(d, 2)))) / 8
        if dictionary > page_size or dictionary + ids >= nonnull * size:
            out.append(name)
    return out
