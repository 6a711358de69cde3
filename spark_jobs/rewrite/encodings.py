"""Which data columns to write without a dictionary, judged on a few whole input files placed by the plans."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from airflow_zorder.core.layout import dictionary_choice
from airflow_zorder.core.layout.curve_keys import compute_keys, file_ids
from airflow_zorder.core.storage.io import FileSystem
from spark_jobs.rewrite.reading import read_batch, read_on_driver
from spark_jobs.rewrite.unit_work import UNIT_COL, UnitWork, file_offsets

MIN_ROWS_PER_FILE_FOR_ENCODINGS = 10_000  # smaller files: the dictionary work is too small to matter
SAMPLED_FILES = 2  # whole input files in the encodings sample at least: pairs across input files need two


def plain_encoded_columns(
    spark: SparkSession,
    units: Sequence[UnitWork],
    columns: list[str],
    schema: StructType,
    seed: int,
    fs: FileSystem | None = None,
) -> list[str]:
    """Data columns to write without a dictionary (see :mod:`airflow_zorder.core.layout.dictionary_choice`), from a small sample.

    The sample is a few whole input files (every column, cheap to read; at least
    :data:`SAMPLED_FILES`), thinned at random to about :func:`dictionary_choice.sample_rows` rows; each
    row's output file comes from its unit's plan on the driver, and pairs of rows from one input
    file are told from pairs across input files (a column in file order repeats within a file,
    not across). Small files on the driver's disk (``fs`` given) are read here with pyarrow,
    else by a Spark job. The two steps are :func:`encodings_sample` (needs no plan) and
    :func:`plain_from_sample`.
    """
    return plain_from_sample(spark, units, columns, encodings_sample(spark, units, schema, seed, fs))


@dataclass
class EncodingsSample:
    """Rows of a few whole input files (tagged by source i = ``chosen[i]``) and the generator that picked them."""

    rows: pa.Table
    chosen: list[tuple[UnitWork, str, float]]  # (unit, file, rows per file of that unit)
    rng: np.random.Generator


def encodings_sample(
    spark: SparkSession, units: Sequence[UnitWork], schema: StructType, seed: int, fs: FileSystem | None = None
) -> EncodingsSample | None:
    """Pick and read the encodings' sample files; None when output files are too small to matter.

    Needs only each unit's rows, files and output file count, not its plan: the job reads
    these while the plan's own sample is taken.
    """
    live = [u for u in units if u.rows]
    files = sum(u.num_files for u in live)
    total = sum(u.rows for u in live)
    per_file = total / max(1, files)
    if per_file < MIN_ROWS_PER_FILE_FOR_ENCODINGS:
        return None
    want = dictionary_choice.sample_rows(total, files, per_file)
    rng = np.random.default_rng(seed)
    picks = [(u, p, u.rows / len(u.paths)) for u in live for p in u.paths]
    chosen: list[tuple[UnitWork, str, float]] = []
    got = 0.0
    for i in rng.permutation(len(picks)):
        chosen.append(picks[i])
        got += picks[i][2]
        if got >= want and len(chosen) >= SAMPLED_FILES:
            break
    keep = min(1.0, 1.2 * want / max(1.0, got))
    parts = [(i, [path]) for i, (_, path, _) in enumerate(chosen)]  # tagged by source, not unit
    rows = read_on_driver(spark, fs, parts, schema, keep, seed) if fs is not None else None
    if rows is None:
        rows = read_batch(spark, parts, schema).sample(fraction=keep, seed=seed).toArrow()
    return EncodingsSample(rows, chosen, rng)


def plain_from_sample(
    spark: SparkSession, units: Sequence[UnitWork], columns: list[str], sample: EncodingsSample | None
) -> list[str]:
    """Place each sampled row in its output file by its unit's plan, then judge each column's dictionary."""
    live = [u for u in units if u.plan is not None and u.rows]
    if sample is None or sample.rows.num_rows == 0 or not live:
        return []
    rows, chosen, rng = sample.rows, sample.chosen, sample.rng
    files = sum(u.plan.num_files for u in live)
    per_file = sum(u.rows for u in live) / max(1, files)
    sources = rows.column(UNIT_COL).to_numpy().astype(np.int64)
    unit_ids = np.array([u.index for u, _, _ in chosen], dtype=np.int64)[sources]
    offsets, _ = file_offsets(units)
    fids = np.zeros(rows.num_rows, dtype=np.int64)
    for u in live:
        picked = np.flatnonzero(unit_ids == u.index)
        if len(picked):
            part = rows.take(pa.array(picked))
            salt = rng.integers(-(2**63), 2**63 - 1, len(picked), dtype=np.int64)
            k = compute_keys(u.plan, [part.column(c).combine_chunks() for c in columns], salt)
            fids[picked] = offsets[u.index] + file_ids(u.plan, k)
    same_source = dictionary_choice.same_source_weight(
        fids, sources, np.array([r for _, _, r in chosen]), sum(len(u.paths) for u in live), per_file, files
    )
    page = int(
        spark.sparkContext._jsc.hadoopConfiguration().get(
            "parquet.dictionary.page.size", str(dictionary_choice.DEFAULT_DICTIONARY_PAGE_SIZE)
        )
    )
    data_cols = [c for c in rows.column_names if c != UNIT_COL and "." not in c and "#" not in c]
    return dictionary_choice.plain_columns(rows, fids, per_file, data_cols, page, sources, same_source)
