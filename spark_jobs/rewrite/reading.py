"""The units' input files: as one Spark DataFrame, their row counts from footers, and read here with pyarrow."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, MapType, StructType

from airflow_zorder.core.stats import footer_stats
from airflow_zorder.core.storage.io import FileSystem, os_path
from spark_jobs.rewrite.session_settings import driver_listing
from spark_jobs.rewrite.unit_work import UNIT_COL


def read_batch(
    spark: SparkSession, parts: Sequence[tuple[int, Sequence[str]]], schema: StructType, local: bool = False
) -> DataFrame:
    """Union of the units' files (``(unit index, paths)`` pairs), each row tagged with its unit; all read with ``schema``.

    ``local``: the files are on the driver's disk (see :func:`~spark_jobs.rewrite.session_settings.driver_listing`).
    """
    with driver_listing(spark, local):
        frames = [
            spark.read.schema(schema).parquet(*paths).withColumn(UNIT_COL, F.lit(index)) for index, paths in parts
        ]
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


def count_rows(df: DataFrame) -> dict[int, int]:
    """Rows per unit (Parquet answers from footers: no column is read)."""
    return {r[UNIT_COL]: r["count"] for r in df.groupBy(UNIT_COL).count().collect()}


def on_this_disk(fs: FileSystem, parts: Sequence[tuple[int, Sequence[str]]]) -> list[tuple[int, str]] | None:
    """``(tag, path on this machine's disk)`` for every file of ``parts``; None if any is elsewhere."""
    flat = [(tag, os_path(fs, p)) for tag, paths in parts for p in paths]
    return None if any(p is None for _, p in flat) else flat


def footer_counts(fs: FileSystem, parts: Sequence[tuple[int, Sequence[str]]]) -> dict[int, int] | None:
    """Rows per unit read from the files' footers here on the driver when every file is on this machine's disk.

    Saves a Spark job per count (~0.3 s each); None for remote stores, or when a footer does not
    parse, so that :func:`count_rows` (and Spark's own error for the file) takes over.
    """
    flat = on_this_disk(fs, parts)
    if flat is None:
        return None
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            rows = list(pool.map(footer_stats.row_count, [p for _, p in flat]))
    except (OSError, ValueError, pa.ArrowException):
        return None
    out: dict[int, int] = {}
    for (unit, _), n in zip(flat, rows):
        out[unit] = out.get(unit, 0) + n
    return out


#: the encodings sample's files are read on the driver when this small in all (else by a Spark job)
DRIVER_READ_MAX_BYTES = 64 << 20


def _arrow_schema(schema: StructType, large: bool) -> pa.Schema:
    """Spark's Arrow schema for ``schema`` with timestamps in UTC: Spark 4.2 takes ``timezone=``, 4.1 ``timestamp_utc=``."""
    from pyspark.sql.pandas.types import to_arrow_schema

    try:
        return to_arrow_schema(schema, timezone="UTC", prefers_large_types=large)
    except TypeError:  # Spark 4.1
        return to_arrow_schema(schema, timestamp_utc=True, prefers_large_types=large)


def read_on_driver(
    spark: SparkSession,
    fs: FileSystem,
    parts: Sequence[tuple[int, Sequence[str]]],
    schema: StructType,
    keep: float | Mapping[int, float] = 1.0,
    seed: int = 0,
    columns: Sequence[str] | None = None,
    max_bytes: int | None = DRIVER_READ_MAX_BYTES,
    threads: int = 1,
) -> pa.Table | None:
    """The files (``(tag, paths)``) read here with pyarrow, as Spark's ``toArrow`` types them, ``keep`` of their rows at random.

    ``keep``: one fraction, or one per tag. ``columns``: exactly these (each an atomic column
    of ``schema`` in every file, else None); by default every atomic column of ``schema``
    that every file holds under the same name (others keep their dictionary, the writer's
    default). None unless every file is on this disk and, with ``max_bytes``, they total at
    most that. Row group by row group, so the driver holds only the kept rows and one row
    group per thread; each file's rows are drawn by a generator seeded from ``seed`` and its
    position, so the result does not depend on ``threads``. Saves a Spark job and its Arrow
    stream through py4j. Anything pyarrow cannot read or cast gives None, and the caller
    asks Spark, which reports a bad file as it would anyway.
    """
    import pyarrow.parquet as pq

    local = on_this_disk(fs, parts)
    if not local:
        return None
    atomic = [f for f in schema.fields if not isinstance(f.dataType, (ArrayType, MapType, StructType))]
    large = str(spark.conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false")).lower() == "true"
    try:
        if max_bytes is not None and sum(os.path.getsize(p) for _, p in local) > max_bytes:
            return None
        files = [(tag, pq.ParquetFile(p)) for tag, p in local]
        present = set.intersection(*[set(f.schema_arrow.names) for _, f in files])
        if columns is None:
            fields = [f for f in atomic if f.name in present]
        else:
            by_name = {f.name: f for f in atomic}
            if any(c not in by_name or c not in present for c in columns):
                return None
            fields = [by_name[c] for c in columns]
        target = _arrow_schema(StructType(fields), large)
        target = pa.schema([f.with_nullable(True) for f in target])

        def read(i: int) -> pa.Table:
            tag, f = files[i]
            fraction = keep.get(tag, 0.0) if isinstance(keep, Mapping) else keep
            rng = np.random.default_rng([seed, 0, i])
            groups = []
            for g in range(f.num_row_groups):
                t = f.read_row_group(g, columns=target.names, use_threads=False).select(target.names)
                if fraction < 1.0:
                    t = t.take(np.flatnonzero(rng.random(t.num_rows) < fraction))
                groups.append(t.cast(target))
            t = pa.concat_tables(groups) if groups else target.empty_table()
            return t.append_column(UNIT_COL, pa.array(np.full(t.num_rows, tag, np.int32)))

        if threads > 1 and len(files) > 1:
            with ThreadPoolExecutor(max_workers=min(threads, len(files))) as pool:
                tables = list(pool.map(read, range(len(files))))
        else:
            tables = [read(i) for i in range(len(files))]
        return pa.concat_tables(tables)
    except (OSError, ValueError, TypeError, pa.ArrowException):
        return None
