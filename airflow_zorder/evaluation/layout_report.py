"""How well a Parquet table is laid out for point queries, measured from its footers.

Query values are drawn from the data itself (uniformly over rows, so frequent values
are asked for more often, as real queries do); for each value the fraction of files
whose footer min/max contains it is computed with the metrics module. Used by the demo,
the tests and the benchmarks alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds

from airflow_zorder.core.policy import point_queries
from airflow_zorder.core.stats import footer_stats


def data_files(table_dir: str) -> list[str]:
    """The visible Parquet files of a table directory (``_``/``.``-prefixed entries skipped)."""
    return footer_stats.list_parquet_files(table_dir)


def sample_values(files: Sequence[str], columns: Sequence[str], n: int, seed: int = 0) -> dict[str, pa.Array]:
    """``n`` values per column drawn uniformly over the rows of ``files`` (nulls dropped)."""
    table = ds.dataset(list(files), format="parquet").to_table(columns=list(columns))
    rng = np.random.default_rng(seed)
    idx = pa.array(rng.integers(0, table.num_rows, size=min(n, table.num_rows)) if table.num_rows else [], pa.int64())
    picked = table.take(idx)
    return {c: picked.column(c).combine_chunks().drop_null() for c in columns}


def point_query_report(
    table_dir: str,
    columns: Sequence[str],
    n_values: int = 1000,
    seed: int = 0,
    values: dict[str, pa.Array] | None = None,
) -> dict[str, Any]:
    """Files, and per column the mean fraction of files a point query reads, plus the ideal for d columns."""
    files = data_files(table_dir)
    vals = values if values is not None else sample_values(files, columns, n_values, seed)
    stats = footer_stats.read_footers_parallel(files, list(columns))
    fractions = point_queries.files_fraction_for_columns(stats, list(columns), vals)
    n = len(files)
    return {
        "files": n,
        "fractions": {c: round(float(f), 4) for c, f in fractions.items()},
        "ideal": round(point_queries.ideal_point_query_fraction(max(n, 1), len(columns)), 4),
    }
