"""Spark SQL settings the rewrite changes for a block and then restores: what each saves is said with it."""

from __future__ import annotations

from contextlib import contextmanager, nullcontext

from pyspark.sql import SparkSession

ARROW_BATCH_CONF, ARROW_BATCH_ROWS = "spark.sql.execution.arrow.maxRecordsPerBatch", 100_000


@contextmanager
def session_conf(spark: SparkSession, key: str, value: str):
    """Set a SQL conf for the duration of a block, then restore (or unset) it."""
    previous = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, previous)


EXCLUDED_RULES_CONF = "spark.sql.optimizer.excludedRules"
COLUMN_PRUNING_RULE = "org.apache.spark.sql.catalyst.optimizer.ColumnPruning"


def without_column_pruning(spark: SparkSession):
    """Keep Spark's optimizer from inserting a projection wherever a column stops being needed.

    In the write every column is read anyway; what the rule would add is one projection after
    the input checksum (dropping the hash) and one between the shuffle and the sort (dropping
    the route): two more copies of every row (~1 s of 2-core wall at SF1).
    """
    rules = [r for r in (spark.conf.get(EXCLUDED_RULES_CONF, "") or "").split(",") if r.strip()]
    return session_conf(spark, EXCLUDED_RULES_CONF, ",".join([*rules, COLUMN_PRUNING_RULE]))


ANSI_CONF = "spark.sql.ansi.enabled"


def without_ansi_checks(spark: SparkSession):
    """Build and run the write's expressions without ANSI overflow checks (Spark fixes the mode when it builds each one).

    Every expression the write adds is overflow-free by construction: widening casts of the
    clustering columns, shifts, ORs and small array indices; the checksum sums cannot reach
    2**63 below 2**31 rows per batch and, should they wrap, both sides wrap alike. Data
    columns pass through untouched. The checks' exception paths made the generated key
    method 13% larger (4,450 -> 3,886 bytes of bytecode for Z-order, 6,352 -> 5,536 for
    Hilbert), which leaves HotSpot less room to inline the calls it makes.
    """
    return session_conf(spark, ANSI_CONF, "false")


LISTING_THRESHOLD_CONF = "spark.sql.sources.parallelPartitionDiscovery.threshold"


def driver_listing(spark: SparkSession, local: bool):
    """For files on the driver's disk, let the driver stat them itself while a DataFrame is created.

    Spark runs a listing job for more than 32 paths (~0.2 s here), worth it only on remote stores.
    """
    return session_conf(spark, LISTING_THRESHOLD_CONF, str(2**31 - 1)) if local else nullcontext()
