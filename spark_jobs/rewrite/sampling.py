"""The plan's sample (stratified over the batch's units) and one key plan per unit from it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from airflow_zorder.core.layout.curve_keys import build_plan, column_boundaries, plan_bits
from airflow_zorder.core.storage.io import FileSystem
from spark_jobs import jvm_keys
from spark_jobs.rewrite.reading import read_on_driver
from spark_jobs.rewrite.unit_work import HASH_COL, UNIT_COL, UnitWork

_col = jvm_keys.quoted

MAX_SAMPLE_ROWS = 2_000_000


def sample_size(rows: int, num_files: int) -> int:
    """Rows to sample for a unit: enough for fine column quantiles and ~500 keys per output file."""
    return int(min(rows, max(100_000, 500 * num_files)))


def plan_batch(
    df: DataFrame,
    units: Sequence[UnitWork],
    columns: list[str],
    curve: str,
    num_ranges: int,
    salt_bits: int,
    seed: int,
    fs: FileSystem | None = None,
) -> None:
    """One stratified sample for the whole batch, then a KeyPlan per unit (set on ``unit.plan``).

    ``fs``: where the units' files are, when they may be on this machine's disk; see
    :func:`plan_sample_on_driver`. Otherwise a Spark job draws the sample.
    """
    wanted = {u.index: sample_size(u.rows, u.num_files) for u in units}
    scale = min(1.0, MAX_SAMPLE_ROWS / max(1, sum(wanted.values())))
    fractions = {u.index: min(1.0, 1.1 * scale * wanted[u.index] / u.rows) for u in units}
    sample = plan_sample_on_driver(df, units, columns, fractions, seed, fs) if fs is not None else None
    if sample is None:
        # the sample's salt only shapes the file boundaries, so a cheap stand-in for the row hash will do:
        # hashing the row id keeps this pass to the clustering columns instead of every column
        sample_df = df.select(
            F.col(UNIT_COL), *[_col(c) for c in columns], F.xxhash64(F.monotonically_increasing_id()).alias(HASH_COL)
        )
        if any(f < 1.0 for f in fractions.values()):
            sample_df = sample_df.sampleBy(UNIT_COL, fractions=fractions, seed=seed)
        sample = sample_df.toArrow()
    unit_ids = sample.column(UNIT_COL)
    parts = {u.index: sample.filter(pc.equal(unit_ids, u.index)) for u in units}
    bounds = {i: column_boundaries(part, columns, num_ranges) for i, part in parts.items()}
    for u in units:  # a bin clustered on some columns: the others get one range (the curve then orders the rest)
        if u.on is not None:
            keep = {c.lower() for c in u.on}
            bounds[u.index] = tuple(b if c.lower() in keep else b.slice(0, 0) for c, b in zip(columns, bounds[u.index]))
    widest = max(plan_bits(b) for b in bounds.values())  # one bit width per batch: one set of JVM expressions
    for u in units:
        u.plan = build_plan(
            parts[u.index],
            columns,
            curve,
            u.num_files,
            num_ranges,
            salt_bits,
            HASH_COL,
            min_bits=widest,
            boundaries=bounds[u.index],
            order=u.on,
        )


def plan_sample_on_driver(
    df: DataFrame,
    units: Sequence[UnitWork],
    columns: list[str],
    fractions: Mapping[int, float],
    seed: int,
    fs: FileSystem,
) -> pa.Table | None:
    """The plan's sample read here with pyarrow, when Spark runs in this process (local master) on local files.

    There the driver's threads are the executors' cores, so reading the clustering columns
    here is as parallel as a Spark job, without its scheduling, its row-by-row sampling and
    its Arrow stream through py4j (SF1 lineitem: ~0.1 s against 0.4-0.55 s). The rows are
    Bernoulli draws at each unit's fraction, as ``sampleBy`` draws them, with a random
    stand-in for the salt. None (the caller runs the Spark job) on a cluster, for remote
    files, and for anything pyarrow cannot read or type as Spark does.
    """
    sc = df.sparkSession.sparkContext
    if not sc.master.startswith("local"):
        return None
    rows = read_on_driver(
        df.sparkSession,
        fs,
        [(u.index, u.paths) for u in units],
        df.schema,
        fractions,
        seed,
        columns=columns,
        max_bytes=None,
        threads=max(1, sc.defaultParallelism),
    )
    if rows is None:
        return None
    salt = np.random.default_rng([seed, 1]).integers(-(2**63), 2**63 - 1, rows.num_rows, dtype=np.int64)
    return rows.append_column(HASH_COL, pa.array(salt))
