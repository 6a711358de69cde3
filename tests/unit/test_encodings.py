"""Which columns skip the Parquet dictionary (core.encodings): near-unique ones do; repeating, skewed,
clustering-correlated and thinly sampled ones keep the writer's dictionary."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from airflow_zorder.core import encodings

ROWS_PER_FILE = 94_000  # TPC-H lineitem SF1 in 64 files


def _sample(n: int, files: np.ndarray, rng: np.random.Generator) -> pa.Table:
    return pa.table({
        "orderkey": pa.array(rng.integers(0, 1_500_000, n)),  # ~unique per file
        "comment": pa.array([f"text {x}" if x % 7 else None for x in rng.integers(0, 10**9, n)]),  # unique, nulls
        "shipdate": pa.array(rng.integers(8000, 10500, n).astype(np.int32)),  # 2,500 values
        "session": pa.array(files.astype(np.int64) * 100_000 + rng.integers(0, 9_400, n)),  # repeats within a file
        "zipf": pa.array(rng.zipf(1.5, n)),  # heavy skew
        "flag": pa.array(rng.random(n) < 0.5),  # booleans never get a dictionary
    })


def test_near_unique_columns_go_plain_and_the_rest_keep_dictionaries():
    rng = np.random.default_rng(0)
    n = encodings.sample_rows(6_000_000, 64, ROWS_PER_FILE)
    files = rng.integers(0, 64, n).astype(np.int32)
    t = _sample(n, files, rng)
    assert encodings.plain_columns(t, files, ROWS_PER_FILE, t.column_names) == ["orderkey", "comment"]


def test_session_like_column_is_estimated_per_file_not_globally():
    rng = np.random.default_rng(1)
    n = 40_000
    files = rng.integers(0, 64, n).astype(np.int32)
    t = _sample(n, files, rng)
    per_file, pairs = encodings.distinct_per_file(t.column("session").combine_chunks(), files)
    assert 7_000 < per_file < 12_000 and pairs > 10**6  # ~9,400 per file, though ~600,000 in the table
    assert encodings.distinct_per_file(t.column("comment").combine_chunks(), files)[0] == float("inf")


def test_too_few_same_file_pairs_keep_the_dictionary():
    rng = np.random.default_rng(2)
    n = 2_000  # spread over 4,096 files: almost no pair shares a file
    files = rng.integers(0, 4096, n).astype(np.int32)
    t = _sample(n, files, rng)
    assert encodings.plain_columns(t, files, ROWS_PER_FILE, t.column_names) == []
