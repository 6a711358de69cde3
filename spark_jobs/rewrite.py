"""Rewrite a batch of units (the table, or many partitions at once) in curve order, with row verification.

All units of a batch go through the same few Spark jobs, so re-clustering 300 partitions
costs about what re-clustering one does, not 300 times its job overhead:

1. per-unit row counts (footer metadata only; read on the driver when the files are local);
2. a stratified sample of the clustering columns -> one KeyPlan per unit, on the driver; a few
   whole input files -> which columns to write without a dictionary (:func:`plain_encoded_columns`:
   read while the plan's sample is taken, judged while the driver builds the write's plan);
3. the write: read -> curve key + output file (JVM expressions, ``jvm_keys``, or an Arrow
   UDF for wide keys and binary columns) -> observe(count, checksum) of what is read ->
   repartition by file (a precomputed int per file, so no second sampling job as in
   ``repartitionByRange``) -> sort by key within each file -> observe(count, checksum) of
   the sorted rows -> drop the key, route and hash -> Parquet, file i = Spark partition i,
   in the staging dir; rows stay flat, and no other projection is added between the steps
   (each would copy every row);
4. per-unit row counts of the staged files (footers, as in step 1), compared with step 1.

The checksum is the exact sum of ``xxhash64(all columns)``: order independent, and
duplicates cannot cancel (unlike XOR); the staged files' row counts per unit (step 4) catch a
row that landed in another unit's files. It is summed as two 64-bit sums of the hash's
signed high and unsigned low 32-bit halves, which cannot overflow below 2^31 rows per batch
(so ANSI mode never fails) and cost far less than a decimal(38,0) sum;
checksum = high_sum * 2^32 + low_sum.

Each row's hash is computed once, where it is read (from the columnar batch, in generated
code), and travels with the row. At the writer the sum is taken again over the rows handed
to it (:func:`written_hash`): every row counts its carried hash, so a lost, duplicated or
foreign row changes the sum; one row in :data:`REHASH_EVERY` (chosen by its hash) counts the
hash of its content as it is now, so a change made to the rows' content on the way (a
column shifted or swapped, a value rewritten) changes the sum too unless it spares every
re-hashed row. Re-hashing every row there cost 1.7 CPU-s of 25 at SF1 (outside generated
code, through an accumulator); ``--verify full`` re-reads the staged files and re-hashes all.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, MapType, StructType

from airflow_zorder.core.errors import VerificationError
from airflow_zorder.core.layout import curves, dictionary_choice
from airflow_zorder.core.layout.curve_keys import (
    KeyPlan,
    as_sortable,
    build_plan,
    column_boundaries,
    compute_keys,
    file_ids,
    is_compact,
    plan_bits,
    to_signed,
)
from airflow_zorder.core.stats import footer_stats
from airflow_zorder.core.storage.io import FileSystem, os_path
from spark_jobs import jvm_keys

UNIT_COL, KEY_COL, ROUTE_COL, HASH_COL = "__zorder_unit", "__zorder_key", "__zorder_route", "__zorder_hash"
ARROW_BATCH_CONF, ARROW_BATCH_ROWS = "spark.sql.execution.arrow.maxRecordsPerBatch", 100_000
MAX_SAMPLE_ROWS = 2_000_000


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


@dataclass
class UnitWork:
    """One unit in a batch: its files, how many rows, how many output files, and (later) its plan."""

    index: int
    label: str
    paths: list[str]
    num_files: int
    rows: int = 0
    plan: KeyPlan | None = None
    # cluster on these columns only, in this curve order; the others collapsed to one range
    on: tuple[str, ...] | None = None


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


def read_batch(
    spark: SparkSession, parts: Sequence[tuple[int, Sequence[str]]], schema: StructType, local: bool = False
) -> DataFrame:
    """Union of the units' files (``(unit index, paths)`` pairs), each row tagged with its unit; all read with ``schema``.

    ``local``: the files are on the driver's disk (see :func:`driver_listing`).
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


def _on_this_disk(fs: FileSystem, parts: Sequence[tuple[int, Sequence[str]]]) -> list[tuple[int, str]] | None:
    """``(tag, path on this machine's disk)`` for every file of ``parts``; None if any is elsewhere."""
    flat = [(tag, os_path(fs, p)) for tag, paths in parts for p in paths]
    return None if any(p is None for _, p in flat) else flat


def footer_counts(fs: FileSystem, parts: Sequence[tuple[int, Sequence[str]]]) -> dict[int, int] | None:
    """Rows per unit read from the files' footers here on the driver when every file is on this machine's disk.

    Saves a Spark job per count (~0.3 s each); None for remote stores, or when a footer does not
    parse, so that :func:`count_rows` (and Spark's own error for the file) takes over.
    """
    flat = _on_this_disk(fs, parts)
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
    rows = _read_on_driver(
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


MIN_ROWS_PER_FILE_FOR_ENCODINGS = 10_000  # smaller files: the dictionary work is too small to matter
SAMPLED_FILES = 2  # whole input files in the encodings sample at least: pairs across input files need two
DICTIONARY_OPTION = "parquet.enable.dictionary#"


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
    rows = _read_on_driver(spark, fs, parts, schema, keep, seed) if fs is not None else None
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


#: the encodings sample's files are read on the driver when this small in all (else by a Spark job)
DRIVER_READ_MAX_BYTES = 64 << 20


def _arrow_schema(schema: StructType, large: bool) -> pa.Schema:
    """Spark's Arrow schema for ``schema`` with timestamps in UTC: Spark 4.2 takes ``timezone=``, 4.1 ``timestamp_utc=``."""
    from pyspark.sql.pandas.types import to_arrow_schema

    try:
        return to_arrow_schema(schema, timezone="UTC", prefers_large_types=large)
    except TypeError:  # Spark 4.1
        return to_arrow_schema(schema, timestamp_utc=True, prefers_large_types=large)


def _read_on_driver(
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

    local = _on_this_disk(fs, parts)
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


def file_offsets(units: Sequence[UnitWork]) -> tuple[dict[int, int], int]:
    """Global output-file index of each unit's first file, and the total number of files."""
    offsets, total = {}, 0
    for u in units:
        offsets[u.index] = total
        total += u.plan.num_files if u.plan else 0
    return offsets, total


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
    Also returns the key engine used (see :func:`add_keys`). ``plain_columns`` are written
    without a dictionary (:func:`plain_encoded_columns`); when a callable, it is called once
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
