"""The write's two checksums (spark_jobs/rewrite/checksums.py): what the writer's side catches and what it does not.

The read side sums every row's ``xxhash64`` over all columns; the writer's side sums the hash
each row carried from the read, except for one row in ``REHASH_EVERY`` (chosen by that hash),
whose content is hashed again. These tests change rows the way a broken shuffle, sort or
projection would, on a real DataFrame, and check which changes move the writer's sum.
"""

from __future__ import annotations

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_jobs.rewrite import checksums, unit_work, verification

pytestmark = pytest.mark.spark

COLS = ["id", "a", "txt", "day"]
N = 4000


@pytest.fixture(scope="module")
def rows(spark) -> DataFrame:
    """N rows with the hash they carry from the read side, and whether the writer re-hashes them."""
    df = spark.range(N).select(
        F.col("id"),
        (F.col("id") * 7 % 101).cast("int").alias("a"),
        F.concat(F.lit("v"), F.col("id").cast("string")).alias("txt"),
        F.date_add(F.lit("2026-01-01").cast("date"), (F.col("id") % 365).cast("int")).alias("day"),
    )
    h = checksums.row_hash(COLS)
    return df.select(
        "*", h.alias(unit_work.HASH_COL), (h.bitwiseAND(F.lit(checksums.REHASH_EVERY - 1)) == 0).alias("rehashed")
    ).cache()


def read_side(df: DataFrame) -> checksums.Checksum:
    return checksums.Checksum.from_row(df.agg(*checksums.checksum_columns(F.col(unit_work.HASH_COL))).collect()[0])


def writer_side(df: DataFrame) -> checksums.Checksum:
    term = checksums.written_hash(COLS, F.col(unit_work.HASH_COL))
    return checksums.Checksum.from_row(df.agg(*checksums.checksum_columns(term)).collect()[0])


def one_row(df: DataFrame, rehashed: bool) -> int:
    return df.filter(F.col("rehashed") == rehashed).orderBy("id").first()["id"]


def test_intact_rows_in_any_order_sum_to_the_read_side(rows):
    assert 100 < rows.filter("rehashed").count() < 500  # about one in 16 of 4,000
    shuffled = rows.repartition(7).sortWithinPartitions(F.rand(3))
    assert writer_side(shuffled) == read_side(rows)
    assert writer_side(shuffled).rows == N


@pytest.mark.parametrize("rehashed", [True, False])
def test_a_lost_or_duplicated_row_is_caught_whichever_it_is(rows, rehashed):
    victim = one_row(rows, rehashed)
    lost = rows.filter(F.col("id") != victim)
    duplicated = rows.unionByName(rows.filter(F.col("id") == victim))
    assert writer_side(lost) != read_side(rows)
    assert writer_side(duplicated) != read_side(rows)
    # the same count with a row swapped for a copy of another: only the checksum can tell
    other = one_row(rows, not rehashed)
    swapped = rows.filter(F.col("id") != victim).unionByName(rows.filter(F.col("id") == other))
    assert writer_side(swapped).rows == N
    assert writer_side(swapped) != read_side(rows)


def test_content_changed_in_every_row_is_caught(rows):
    """A column shifted, swapped or rewritten on the way changes the re-hashed rows' terms."""
    swapped_values = rows.withColumn("a", (F.col("id") * 7 % 101 + 1).cast("int"))
    assert writer_side(swapped_values) != read_side(rows)
    emptied = rows.withColumn("txt", F.lit(None).cast("string"))
    assert writer_side(emptied) != read_side(rows)


def test_one_changed_row_is_caught_only_if_it_is_re_hashed(rows):
    """The documented trade-off: a single row's content is checked with probability 1/REHASH_EVERY."""
    for rehashed, caught in [(True, True), (False, False)]:
        victim = one_row(rows, rehashed)
        changed = rows.withColumn("txt", F.when(F.col("id") == victim, F.lit("changed")).otherwise(F.col("txt")))
        assert (writer_side(changed) != read_side(rows)) is caught


def test_full_verification_rehashes_every_row(rows):
    """``--verify full`` (staged_checksum) hashes every row's content: it catches the change the writer's side misses."""
    data = rows.select(*COLS)
    victim = one_row(rows, False)
    changed = data.withColumn("txt", F.when(F.col("id") == victim, F.lit("changed")).otherwise(F.col("txt")))
    assert verification.staged_checksum(data) == read_side(rows)
    assert verification.staged_checksum(changed) != read_side(rows)
