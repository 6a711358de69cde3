"""Both jobs on ``s3a://`` against a real S3 endpoint: a local moto server checking signatures (tests/moto_s3.py),
reached by the shared SparkSession through hadoop-aws (``make jars``) with an ``aws`` connection's S3A settings.

One SparkSession and one moto server for the whole module (module-scoped fixtures): the stats job on a partitioned
path table; a full then an incremental re-cluster of a Hive-partitioned path table; a Spark catalog table (Hive
metastore) whose location is on S3; a Delta table written by delta-rs to ``s3://`` and re-clustered through its
``s3a://`` path (delta-rs commits from the driver, with a concurrent delta-rs append landing first); an Iceberg table
whose warehouse is on S3 (pyiceberg SQL catalog). After every run the rows are read back by a reader other than the
job (pyarrow on S3, delta-rs, pyiceberg; Spark for the catalog table) and compared: count and checksum.

Each job's duration on S3 is printed (``pytest -s``) as ``[s3a] <what>: <seconds> s``.
"""

from __future__ import annotations

import json
import sys
import time
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from moto_s3 import BUCKET, REGION
from table_checks import row_multiset

from airflow_zorder.core.jobs.options import ClusterOptions, CollectOptions
from airflow_zorder.core.policy import point_queries
from airflow_zorder.core.policy.file_names import run_id_of
from airflow_zorder.core.stats import stats_store
from airflow_zorder.core.storage import faults
from airflow_zorder.core.storage.io.arrow import ArrowFileSystem
from airflow_zorder.core.storage.io.hadoop import HadoopFileSystem
from airflow_zorder.core.tables import open_table
from spark_jobs.cluster_table import run_cluster
from spark_jobs.stats_collection.run import run_collect

pytestmark = pytest.mark.spark

COLS = ["a", "b"]
DAYS = ("2026-01-01", "2026-01-02")
RATIO = 1.5  # the incremental goal of tests/integration/test_cluster_incremental.py: new files reach it alone


def _say(what: str, seconds: float) -> None:
    print(f"[s3a] {what}: {seconds:.2f} s", file=sys.stderr)


def _timed(what: str, job, *args):
    t = time.perf_counter()
    out = job(*args)
    _say(what, time.perf_counter() - t)
    return out


# --------------------------------------------------------------------------- data, readers, checks


def _batch(seed: int, rows: int) -> pa.Table:
    """Unsorted rows: every file spans the whole range of a and b."""
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "id": np.arange(rows, dtype=np.int64) + seed * 1_000_000,
            "a": rng.integers(0, 100_000, rows),
            "b": rng.integers(0, 100_000, rows),
            "s": pa.array([f"name-{x:06d}" for x in rng.integers(0, 1_000_000, rows)]),
        }
    )


class Rows(NamedTuple):
    """A table's rows as a reader sees them: their count and a checksum (the sum of 64-bit row hashes, mod 2^64)."""

    count: int
    checksum: int

    @classmethod
    def of(cls, table: pa.Table, ignore: tuple[str, ...] = ()) -> Rows:
        hashes = row_multiset(table, ignore)
        return cls(sum(hashes.values()), sum(h * n for h, n in hashes.items()) % 2**64)

    def __add__(self, other: Rows) -> Rows:  # type: ignore[override] - rows of two tables together
        return Rows(self.count + other.count, (self.checksum + other.checksum) % 2**64)


@pytest.fixture(scope="module")
def store(s3a) -> pafs.S3FileSystem:
    """pyarrow's S3 filesystem on the moto server: how the tests write tables and read them back (not the job's I/O)."""
    return pafs.S3FileSystem(
        access_key=s3a.access_key,
        secret_key=s3a.secret_key,
        region=REGION,
        endpoint_override=s3a.endpoint.split("://", 1)[1],
        scheme="http",
    )


def _write_path_table(store, prefix: str, files: int, rows: int, seed: int) -> None:
    """A Hive-partitioned path table on S3: ``files`` unsorted files per day."""
    for d, day in enumerate(DAYS):
        for i in range(files):
            pq.write_table(
                _batch(seed + 100 * d + i, rows), f"{BUCKET}/{prefix}/day={day}/part-{i:03d}.parquet", filesystem=store
            )


def _path_rows(store, prefix: str) -> Rows:
    """The rows of a path table on S3 as a reader of the directory sees them (``_``/``.`` entries skipped)."""
    kw = dict(format="parquet", partitioning="hive", ignore_prefixes=["_", "."], filesystem=store)
    return Rows.of(ds.dataset(f"{BUCKET}/{prefix}", **kw).to_table())


def _data_files(store, prefix: str) -> dict[str, int]:
    """Visible data files of a path table on S3 (key under the table -> size)."""
    base = f"{BUCKET}/{prefix}/"
    out = {}
    for info in store.get_file_info(pafs.FileSelector(base, recursive=True)):
        rel = info.path[len(base) :]
        if info.type == pafs.FileType.File and not any(p.startswith(("_", ".")) for p in rel.split("/")):
            out[rel] = info.size
    return out


def _etags(s3, prefix: str) -> dict[str, str]:
    return {k: v for k, v in s3.keys().items() if k.startswith(prefix + "/") and "/_" not in k[len(prefix) :]}


def _files_read(store, prefix: str, values: dict[str, pa.Array]) -> dict[str, float]:
    """Per column, the mean fraction of the table's files a point query reads (footer min/max, read on S3)."""
    files = [f"{BUCKET}/{prefix}/{rel}" for rel in sorted(_data_files(store, prefix))]
    return point_queries.files_fraction_for_columns(files, COLS, values, filesystem=store)


def _query_values(store, prefix: str) -> dict[str, pa.Array]:
    t = ds.dataset(f"{BUCKET}/{prefix}", format="parquet", ignore_prefixes=["_", "."], filesystem=store).to_table(COLS)
    idx = pa.array(np.random.default_rng(3).integers(0, t.num_rows, 300))
    return {c: t.column(c).take(idx).combine_chunks() for c in COLS}


# --------------------------------------------------------------------------- 1. the stats job


def test_stats_job_reads_footers_of_a_partitioned_table_on_s3(spark, s3a, store):
    _write_path_table(store, "stats/events", files=4, rows=500, seed=1)
    before = _path_rows(store, "stats/events")
    table = f"s3a://{BUCKET}/stats/events"
    result = _timed("stats job, 8 files in 2 partitions", run_collect, spark, CollectOptions(table=table))
    assert result["status"] == "ok", result
    assert result["files_total"] == 8 and result["files_scanned"] == 0  # footers only: no file was scanned
    snap = stats_store.load_latest(f"{table}/_zorder/stats", filesystem=ArrowFileSystem(store))
    per_file = snap.group_by("path").aggregate([("file_rows", "max")])
    assert per_file.num_rows == 8 and sum(per_file["file_rows_max"].to_pylist()) == before.count
    assert {p.split("/")[-2] for p in per_file["path"].to_pylist()} == {f"day={d}" for d in DAYS}
    assert _path_rows(store, "stats/events") == before  # the stats job only reads the table


# --------------------------------------------------------------------------- 2. full then incremental, path table


def test_full_then_incremental_recluster_of_a_partitioned_table_on_s3(spark, s3a, store):
    prefix = "paths/events"
    table = f"s3a://{BUCKET}/{prefix}"
    _write_path_table(store, prefix, files=4, rows=3000, seed=10)
    before = _path_rows(store, prefix)
    values = _query_values(store, prefix)
    read_before = _files_read(store, prefix, values)

    opts = ClusterOptions(table=table, columns=COLS, curve="hilbert", num_files=4)
    full = _timed("full re-cluster, 2 partitions, 8 -> 8 files", run_cluster, spark, opts)
    assert full["status"] == "clustered" and full["mode"] == "full" and full["kind"] == "path"
    assert (full["before"]["files"], full["after"]["files"]) == (8, 8)
    assert full["before"]["rows"] == full["after"]["rows"] == before.count
    assert _path_rows(store, prefix) == before
    files = _data_files(store, prefix)
    assert len(files) == 8 and {run_id_of(n) for n in files} == {full["run_id"]}
    read_after = _files_read(store, prefix, values)
    for c in COLS:  # 4 files per partition on 2 columns: a point query reads about half of them, not all
        assert read_before[c] > 0.95 and read_after[c] < 0.7, (c, read_before, read_after)

    # appends: four unsorted files in one partition (the rule waits for 4 new files), then a run that rewrites only them
    clustered = _etags(s3a, prefix)
    target = int(np.mean(list(files.values())))
    appended = Rows(0, 0)
    for i in range(4):
        batch = _batch(500 + i, 700)
        pq.write_table(batch, f"{BUCKET}/{prefix}/day={DAYS[1]}/ingest-{i}.parquet", filesystem=store)
        appended += Rows.of(batch.append_column("day", pa.array([DAYS[1]] * batch.num_rows)))
    after_appends = _path_rows(store, prefix)
    assert after_appends == before + appended
    inc_opts = ClusterOptions(
        table=table, columns=COLS, curve="hilbert", incremental=True, target_file_size=target, target_ratio=RATIO
    )
    inc = _timed("incremental re-cluster, 4 appended files", run_cluster, spark, inc_opts)
    assert inc["status"] == "clustered" and inc["mode"] == "incremental", inc["messages"]
    assert inc["plan"]["files"] == 4 and inc["rewritten"]["files"] == 4, inc["plan"]
    assert _path_rows(store, prefix) == after_appends
    now = _etags(s3a, prefix)
    assert {k: v for k, v in now.items() if k in clustered} == clustered  # the clustered files were not touched
    assert not [k for k in now if "/ingest-" in k]
    added = [k for k in now if k not in clustered]
    assert added and all(run_id_of(k) == inc["run_id"] for k in added)
    events = stats_store.load_events(f"{table}/_zorder/stats", filesystem=ArrowFileSystem(store), kind="cluster")
    assert [json.loads(d)["mode"] for d in events["details"].to_pylist()] == ["full", "incremental"]


# --------------------------------------------------------------------------- 3. a catalog table located on S3


def _spark_rows(spark, table: str) -> Rows:
    """Count and checksum through Spark: the sum of xxhash64 over every column (as a decimal: no overflow)."""
    spark.sql(f"REFRESH TABLE {table}")
    row = spark.sql(f"SELECT count(*) AS n, sum(CAST(xxhash64(*) AS DECIMAL(38, 0))) AS h FROM {table}").collect()[0]
    return Rows(int(row["n"]), int(row["h"] or 0) % 2**64)


def _partition_locations(spark, table: str) -> dict[str, str]:
    out = {}
    for day in DAYS:
        rows = spark.sql(f"DESCRIBE TABLE EXTENDED {table} PARTITION (day='{day}')").where("col_name = 'Location'")
        out[day] = rows.collect()[0]["data_type"]
    return out


def _rows_at(store, locations: dict[str, str]) -> Rows:
    """The rows a reader of the partitions' locations sees (pyarrow on S3, the partition column from the catalog)."""
    parts = []
    for day, loc in locations.items():
        t = ds.dataset(
            loc.split("://", 1)[1], format="parquet", ignore_prefixes=["_", "."], filesystem=store
        ).to_table()
        parts.append(t.append_column("day", pa.array([day] * t.num_rows)))
    return Rows.of(pa.concat_tables(parts))


def test_a_catalog_table_located_on_s3_is_clustered(spark, s3a, store):
    prefix = "catalog/events"
    _write_path_table(store, prefix, files=3, rows=1500, seed=30)
    name = "s3a_events"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(
        f"CREATE TABLE {name} (id BIGINT, a BIGINT, b BIGINT, s STRING, day STRING) USING parquet "
        f"PARTITIONED BY (day) LOCATION 's3a://{BUCKET}/{prefix}'"
    )
    spark.sql(f"MSCK REPAIR TABLE {name}")
    before, before_read = _spark_rows(spark, name), _rows_at(store, _partition_locations(spark, name))
    assert before.count == before_read.count == 2 * 3 * 1500
    result = _timed(
        "catalog table re-cluster, 6 -> 4 files",
        run_cluster,
        spark,
        ClusterOptions(table=name, columns=COLS, num_files=2),
    )
    assert result["status"] == "clustered" and result["kind"] == "catalog" and len(result["partitions"]) == 2
    assert _spark_rows(spark, name) == before
    locations = _partition_locations(spark, name)
    for loc in locations.values():  # the metastore points at the new files, on S3 beside the table's
        assert loc.startswith(f"s3a://{BUCKET}/{prefix}/") and "_zorder/versions/" in loc, loc
    assert _rows_at(store, locations) == before_read
    assert len(_data_files(store, prefix)) == 6  # the old files stay for readers in flight (until the retention)
    spark.sql(f"DROP TABLE {name}")


# --------------------------------------------------------------------------- 4. Delta on S3


@pytest.fixture(scope="module")
def delta_options(s3a) -> dict[str, str]:
    """delta-rs's storage options for the moto server, as an ``aws`` connection gives them."""
    from airflow_zorder.core.delta.delta_log import delta_storage_options

    return delta_storage_options(
        {
            "access_key": s3a.access_key,
            "secret_key": s3a.secret_key,
            "region": REGION,
            "endpoint_override": s3a.endpoint.split("://", 1)[1],
            "scheme": "http",
        }
    )


def test_a_delta_table_on_s3_is_clustered_and_committed_by_delta_rs(spark, s3a, delta_options, monkeypatch):
    import deltalake

    uri = f"s3://{BUCKET}/delta/events"

    def batch(seed: int, rows: int) -> pa.Table:
        t = _batch(seed, rows)
        return t.append_column("day", pa.array([DAYS[i % 2] for i in range(rows)]))

    for i in range(3):
        deltalake.write_deltalake(
            uri, batch(40 + i, 2000), mode="append", partition_by=["day"], storage_options=delta_options
        )
    deltalake.DeltaTable(uri, storage_options=delta_options).delete("a < 5000")  # removed files stay until VACUUM

    def rows() -> Rows:
        return Rows.of(deltalake.DeltaTable(uri, storage_options=delta_options).to_pyarrow_table())

    before, v_before = rows(), deltalake.DeltaTable(uri, storage_options=delta_options).version()
    late = batch(99, 300)
    ran: list[int] = []
    real = faults.fault_point

    def append_before_our_commit(point: str) -> None:  # another delta-rs writer commits while the run is staged
        if point == "delta_before_commit" and not ran:
            deltalake.write_deltalake(uri, late, mode="append", partition_by=["day"], storage_options=delta_options)
            ran.append(1)
        real(point)

    from airflow_zorder.core.tables import delta_table

    monkeypatch.setattr(delta_table, "fault_point", append_before_our_commit)
    result = _timed(
        "Delta re-cluster (delta-rs commit on S3)",
        run_cluster,
        spark,
        ClusterOptions(table=f"s3a://{BUCKET}/delta/events", columns=COLS, num_files=2),
    )
    assert ran and result["status"] == "clustered" and result["kind"] == "delta"
    assert result["delta"] == {"read_version": v_before, "version": v_before + 2}  # the append went in between
    assert result["before"]["rows"] == before.count  # the deleted rows' files were not read
    assert rows() == before + Rows.of(late)
    dt_ = deltalake.DeltaTable(uri, storage_options=delta_options)
    entry = dt_.history(1)[0]
    assert json.loads(entry["zorder"])["run_id"] == result["run_id"]
    ours = [p for p in dt_.file_uris() if result["run_id"] in p]
    assert len(ours) == 4 and all(p.startswith(uri + "/day=") for p in ours)
    adds = pa.table(dt_.get_add_actions(flatten=True)).to_pylist()
    assert all(a["num_records"] and a["min.a"] is not None for a in adds if result["run_id"] in a["path"])
    assert (
        Rows.of(deltalake.DeltaTable(uri, version=v_before, storage_options=delta_options).to_pyarrow_table()) == before
    )
    # the job reached the log with the driver's S3A credentials, committing by conditional PUT (If-None-Match: *)
    opened = open_table(f"s3a://{BUCKET}/delta/events", HadoopFileSystem(spark))
    assert opened.log.storage_options["AWS_ACCESS_KEY_ID"] == s3a.access_key
    assert opened.log.storage_options["aws_conditional_put"] == "etag"
    assert "AWS_S3_ALLOW_UNSAFE_RENAME" not in opened.log.storage_options


# --------------------------------------------------------------------------- 5. Iceberg with an S3 warehouse


ICEBERG_CATALOG = "zorders3"


@pytest.fixture
def iceberg_catalog(s3a, tmp_path, monkeypatch) -> dict[str, str]:
    """A pyiceberg SQL catalog (SQLite) whose warehouse is ``s3://lake/wh``, configured as users do, by
    ``PYICEBERG_CATALOG__<NAME>__*`` variables; the FileIO reaches moto with ``s3.*`` properties."""
    pytest.importorskip("pyiceberg")
    props = {
        "type": "sql",
        "uri": f"sqlite:///{tmp_path / 'catalog.db'}",
        "warehouse": f"s3://{BUCKET}/wh",
        "s3.endpoint": s3a.endpoint,
        "s3.access-key-id": s3a.access_key,
        "s3.secret-access-key": s3a.secret_key,
        "s3.region": REGION,
    }
    for key, value in props.items():
        monkeypatch.setenv(f"PYICEBERG_CATALOG__{ICEBERG_CATALOG.upper()}__{key.upper().replace('-', '_')}", value)
    return props


@pytest.fixture
def s3_scheme_unbound(spark):
    """``s3://`` unbound in the shared session's Hadoop, as in open-source Spark, before and after the test."""
    conf = spark._jsc.hadoopConfiguration()
    conf.unset("fs.s3.impl")
    yield conf
    conf.unset("fs.s3.impl")


def test_an_iceberg_table_with_an_s3_warehouse_is_clustered(spark, s3a, iceberg_catalog, s3_scheme_unbound):
    """pyiceberg spells the files ``s3://``: the job has Hadoop open them with S3A (nothing else serves that scheme)."""
    from airflow_zorder.core.iceberg.catalogs import load_catalog

    cat = load_catalog(ICEBERG_CATALOG, iceberg_catalog)
    cat.create_namespace_if_not_exists("ns")
    table = cat.create_table("ns.events", schema=_batch(0, 1).schema)
    for i in range(4):
        table.append(_batch(60 + i, 1500))

    def rows() -> Rows:
        return Rows.of(cat.load_table("ns.events").scan().to_arrow())

    before = rows()
    start = cat.load_table("ns.events").current_snapshot().snapshot_id
    result = _timed(
        "Iceberg re-cluster (pyiceberg commit, S3 warehouse)",
        run_cluster,
        spark,
        ClusterOptions(table="ns.events", columns=COLS, iceberg_catalog=ICEBERG_CATALOG, num_files=2),
    )
    assert result["status"] == "clustered" and result["kind"] == "iceberg"
    assert s3_scheme_unbound.get("fs.s3.impl") == "org.apache.hadoop.fs.s3a.S3AFileSystem"
    assert (result["before"]["files"], result["after"]["files"]) == (4, 2)
    assert rows() == before
    t = cat.load_table("ns.events")
    snap = t.current_snapshot()
    assert snap.summary.operation.value == "replace" and snap.summary["zorder.run-id"] == result["run_id"]
    live = [f.file.file_path for f in t.scan().plan_files()]
    assert len(live) == 2 and all(p.startswith(f"s3://{BUCKET}/wh/") for p in live), live
    assert Rows.of(t.scan(snapshot_id=start).to_arrow()) == before  # time travel reads the old files


# --------------------------------------------------------------------------- module bookkeeping


def test_nothing_was_left_locked_or_staged(s3a):
    """Every run released its lock and removed its staging area (what the next run would otherwise find)."""
    left = [k for k in s3a.keys() if "/_zorder/lock" in k or ("/_zorder/staging/" in k and not k.endswith("/"))]
    assert not left, left


def test_s3_is_bound_to_s3a_only_where_nothing_serves_it():
    """``bind_s3_scheme`` on stand-ins for the session's Hadoop: EMRFS (bound) and ``s3a://`` are left alone;
    unbound with hadoop-aws, S3A serves ``s3://``; unbound without it, a clear error naming the fix."""
    from types import SimpleNamespace

    from airflow_zorder.core.errors import InvalidInputError
    from airflow_zorder.core.storage.io.hadoop import S3A_FILESYSTEM, bind_s3_scheme

    def session(bound: bool, has_s3a: bool):
        conf = SimpleNamespace(values={}, getClassByNameOrNull=lambda name: name if has_s3a else None)
        conf.set = conf.values.__setitem__

        def fs_class(scheme, _conf):
            if not bound:
                raise RuntimeError(f'No FileSystem for scheme "{scheme}"')
            return "com.amazon.ws.emr.hadoop.fs.EmrFileSystem"

        fs = SimpleNamespace(FileSystem=SimpleNamespace(getFileSystemClass=fs_class))
        jvm = SimpleNamespace(org=SimpleNamespace(apache=SimpleNamespace(hadoop=SimpleNamespace(fs=fs))))
        return SimpleNamespace(_jvm=jvm, _jsc=SimpleNamespace(hadoopConfiguration=lambda: conf)), conf.values

    for bound, location in ((True, "s3://b/t"), (False, "s3a://b/t"), (False, None)):
        spark, values = session(bound, has_s3a=True)
        bind_s3_scheme(spark, location)
        assert values == {}
    spark, values = session(bound=False, has_s3a=True)
    bind_s3_scheme(spark, "s3://b/t")
    assert values == {"fs.s3.impl": S3A_FILESYSTEM}
    spark, values = session(bound=False, has_s3a=False)
    with pytest.raises(
        InvalidInputError, match=r"no filesystem for s3:// and no hadoop-aws.*spark\.hadoop\.fs\.s3\.impl"
    ):
        bind_s3_scheme(spark, "s3://b/t")
    assert values == {}
