"""The curve key and output-file route of every row: JVM expressions (:mod:`spark_jobs.jvm_keys`) or an Arrow UDF."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from airflow_zorder.core.layout import curves
from airflow_zorder.core.layout.curve_keys import KeyPlan, as_sortable, compute_keys, file_ids, is_compact, to_signed
from spark_jobs import jvm_keys
from spark_jobs.rewrite.unit_work import HASH_COL, KEY_COL, ROUTE_COL, UNIT_COL, UnitWork, file_offsets

_col = jvm_keys.quoted


def _spark_hash_int(values: np.ndarray, seed: int = 42) -> np.ndarray:
    """Spark's ``hash(int)`` (Murmur3_x86_32.hashInt with seed 42), vectorised: what its hash partitioner uses."""
    m = np.uint32
    with np.errstate(over="ignore"):
        k = values.astype(np.int32).view(np.uint32) * m(0xCC9E2D51)
        k = (k << m(15)) | (k >> m(17))
        k = k * m(0x1B873593)
        h = np.full(len(values), seed, dtype=np.uint32) ^ k
        h = (h << m(13)) | (h >> m(19))
        h = h * m(5) + m(0xE6546B64)
        h ^= m(4)  # the input length in bytes
        h ^= h >> m(16)
        h = h * m(0x85EBCA6B)
        h ^= h >> m(13)
        h = h * m(0xC2B2AE35)
        h ^= h >> m(16)
    return h.view(np.int32)


def route_values(num_files: int) -> np.ndarray:
    """For each file f, an int whose Spark hash partitioning (``pmod(hash(v), n)``) lands in partition f.

    Routing by these values is exact and needs no sampling job (``repartitionByRange`` runs
    one); tests check the hash against Spark's own ``hash`` expression.
    """
    n = num_files
    none = np.iinfo(np.int64).max
    lut = np.full(n, none, dtype=np.int64)
    start = 0
    while (lut == none).any():  # 64 candidates per file leave none empty in practice
        v = np.arange(start, start + 64 * n, dtype=np.int64)
        np.minimum.at(lut, np.mod(_spark_hash_int(v).astype(np.int64), n), v)
        start += 64 * n
    return lut.astype(np.int32)


def _key_udf(plans: dict[int, KeyPlan], offsets: dict[int, int], lut: np.ndarray, ncols: int):
    """Arrow UDF: struct(unit, clustering columns..., row hash) -> struct(key, route int).

    The key is a bigint when every plan's key fits in 8 bytes (the usual case: cheaper to
    shuffle and sort), else binary.
    """
    compact = all(is_compact(p) for p in plans.values())
    key_type = "bigint" if compact else "binary"

    @F.arrow_udf(f"struct<{KEY_COL}: {key_type}, {ROUTE_COL}: int>")
    def zorder_key(batch: pa.Array) -> pa.Array:
        if isinstance(batch, pa.ChunkedArray):
            batch = batch.combine_chunks()
        unit = batch.field(0).to_numpy(zero_copy_only=False)
        fields = [batch.field(i) for i in range(1, ncols + 2)]
        n = len(batch)
        routes = np.empty(n, dtype=np.int32)
        keys_out: list[pa.Array] = []
        order: list[np.ndarray] = []
        for u in np.unique(unit):
            rows = np.flatnonzero(unit == u)
            take = pa.array(rows)
            part = [f.take(take) for f in fields] if len(rows) != n else fields
            plan = plans[int(u)]
            k = compute_keys(plan, part[:ncols], part[ncols])
            routes[rows] = lut[offsets[int(u)] + file_ids(plan, k)]
            keys_out.append(pa.array(to_signed(as_sortable(k))) if compact else curves.keys_to_arrow(k))
            order.append(rows)
        keys_arr = (
            keys_out[0]
            if len(keys_out) == 1
            else pa.concat_arrays(keys_out).take(pa.array(np.argsort(np.concatenate(order), kind="stable")))
        )
        return pa.StructArray.from_arrays([keys_arr, pa.array(routes, type=pa.int32())], names=[KEY_COL, ROUTE_COL])

    return zorder_key


def add_keys(
    spark: SparkSession,
    df: DataFrame,
    units: Sequence[UnitWork],
    columns: list[str],
    engine: str = "auto",
    split_stages: bool | None = None,
) -> tuple[DataFrame, str]:
    """``df`` plus the curve key and route columns, computed in the JVM when possible, else by the Arrow UDF.

    Returns the frame and the engine used (``jvm`` or ``arrow``). ``split_stages`` (JVM engine):
    None = only when the task JVMs would leave huge generated methods interpreted.
    """
    plans = {u.index: u.plan for u in units if u.plan is not None}
    offsets, total = file_offsets(units)
    lut = route_values(total)
    used, _ = jvm_keys.key_engine(engine, plans, df.schema)
    if used == "jvm":
        split = not jvm_keys.huge_methods_compiled(spark) if split_stages is None else split_stages
        return jvm_keys.add_key_and_route(df, plans, offsets, lut, UNIT_COL, HASH_COL, KEY_COL, ROUTE_COL, split), used
    udf = _key_udf(plans, offsets, lut, len(columns))
    packed = F.struct(F.col(UNIT_COL), *[_col(c) for c in columns], F.col(HASH_COL))
    return df.withColumn("__zorder", udf(packed)).select(
        *[_col(c) for c in df.columns],
        F.col(f"__zorder.{KEY_COL}").alias(KEY_COL),
        F.col(f"__zorder.{ROUTE_COL}").alias(ROUTE_COL),
    ), used
