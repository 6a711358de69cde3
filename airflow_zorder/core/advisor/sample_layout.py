"""A column set's layout simulated on a sample of the table's rows: what the statistics cannot show.

The estimate from min/max statistics (:mod:`~airflow_zorder.core.policy.clustered_reads`) takes columns as
independent; rows know better (a ship date and a receipt date move together, so clustering on one serves the
other). Given a sample, the advisor lays each of its best sets out here: the rows cut into files along the curve
by the clustering job's own key plan (:mod:`~airflow_zorder.core.layout.curve_keys`: sampled range ids, the
curve, the file boundaries), each file's bounds taken from its rows as stats rows, which the pruning evaluator
then judges like any snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from airflow_zorder.core.layout import curve_keys
from airflow_zorder.core.stats import value_order
from airflow_zorder.core.stats.stats_schema import file_stats_table

__all__ = ["DEFAULT_SAMPLE_ROWS", "bounds_stats", "layout_stats", "open_uri", "read_sample"]

DEFAULT_SAMPLE_ROWS = 20_000  # the operator's and the command line's sample unless told otherwise


def layout_stats(rows: pa.Table, order: Sequence[str], curve: str, num_files: int) -> pa.Table:
    """Stats rows (FILE_STATS_SCHEMA) of ``rows`` cut into ``num_files`` files along ``curve`` over ``order``."""
    order = list(order)
    plan = curve_keys.build_plan(rows.select(order), order, curve, num_files, salt_bits=0)
    keys = curve_keys.compute_keys(plan, [rows.column(c).combine_chunks() for c in order], None)
    return bounds_stats(rows, curve_keys.file_ids(plan, keys))


def bounds_stats(rows: pa.Table, file_of_row: np.ndarray) -> pa.Table:
    """Stats rows of the files ``file_of_row`` assigns the rows to: each file's min, max and rows per column."""
    t = rows.append_column("__file", pa.array(np.asarray(file_of_row, dtype=np.int64)))
    cols = rows.column_names
    agg = t.group_by("__file").aggregate(
        [(c, "min") for c in cols] + [(c, "max") for c in cols] + [("__file", "count")]
    )
    n = agg.num_rows
    paths = pa.array([f"part-{int(f):05d}.parquet" for f in agg["__file"].to_pylist()])

    def repeat(v: Any, type_: pa.DataType | None = None) -> pa.Array:
        return pa.repeat(pa.scalar(v, type_), n)

    return pa.concat_tables(
        file_stats_table(
            {
                "snapshot_id": repeat(0),
                "table_name": repeat("layout"),
                "path": paths,
                "column_name": repeat(c),
                "arrow_type": repeat(str(rows.schema.field(c).type)),
                "min_value": value_order.bounds_to_text(agg[f"{c}_min"]),
                "max_value": value_order.bounds_to_text(agg[f"{c}_max"]),
                "file_rows": agg["__file_count"],
                "value_count": agg["__file_count"],
                "null_count": pa.array(
                    [0] * n if rows.column(c).null_count == 0 else _nulls(t, c, agg["__file"]), pa.int64()
                ),
                "has_stats": repeat(True),
                "collected_at": repeat(0, pa.timestamp("us", tz="UTC")),
            },
            n,
        )
        for c in cols
    )


def _nulls(t: pa.Table, column: str, files: pa.Array) -> list[int]:
    nulls = t.filter(t.column(column).is_null()).group_by("__file").aggregate([("__file", "count")])
    got = dict(zip(nulls["__file"].to_pylist(), nulls["__file_count"].to_pylist()))
    return [int(got.get(f, 0)) for f in files.to_pylist()]


def read_sample(
    paths: Sequence[str],
    columns: Sequence[str],
    rows: int,
    open_file: Callable[[str], Any] | None = None,
    seed: int = 0,
) -> pa.Table:
    """About ``rows`` rows of ``columns`` from Parquet files: whole row groups drawn at random across the files
    (a reader's unit: only the row groups drawn are read, and only ``columns``), then rows drawn from them;
    ``open_file`` opens a path of a remote store (the hook's filesystems), local paths otherwise."""
    rng = np.random.default_rng(seed)
    groups = []
    for p in paths:
        f = pq.ParquetFile(p if open_file is None else open_file(p))
        groups += [(p, f, i, f.metadata.row_group(i).num_rows) for i in range(f.num_row_groups)]
    picked, total = [], 0
    for j in rng.permutation(len(groups)):
        p, f, i, n = groups[j]
        picked.append(f.read_row_group(i, columns=list(columns)))
        total += n
        if total >= 4 * rows:  # a few times the sample: rows of many row groups
            break
    table = pa.concat_tables(picked) if picked else pa.table({c: [] for c in columns})
    if table.num_rows > rows:
        table = table.take(pa.array(np.sort(rng.choice(table.num_rows, rows, replace=False))))
    return table


def open_uri(path: str) -> Any:
    """A Parquet file by its path or URI (``s3://``, ``gs://``, ``file:``...) with the store's default credentials."""
    from pyarrow import fs as pafs

    if "://" not in path and not path.startswith("file:"):
        return path
    filesystem, where = pafs.FileSystem.from_uri(path if "://" in path else "file://" + path[len("file:") :])
    return filesystem.open_input_file(where)
