"""The write's checksum: each row's xxhash64, summed exactly as two halves (see :mod:`spark_jobs.rewrite`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Observation
from pyspark.sql import functions as F

from spark_jobs import jvm_keys


@dataclass
class Checksum:
    """Row count and order-independent checksum of a set of rows."""

    rows: int
    checksum: int

    @classmethod
    def from_row(cls, got) -> Checksum:
        """From the ``rows``, ``hash_hi`` and ``hash_lo`` aggregates of :func:`checksum_columns`."""
        return cls(int(got["rows"]), (int(got["hash_hi"] or 0) << 32) + int(got["hash_lo"] or 0))

    @classmethod
    def from_observation(cls, obs: Observation) -> Checksum:
        return cls.from_row(obs.get)


_col = jvm_keys.quoted


def row_hash(columns: Sequence[str]) -> F.Column:
    """xxhash64 over every data column of a row (which unit a row lands in is checked by the staged row counts)."""
    return F.xxhash64(*[_col(c) for c in columns])


#: at the writer, one row in this many (a power of two, chosen by its hash) is hashed again from its content
REHASH_EVERY = 16


def written_hash(columns: Sequence[str], carried: F.Column, every: int = REHASH_EVERY) -> F.Column:
    """A row's term of the checksum at the writer: its carried hash, or for one row in ``every`` its content's hash now.

    Equals the read side's term for every intact row, so intact data sums to the input's
    checksum; see the module docstring for what each part catches.
    """
    return F.when(carried.bitwiseAND(F.lit(every - 1)) == 0, row_hash(columns)).otherwise(carried)


def checksum_columns(h: F.Column) -> list[F.Column]:
    """Aggregates for ``DataFrame.observe`` / ``agg``: row count and the exact sum of the row hashes ``h`` (two halves)."""
    return [
        F.count(F.lit(1)).alias("rows"),
        F.sum(F.shiftright(h, 32)).alias("hash_hi"),
        F.sum(h.bitwiseAND(F.lit(0xFFFFFFFF))).alias("hash_lo"),
    ]
