"""Which columns skip the Parquet dictionary (core.layout.dictionary_choice): near-unique ones do; repeating, skewed,
clustering-correlated and thinly sampled ones keep the writer's dictionary."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from airflow_zorder.core.layout import dictionary_choice

ROWS_PER_FILE = 94_000  # TPC-H lineitem SF1 in 64 files


def _sample(n: int, files: np.ndarray, rng: np.random.Generator) -> pa.Table:
    return pa.table(
        {
            "orderkey": pa.array(rng.integers(0, 1_500_000, n)),  # ~unique per file
            "comment": pa.array([f"text {x}" if x % 7 else None for x in rng.integers(0, 10**9, n)]),  # unique, nulls
            "shipdate": pa.array(rng.integers(8000, 10500, n).astype(np.int32)),  # 2,500 values
            "session": pa.array(files.astype(np.int64) * 100_000 + rng.integers(0, 9_400, n)),  # repeats within a file
            "zipf": pa.array(rng.zipf(1.5, n)),  # heavy skew
            "flag": pa.array(rng.random(n) < 0.5),  # booleans never get a dictionary
        }
    )


def test_near_unique_columns_go_plain_and_the_rest_keep_dictionaries():
    rng = np.random.default_rng(0)
    n = dictionary_choice.sample_rows(6_000_000, 64, ROWS_PER_FILE)
    files = rng.integers(0, 64, n).astype(np.int32)
    t = _sample(n, files, rng)
    assert dictionary_choice.plain_columns(t, files, ROWS_PER_FILE, t.column_names) == ["orderkey", "comment"]


def test_session_like_column_is_estimated_per_file_not_globally():
    rng = np.random.default_rng(1)
    n = 40_000
    files = rng.integers(0, 64, n).astype(np.int32)
    t = _sample(n, files, rng)
    per_file, pairs = dictionary_choice.distinct_per_file(t.column("session").combine_chunks(), files)
    assert 7_000 < per_file < 12_000 and pairs > 10**6  # ~9,400 per file, though ~600,000 in the table
    assert dictionary_choice.distinct_per_file(t.column("comment").combine_chunks(), files)[0] == float("inf")


def test_too_few_same_file_pairs_keep_the_dictionary():
    rng = np.random.default_rng(2)
    n = 2_000  # spread over 4,096 files: almost no pair shares a file
    files = rng.integers(0, 4096, n).astype(np.int32)
    t = _sample(n, files, rng)
    assert dictionary_choice.plain_columns(t, files, ROWS_PER_FILE, t.column_names) == []


def _whole_file_sample(k: int, per_source: int, spread, rng: np.random.Generator):
    """Rows of k whole input files (per_source sampled rows each) of a 64-file table; spread(i, n) -> output files."""
    sources = np.repeat(np.arange(k), per_source)
    files = np.concatenate([spread(i, per_source) for i in range(k)]).astype(np.int64)
    return sources, files


def test_a_column_in_input_file_order_is_judged_as_the_output_files_mix_it():
    """Ids assigned at ingestion repeat within an input file (4 rows per order), never across: plain in the output."""
    rng = np.random.default_rng(2)
    k, per = 8, 3_000
    sources, files = _whole_file_sample(k, per, lambda i, n: rng.integers(0, 64, n), rng)
    orders = np.concatenate([i * 23_500 + rng.integers(0, 23_500, per) for i in range(k)])  # ~4 rows per order
    t = pa.table({"orderkey": pa.array(orders.astype(np.int64))})
    w = dictionary_choice.same_source_weight(files, sources, np.full(k, 94_000), 64, ROWS_PER_FILE, 64)
    assert 0.5 / 64 < w < 2 / 64  # every input file feeds every output file evenly
    mixed, _ = dictionary_choice.distinct_per_file(t.column("orderkey").combine_chunks(), files, sources, w)
    assert mixed > ROWS_PER_FILE
    assert dictionary_choice.plain_columns(
        t, files, ROWS_PER_FILE, ["orderkey"], source_ids=sources, same_source=w
    ) == ["orderkey"]
    # one whole input file alone (no pairs across files, as this sample once was) sees the repeats
    # of its orders in every output file: a dictionary of ~23,500 values
    single = pa.table({"orderkey": pa.array(rng.integers(0, 23_500, 24_000))})
    one_files = rng.integers(0, 64, 24_000)
    pooled, _ = dictionary_choice.distinct_per_file(single.column("orderkey").combine_chunks(), one_files)
    assert pooled < 40_000
    assert dictionary_choice.plain_columns(single, one_files, ROWS_PER_FILE, ["orderkey"]) == []


def test_one_value_per_input_file_keeps_its_dictionary():
    """Daily input files (one date each) mix into output files with ~64 dates: a small dictionary."""
    rng = np.random.default_rng(3)
    k, per = 8, 3_000
    sources, files = _whole_file_sample(k, per, lambda i, n: rng.integers(0, 64, n), rng)
    day = pa.array((19_000 + sources).astype(np.int32))
    w = dictionary_choice.same_source_weight(files, sources, np.full(k, 94_000), 64, ROWS_PER_FILE, 64)
    distinct, _ = dictionary_choice.distinct_per_file(day, files, sources, w)
    assert 40 < distinct < 100
    assert (
        dictionary_choice.plain_columns(
            pa.table({"day": day}), files, ROWS_PER_FILE, ["day"], source_ids=sources, same_source=w
        )
        == []
    )


def test_re_clustering_a_clustered_table_counts_input_file_repeats():
    """When each output file is one input file's rows again, repeats within an input file are repeats in the output."""
    rng = np.random.default_rng(4)
    k, per = 8, 3_000
    chosen = rng.choice(64, k, replace=False)
    sources, files = _whole_file_sample(k, per, lambda i, n: np.full(n, chosen[i]), rng)
    w = dictionary_choice.same_source_weight(files, sources, np.full(k, 94_000), 64, ROWS_PER_FILE, 64)
    assert w > 0.9
    ranged = pa.array(np.concatenate([i * 1_000 + rng.integers(0, 1_000, per) for i in range(k)]))
    distinct, _ = dictionary_choice.distinct_per_file(ranged, files, sources, w)
    assert 500 < distinct < 2_000  # ~1,000 values per file, not near-unique
