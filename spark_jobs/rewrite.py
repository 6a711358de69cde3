"""Rewrite one unit's files in curve order, in a single pass over the input, with row verification.

Plan: sample the clustering columns (one cheap pass over them) -> KeyPlan on the driver.
Write: read -> observe(count, checksum) -> Arrow UDF (key + file route) -> repartition by
route (hash of a precomputed int per file, so no second sampling job) -> sort by key within
each file -> observe(count, checksum) of what is written -> Parquet in the staging dir.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from airflow_zorder.core import curves
from airflow_zorder.core.keys import KeyPlan, build_plan, compute_keys, file_ids

KEY_COL, ROUTE_COL, HASH_COL = "__zorder_key", "__zorder_route", "__zorder_hash"
MAX_SAMPLE_ROWS = 2_000_000


class VerificationError(RuntimeError):
    """The staged data does not hold exactly the input's rows; nothing was replaced."""


@dataclass
class Checksum:
    """Row count and order-independent checksum (sum of xxhash64 over all columns, as a decimal)."""

    rows: int
    checksum: int

    @classmethod
    def from_observation(cls, obs: Observation) -> "Checksum":
        got = obs.get
        return cls(int(got["rows"]), int(got["checksum"] or 0))


def row_hash(df: DataFrame) -> F.Column:
    """xxhash64 of every column of a row; the checksum sums it widened so ANSI mode cannot overflow."""
    return F.xxhash64(*[F.col(f"`{c}`") for c in df.columns])


def checksum_columns(df: DataFrame) -> list[F.Column]:
    """Aggregates for ``DataFrame.observe``: row count and decimal sum of row hashes."""
    return [
        F.count(F.lit(1)).alias("rows"),
        F.sum(row_hash(df).cast("decimal(38,0)")).alias("checksum"),
    ]


def checksum_of(df: DataFrame) -> Checksum:
    """Compute the checksum of a DataFrame with one aggregation job (used by full verification)."""
    row = df.agg(*checksum_columns(df)).collect()[0]
    return Checksum(int(row["rows"]), int(row["checksum"] or 0))


def sample_size(rows: int, num_files: int) -> int:
    """Rows to sample: enough for fine column quantiles and ~500 keys per output file."""
    return int(min(rows, MAX_SAMPLE_ROWS, max(100_000, 500 * num_files)))


def plan_unit(df: DataFrame, columns: list[str], curve: str, num_files: int, rows: int,
              num_ranges: int, salt_bits: int, seed: int) -> KeyPlan:
    """Sample the clustering columns (and row hash for the salt) and build the key plan on the driver."""
    want = sample_size(rows, num_files)
    fraction = min(1.0, want / rows * 1.1) if rows else 1.0
    sample_df = df.select(*[F.col(f"`{c}`") for c in columns], row_hash(df).alias(HASH_COL))
    if fraction < 1.0:
        sample_df = sample_df.sample(withReplacement=False, fraction=fraction, seed=seed)
    sample = sample_df.toArrow()
    return build_plan(sample, columns, curve, num_files, num_ranges, salt_bits, HASH_COL)


_ROUTES: dict[int, np.ndarray] = {}


def route_values(spark: SparkSession, num_files: int) -> np.ndarray:
    """For each file id f, an int whose Spark hash partitioning (pmod(hash(v), n)) lands in partition f.

    Computed by Spark itself, so routing is exact and needs no sampling job.
    """
    n = num_files
    if n in _ROUTES:
        return _ROUTES[n]
    rows = (
        spark.range(0, n * 64)
        .select(F.col("id").cast("int").alias("v"), F.expr(f"pmod(hash(cast(id as int)), {n})").alias("p"))
        .groupBy("p").agg(F.min("v").alias("v"))
        .collect()
    )
    lut = np.full(n, -1, dtype=np.int32)
    for r in rows:
        lut[r["p"]] = r["v"]
    if (lut < 0).any():
        raise RuntimeError(f"could not find routing values for all {n} files")
    _ROUTES[n] = lut
    return lut


def _key_udf(plan: KeyPlan, lut: np.ndarray):
    """Arrow UDF: struct of clustering columns + row hash -> struct(key binary, route int)."""
    ncols = len(plan.columns)

    @F.arrow_udf(f"struct<{KEY_COL}: binary, {ROUTE_COL}: int>")
    def zorder_key(batch: pa.Array) -> pa.Array:
        if isinstance(batch, pa.ChunkedArray):
            batch = batch.combine_chunks()
        fields = [batch.field(i) for i in range(ncols + 1)]
        keys = compute_keys(plan, fields[:ncols], fields[ncols])
        routes = lut[file_ids(plan, keys)]
        return pa.StructArray.from_arrays(
            [curves.keys_to_arrow(keys), pa.array(routes, type=pa.int32())], names=[KEY_COL, ROUTE_COL]
        )

    return zorder_key


def write_unit(spark: SparkSession, df: DataFrame, plan: KeyPlan, out_dir: str, compression: str,
               name: str) -> tuple[Checksum, Checksum]:
    """Write ``df`` to ``out_dir`` in curve order; return (input, output) checksums seen by that write."""
    data_cols = list(df.columns)
    obs_in, obs_out = Observation(f"{name}_in"), Observation(f"{name}_out")
    observed = df.observe(obs_in, *checksum_columns(df))
    n = plan.num_files
    lut = route_values(spark, n)
    udf = _key_udf(plan, lut)
    packed = F.struct(*[F.col(f"`{c}`") for c in plan.columns], row_hash(df).alias(HASH_COL))
    keyed = observed.withColumn("__zorder", udf(packed)).select(
        *[F.col(f"`{c}`") for c in data_cols],
        F.col(f"__zorder.{KEY_COL}").alias(KEY_COL),
        F.col(f"__zorder.{ROUTE_COL}").alias(ROUTE_COL),
    )
    laid_out = keyed.repartition(n, F.col(ROUTE_COL)).sortWithinPartitions(KEY_COL).select(
        *[F.col(f"`{c}`") for c in data_cols]
    )
    final = laid_out.observe(obs_out, *checksum_columns(laid_out))
    final.write.mode("errorifexists").option("compression", compression).parquet(out_dir)
    return Checksum.from_observation(obs_in), Checksum.from_observation(obs_out)


def verify(expected_rows: int, observed_in: Checksum, observed_out: Checksum, staged_rows: int,
           staged_full: Checksum | None, label: str) -> None:
    """Refuse to commit unless every measure of the staged rows equals the input's."""
    problems = []
    if observed_in.rows != expected_rows:
        problems.append(f"the write read {observed_in.rows} rows but the input files hold {expected_rows}")
    if observed_out != observed_in:
        problems.append(f"rows written {observed_out.rows} (checksum {observed_out.checksum}) differ from rows "
                        f"read {observed_in.rows} (checksum {observed_in.checksum})")
    if staged_rows != observed_in.rows:
        problems.append(f"staged files hold {staged_rows} rows, input has {observed_in.rows}")
    if staged_full is not None and staged_full != observed_in:
        problems.append(f"re-reading the staged files gives {staged_full.rows} rows (checksum "
                        f"{staged_full.checksum}), input has {observed_in.rows} (checksum {observed_in.checksum})")
    if problems:
        raise VerificationError(f"{label}: verification failed, table left unchanged: " + "; ".join(problems))
