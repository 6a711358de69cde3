"""Stats rows from a table format's own per-file statistics: the one assembler of Delta's and Iceberg's rows.

A format module decodes its metadata into typed bounds per column (:class:`ColumnBounds`: Arrow arrays, one
entry per live file, with what is exact and why a file has none) plus the per-file facts (path, partition,
size, rows); :func:`assemble` turns them into :data:`~airflow_zorder.core.stats.stats_schema.FILE_STATS_SCHEMA`
rows, the bounds as lossless text and order keys exactly as the footer reader writes them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from airflow_zorder.core.stats import stats_schema as ss
from airflow_zorder.core.stats import value_order

__all__ = ["ColumnBounds", "assemble"]


@dataclass
class ColumnBounds:
    """One column's statistics over a snapshot's live files, as the format's metadata keeps them."""

    name: str
    bound_type: pa.DataType | None  # the bounds' Arrow type; None: the column has no bounds (nested, unsupported)
    min: pa.Array
    max: pa.Array
    nulls: pa.Array  # null counts (int64; null = unknown)
    has: np.ndarray  # bool per file: the bounds (or all-null) are known
    min_exact: Sequence[bool | None]  # true exact, false a bound (truncated), None unknown
    max_exact: Sequence[bool | None]
    reason: np.ndarray  # object per file: why ``has`` is false (``metadata_merge.LACKING_REASONS`` when a footer may)


def assemble(
    per_file: Mapping[str, Any],
    columns: Sequence[ColumnBounds],
    *,
    snapshot_id: int,
    table_name: str,
    method: str,
    collected_at: dt.datetime,
) -> pa.Table:
    """FILE_STATS_SCHEMA rows: one per (file, column), sorted by column then path.

    ``per_file``: arrays of one entry per file for ``path``, ``partition``, ``partition_values``, ``file_size``,
    ``file_mtime_ms`` and ``file_rows`` (``value_count`` is the file's rows: flat columns).
    """
    n = len(per_file["path"])
    chunks = []
    for c in columns:
        arrow_type = None if c.bound_type is None else str(c.bound_type)
        lo_text = value_order.bounds_to_text(c.min) if c.bound_type is not None else pa.nulls(n, pa.string())
        hi_text = value_order.bounds_to_text(c.max) if c.bound_type is not None else pa.nulls(n, pa.string())
        cols = {
            **per_file,
            "snapshot_id": pa.array(np.full(n, snapshot_id, dtype=np.int64)),
            "table_name": pa.array([table_name] * n, pa.string()),
            "column_name": pa.array([c.name] * n, pa.string()),
            "arrow_type": pa.array([arrow_type] * n, pa.string()),
            "min_value": lo_text,
            "max_value": hi_text,
            "null_count": c.nulls,
            "value_count": per_file["file_rows"],
            "has_stats": pa.array(c.has, pa.bool_()),
            "min_exact": pa.array(list(c.min_exact), pa.bool_()),
            "max_exact": pa.array(list(c.max_exact), pa.bool_()),
            "reason": pa.array(list(c.reason), pa.string()),
            "method": pa.array([method] * n, pa.string()),
            "collected_at": pa.array([collected_at] * n, pa.timestamp("us", tz="UTC")),
            **ss.bound_columns(lo_text, hi_text, pa.array([arrow_type] * n, pa.string())),
        }
        chunks.append(ss.file_stats_table(cols, n))
    rows = pa.concat_tables(chunks) if chunks else ss.empty_file_stats()
    if rows.num_rows:
        rows = rows.sort_by([("column_name", "ascending"), ("path", "ascending")])
    return rows
