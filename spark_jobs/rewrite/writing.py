"""The write: keys, one shuffle by output file, a sort by key, Parquet; the rows observed before and after."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from airflow_zorder.core.errors import VerificationError
from spark_jobs import jvm_keys
from spark_jobs.rewrite.checksums import Checksum, checksum_columns, row_hash, written_hash
from spark_jobs.rewrite.keys import add_keys
from spark_jobs.rewrite.session_settings import (
    ARROW_BATCH_CONF,
    ARROW_BATCH_ROWS,
    session_conf,
    without_ansi_checks,
    without_column_pruning,
)
from spark_jobs.rewrite.unit_work import HASH_COL, KEY_COL, ROUTE_COL, UNIT_COL, UnitWork, file_offsets

DICTIONARY_OPTION = "parquet.enable.dictionary#"


def write_batch(
    spark: SparkSession,
    df: DataFrame,
    units: Sequence[UnitWork],
    columns: list[str],
    out_dir: str,
    compression: str,
    name: str,
    engine: str = "auto",
    plain_columns: Sequence[str] | Callable[[], Sequence[str]] = (),
) -> tuple[Checksum, Checksum, str]:
    """Write every unit of ``df`` into ``out_dir`` in curve order, file i = Spark partition i; return (read, written) checksums.

    Each output partition holds exactly one file of one unit, so the files are sorted by
    the key alone (a 64-bit prefix sort) and written without ``partitionBy``; Spark names
    them ``part-<partition>-...``, which :func:`files_by_unit` maps back to their unit.
    Also returns the key engine used (see :func:`~spark_jobs.rewrite.keys.add_keys`). ``plain_columns`` are written
    without a dictionary (:func:`~spark_jobs.rewrite.encodings.plain_encoded_columns`); when a callable, it is called once
    the write's plan is built, so that they can be worked out meanwhile.
    """
    with without_ansi_checks(spark), jvm_keys.without_call_sites():
        return _write_batch(spark, df, units, columns, out_dir, compression, name, engine, plain_columns)


def _write_batch(
    spark: SparkSession,
    df: DataFrame,
    units: Sequence[UnitWork],
    columns: list[str],
    out_dir: str,
    compression: str,
    name: str,
    engine: str,
    plain_columns: Sequence[str] | Callable[[], Sequence[str]],
) -> tuple[Checksum, Checksum, str]:
    data_cols = [c for c in df.columns if c != UNIT_COL]
    _, total = file_offsets(units)
    obs_in, obs_out = Observation(f"{name}_in"), Observation(f"{name}_out")
    # the row hash is computed once: checksum of the input and salt
    keyed, used = add_keys(spark, df.select("*", row_hash(data_cols).alias(HASH_COL)), units, columns, engine)
    # Observed after the keys, on the very rows the shuffle writes (``observe`` ends a generated
    # stage: the rows are materialised once, for both); the hash rides along rather than being
    # dropped by one more projection (one more copy of every row), and the writer's side uses it.
    observed = keyed.drop(UNIT_COL).observe(obs_in, *checksum_columns(F.col(HASH_COL)))
    laid_out = observed.repartition(total, F.col(ROUTE_COL)).sortWithinPartitions(KEY_COL)
    # Observed on the sorted rows, just before the one projection after the sort (one copy of
    # each row), which drops the key, route and hash and hands the rest to the writer.
    checked = laid_out.observe(obs_out, *checksum_columns(written_hash(data_cols, F.col(HASH_COL))))
    final = checked.drop(KEY_COL, ROUTE_COL, HASH_COL)
    writer = final.write.mode("errorifexists").option("compression", compression)
    for c in plain_columns() if callable(plain_columns) else plain_columns:
        writer = writer.option(DICTIONARY_OPTION + c, "false")
    with session_conf(spark, ARROW_BATCH_CONF, str(ARROW_BATCH_ROWS)), without_column_pruning(spark):
        writer.parquet(out_dir)
    return Checksum.from_observation(obs_in), Checksum.from_observation(obs_out), used


_PART = re.compile(r"^part-(\d+)-")


def files_by_unit(files: Sequence, units: Sequence[UnitWork]) -> dict[int, list]:
    """Assign written files to units by the partition number in Spark's ``part-<n>-`` file names."""
    offsets, total = file_offsets(units)
    starts = sorted((off, idx) for idx, off in offsets.items())
    out: dict[int, list] = {u.index: [] for u in units}
    for f in files:
        m = _PART.match(f.path.rsplit("/", 1)[1])
        if not m or int(m.group(1)) >= total:
            raise VerificationError(f"unexpected file in the staging dir: {f.path}")
        part = int(m.group(1))
        unit = max((o, i) for o, i in starts if o <= part)[1]
        out[unit].append(f)
    return out
