"""The table-level clustering report over a footer stats table: per column, per partition, and the headline.

The project's one metrics entry point (the sensor, the UI and the benchmarks read it): :func:`table_clustering`
and :func:`partition_clustering` aggregate :mod:`~airflow_zorder.core.policy.column_clustering` over the rows of
a stats table (:data:`~airflow_zorder.core.stats.stats_schema.FILE_STATS_SCHEMA`, read directly). The pieces
live in their own modules: :mod:`~airflow_zorder.core.policy.file_bounds` (bounds to sort keys),
:mod:`~airflow_zorder.core.policy.point_queries` (point queries and the ideal),
:mod:`~airflow_zorder.core.policy.column_clustering` (one column's clustering, grouped),
:mod:`~airflow_zorder.core.policy.write_amplification` (what re-clustering costs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.policy.column_clustering import ColumnClustering, PreparedBounds, cluster_groups
from airflow_zorder.core.stats import stats_schema

__all__ = ["partition_clustering", "table_clustering"]


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
    target_file_size: int | None = None,
) -> dict[Any, dict[str, ColumnClustering]]:
    """``{partition: {column: ColumnClustering}}`` from a footer stats table.

    ``stats_table`` has :data:`~airflow_zorder.core.stats.stats_schema.FILE_STATS_SCHEMA`
    (one row per (file, column): a snapshot or footer rows); files are grouped by ``partition_key``
    (the Hive partition path, e.g. ``"dt=2024-01-01"``; ``None`` for files
    outside any partition).  ``num_clustering_columns`` defaults to
    ``len(columns)``; ``target_file_size`` sizes the files of the bytes-read
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
        prep = PreparedBounds.of(*stats_schema.typed_bounds(t))
        res = cluster_groups(prep, gids, len(names), d, c, _file_sizes(t), target_file_size).results
        for name, r in zip(names, res):
            if r.num_files:
                out.setdefault(name, {})[c] = r
    return out


def table_clustering(
    stats_table: pa.Table,
    columns: Sequence[str] | str,
    num_clustering_columns: int | None = None,
    partition_key: str = "partition",
    target_file_size: int | None = None,
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
      ``target_file_size``; see :class:`ColumnClustering`).
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
        prep = PreparedBounds.of(*stats_schema.typed_bounds(t))
        sizes = _file_sizes(t)
        whole = cluster_groups(prep, None, 1, d, c, sizes, target_file_size).results[0]
        per_column[c] = whole.to_dict()
        gids, names = _group_ids(t[partition_key])
        res = cluster_groups(prep, gids, len(names), d, c, sizes, target_file_size).results
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
