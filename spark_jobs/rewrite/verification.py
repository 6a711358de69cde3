"""Step 4 and the final check: refuse to commit unless every measure of the staged rows equals the input's."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame

from airflow_zorder.core.errors import VerificationError
from spark_jobs.rewrite.checksums import Checksum, checksum_columns, row_hash
from spark_jobs.rewrite.unit_work import UNIT_COL, UnitWork


def staged_checksum(df: DataFrame) -> Checksum:
    """Full verification: re-read every staged row and checksum it (one more pass, over the output)."""
    data_cols = [c for c in df.columns if c != UNIT_COL]
    return Checksum.from_row(df.agg(*checksum_columns(row_hash(data_cols))).collect()[0])


def verify(
    units: Sequence[UnitWork],
    observed_in: Checksum,
    observed_out: Checksum,
    staged_rows: dict[int, int],
    staged_full: Checksum | None,
) -> None:
    """Refuse to commit unless every measure of the staged rows equals the input's."""
    problems = []
    expected = sum(u.rows for u in units)
    if observed_in.rows != expected:
        problems.append(f"the write read {observed_in.rows} rows but the input files hold {expected}")
    if observed_out != observed_in:
        problems.append(
            f"rows written {observed_out.rows} (checksum {observed_out.checksum}) differ from rows "
            f"read {observed_in.rows} (checksum {observed_in.checksum})"
        )
    for u in units:
        if staged_rows.get(u.index, 0) != u.rows:
            problems.append(f"{u.label}: staged files hold {staged_rows.get(u.index, 0)} rows, input has {u.rows}")
    if staged_full is not None and staged_full != observed_in:
        problems.append(
            f"re-reading the staged files gives {staged_full.rows} rows (checksum "
            f"{staged_full.checksum}), input has {observed_in.rows} (checksum {observed_in.checksum})"
        )
    if problems:
        raise VerificationError("verification failed, table left unchanged: " + "; ".join(problems[:10]))
