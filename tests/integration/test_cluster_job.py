"""The clustering job against real Parquet files with a real local SparkSession (in-process, shared)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pyspark.errors.utils as pyspark_errors
import pytest
from table_checks import visible_files

from airflow_zorder.core.errors import ClusteringError, TableError, TableLockedError, VerificationError
from airflow_zorder.core.jobs.options import ClusterOptions
from airflow_zorder.core.stats.stats_location import default_stats_location
from airflow_zorder.core.storage.io.local import LocalFileSystem
from airflow_zorder.core.storage.lock import TableLock
from airflow_zorder.evaluation import sample_data
from airflow_zorder.evaluation.layout_report import point_query_report
from spark_jobs import cluster_table
from spark_jobs.cluster_table import run_action, run_cluster

pytestmark = pytest.mark.spark


def rows_of(root: str) -> pa.Table:
    """All rows of a (possibly Hive-partitioned) table, in a canonical order."""
    t = ds.dataset(root, format="parquet", partitioning="hive", ignore_prefixes=["_", "."]).to_table()
    return t.sort_by([(c, "ascending") for c in t.column_names if c != "score"] + [("score", "ascending")])


@pytest.fixture(scope="module")
def flat_source(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("src") / "flat")
    sample_data.write_table(path, rows=120_000, files_per_partition=16, partitioned=False)
    return path


@pytest.fixture
def flat(tmp_path, flat_source) -> str:
    dst = str(tmp_path / "flat")
    shutil.copytree(flat_source, dst)
    return dst


@pytest.fixture
def partitioned(tmp_path) -> str:
    path = str(tmp_path / "events")
    sample_data.write_table(path, rows=40_000, files_per_partition=4, partitioned=True)
    return path


def test_zorder_keeps_every_row_and_cuts_files_read(spark, flat):
    before_rows = rows_of(flat)
    cols = ["user_id", "product_id", "event_time"]
    before = point_query_report(flat, cols, n_values=400, seed=3)
    result = run_cluster(spark, ClusterOptions(table=flat, columns=cols, curve="hilbert", num_files=64))
    assert result["status"] == "clustered"
    assert result["before"]["rows"] == result["after"]["rows"] == 120_000
    assert rows_of(flat).equals(before_rows)
    after = point_query_report(flat, cols, n_values=400, seed=3)
    assert after["files"] == 64
    for c in cols:
        # a scrambled table reads ~every file; 64 files on 3 columns: ideal 64^(-1/3) = 0.25
        assert before["fractions"][c] > 0.9
        assert after["fractions"][c] < 0.4, (c, after)
    # the replaced files are kept in the trash until the retention passes
    assert len(os.listdir(os.path.join(flat, "_zorder", "trash", result["run_id"]))) == 16
    from airflow_zorder.core.stats import stats_store

    events = stats_store.load_events(default_stats_location(flat))
    assert events.num_rows == 1 and events.column("run_id")[0].as_py() == result["run_id"]
    assert result["partitions"][0]["plan"]["num_files"] == 64
    # every new file's name carries the run (the incremental policy's membership); the inputs' names do not
    from airflow_zorder.core.policy.file_names import run_id_of

    names = visible_files(flat)
    assert len(names) == 64 and {run_id_of(n) for n in names} == {result["run_id"]}
    assert sorted(n.rsplit("/", 1)[-1] for n in names)[0] == f"part-00000-zorder-{result['run_id']}.parquet"


def test_events_go_to_a_custom_stats_location_where_the_sensor_reads_them(spark, flat, tmp_path):
    """Stats kept outside the table: the job records its event at --stats-location, so the hook (as the sensor
    and the UI use it) with that location sees the clustering: history and the anti-thrash guard."""
    from airflow_zorder.core.jobs.options import CollectOptions
    from airflow_zorder.core.stats import stats_store
    from airflow_zorder.hooks.file_stats import FileStatsHook
    from spark_jobs.stats_collection.run import run_collect

    location = str(tmp_path / "stats_elsewhere")
    cols = ["user_id", "product_id"]
    run_collect(spark, CollectOptions(table=flat, stats_location=location))  # the scrambled layout
    result = run_cluster(spark, ClusterOptions(table=flat, columns=cols, num_files=4, stats_location=location))
    assert result["status"] == "clustered" and result["stats_location"] == location
    assert not os.path.exists(default_stats_location(flat))  # nothing written at the default location
    hook = FileStatsHook(flat, stats_location=location)
    events = hook.get_events(kind="cluster").to_pylist()
    assert [e["run_id"] for e in events] == [result["run_id"]]
    payload = hook.evaluate(columns=cols)  # the stats still show the scrambled layout: degraded
    assert payload["last_cluster_at"] == stats_store.iso_utc(events[0]["at"])
    assert payload["degraded"] and payload["decision"] == "hold"
    assert "min_interval_since_cluster" in json.dumps(payload, default=str)  # re-clustered just now: anti-thrash


def test_curves_beat_linear_on_non_leading_columns(spark, flat_source, tmp_path):
    cols = ["product_id", "event_time"]
    reports = {}
    for curve in ("linear", "zorder", "hilbert"):
        dst = str(tmp_path / curve)
        shutil.copytree(flat_source, dst)
        run_cluster(spark, ClusterOptions(table=dst, columns=cols, curve=curve, num_files=16))
        reports[curve] = point_query_report(dst, cols, n_values=400, seed=5)["fractions"]
    # linear sorts by product_id first: great for it, useless for event_time
    assert reports["linear"]["product_id"] < 0.15
    assert reports["linear"]["event_time"] > 0.9
    for curve in ("zorder", "hilbert"):
        assert reports[curve]["event_time"] < 0.5 * reports["linear"]["event_time"], reports


def test_partition_scoped_run_leaves_other_partitions_byte_identical(spark, partitioned):
    before = visible_files(partitioned)
    before_rows = rows_of(partitioned)
    result = run_cluster(
        spark,
        ClusterOptions(
            table=partitioned,
            columns=["user_id", "product_id"],
            partitions=["day=2026-01-02"],
            num_files=2,
            verify="full",
        ),
    )
    after = visible_files(partitioned)
    assert [p["partition"] for p in result["partitions"]] == ["day=2026-01-02"]
    untouched = {k: v for k, v in before.items() if not k.startswith("day=2026-01-02/")}
    assert {k: v for k, v in after.items() if not k.startswith("day=2026-01-02/")} == untouched
    assert len([k for k in after if k.startswith("day=2026-01-02/")]) == 2
    assert rows_of(partitioned).equals(before_rows)


def test_unknown_column_and_unsupported_type_are_clear_and_leave_table(spark, flat, tmp_path):
    before = visible_files(flat)
    with pytest.raises(ClusteringError, match="unknown column 'nope'.*user_id"):
        run_cluster(spark, ClusterOptions(table=flat, columns=["user_id", "nope"], num_files=2))
    arr = str(tmp_path / "arr")
    os.makedirs(arr)
    pq.write_table(pa.table({"a": [[1, 2], [3]], "b": [1, 2]}), os.path.join(arr, "f.parquet"))
    with pytest.raises(ValueError, match="'a'.*array"):
        run_cluster(spark, ClusterOptions(table=arr, columns=["a"], num_files=1))
    assert visible_files(flat) == before
    assert not os.path.exists(os.path.join(flat, "_zorder", "staging")) or not os.listdir(
        os.path.join(flat, "_zorder", "staging")
    )


def test_missing_table_and_non_parquet_data_are_clear(spark, tmp_path):
    with pytest.raises(TableError, match="does not exist"):
        run_cluster(spark, ClusterOptions(table=str(tmp_path / "nothing"), columns=["a"]))
    bad = tmp_path / "csv"
    bad.mkdir()
    text = "a,b\n" + "1,2\n" * 100
    (bad / "data.csv").write_text(text)
    with pytest.raises(TableError, match="data.csv is not a Parquet file"):
        run_cluster(spark, ClusterOptions(table=str(bad), columns=["a"]))
    assert (bad / "data.csv").read_text() == text
    from airflow_zorder.core.storage.io.hadoop import HadoopFileSystem

    assert HadoopFileSystem(spark).read_tail(str(bad / "data.csv"), 4) == b"1,2\n"
    with pytest.raises(TableError, match="does not exist in the Spark catalog"):
        run_cluster(spark, ClusterOptions(table="no_such_db_table", columns=["a"]))


def test_empty_table_is_a_noop(spark, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    pq.write_table(pa.table({"a": pa.array([], pa.int64())}), str(empty / "f.parquet"))
    result = run_cluster(spark, ClusterOptions(table=str(empty), columns=["a"]))
    assert result["status"] == "noop"
    assert "no rows" in result["messages"][0]
    assert visible_files(str(empty)) == {"f.parquet": visible_files(str(empty))["f.parquet"]}


def test_concurrent_append_is_kept(spark, flat, monkeypatch):
    before_rows = rows_of(flat)
    extra = pa.table({c: before_rows.column(c).slice(0, 10) for c in before_rows.column_names})
    real_fault_point = cluster_table.fault_point

    def append_during_run(name: str) -> None:
        if name == "after_stage":  # another writer lands a file while we are staging
            pq.write_table(extra, os.path.join(flat, "appended-by-someone-else.parquet"))
        real_fault_point(name)

    monkeypatch.setattr(cluster_table, "fault_point", append_during_run)
    run_cluster(spark, ClusterOptions(table=flat, columns=["user_id"], num_files=4))
    files = visible_files(flat)
    assert "appended-by-someone-else.parquet" in files
    assert len(files) == 5
    expected = pa.concat_tables([before_rows, extra]).sort_by([(c, "ascending") for c in before_rows.column_names])
    got = rows_of(flat)
    assert got.sort_by([(c, "ascending") for c in got.column_names]).equals(expected)


def test_second_run_while_locked_is_refused(spark, flat):
    fs = LocalFileSystem()
    before = visible_files(flat)
    with TableLock(fs, flat, "someone-else", ttl_s=600):
        with pytest.raises(TableLockedError, match="someone-else"):
            run_cluster(spark, ClusterOptions(table=flat, columns=["user_id"], num_files=2))
    assert visible_files(flat) == before


def test_catalog_table_switches_location_atomically(spark, tmp_path):
    src = str(tmp_path / "cat_src")
    sample_data.write_table(src, rows=30_000, files_per_partition=3, partitioned=True)
    spark.sql("DROP TABLE IF EXISTS zorder_events")
    spark.sql(
        f"CREATE TABLE zorder_events (event_id BIGINT, user_id BIGINT, product_id INT, event_time TIMESTAMP, "
        f"country STRING, amount DECIMAL(12,2), score DOUBLE, day STRING) USING parquet PARTITIONED BY (day) "
        f"LOCATION '{src}'"
    )
    spark.sql("MSCK REPAIR TABLE zorder_events")
    before = spark.table("zorder_events").orderBy("event_id").collect()
    assert len(before) == 30_000
    old_loc = (
        spark.sql("DESCRIBE TABLE EXTENDED zorder_events PARTITION (day='2026-01-01')")
        .where("col_name = 'Location'")
        .collect()[0]["data_type"]
    )
    result = run_cluster(spark, ClusterOptions(table="zorder_events", columns=["user_id", "product_id"], num_files=2))
    assert result["kind"] == "catalog" and len(result["partitions"]) == 4
    new_loc = (
        spark.sql("DESCRIBE TABLE EXTENDED zorder_events PARTITION (day='2026-01-01')")
        .where("col_name = 'Location'")
        .collect()[0]["data_type"]
    )
    assert new_loc != old_loc and "_zorder/versions/" in new_loc
    after = spark.table("zorder_events").orderBy("event_id").collect()
    assert after == before
    # the old location is untouched (kept for readers in flight until the retention passes)
    assert len([f for f in os.listdir(os.path.join(src, "day=2026-01-01")) if f.endswith(".parquet")]) == 3
    # a second run works from the new locations
    again = run_cluster(spark, ClusterOptions(table="zorder_events", columns=["product_id"], num_files=1))
    assert again["after"]["rows"] == 30_000
    assert spark.table("zorder_events").orderBy("event_id").collect() == before
    # once the retention has passed, cleanup deletes exactly the replaced files; the table still reads whole
    cleaned = run_action(spark, ClusterOptions(table="zorder_events", columns=[], retention_hours=0, action="cleanup"))
    assert not [f for f in os.listdir(os.path.join(src, "day=2026-01-01")) if f.endswith(".parquet")]
    assert any("day=2026-01-01" in p for p in cleaned["cleaned"])
    spark.sql("REFRESH TABLE zorder_events")
    assert spark.table("zorder_events").orderBy("event_id").collect() == before


def test_retention_zero_purges_replaced_files(spark, flat):
    before_rows = rows_of(flat)
    result = run_cluster(spark, ClusterOptions(table=flat, columns=["product_id"], num_files=2, retention_hours=0))
    assert not os.path.exists(os.path.join(flat, "_zorder", "trash", result["run_id"]))
    assert len(visible_files(flat)) == 2
    assert rows_of(flat).equals(before_rows)


def test_lost_staged_file_fails_verification_and_leaves_table(spark, partitioned, monkeypatch):
    from spark_jobs.rewrite import writing

    before = visible_files(partitioned)
    real_write = writing.write_batch

    def write_then_lose_a_file(spark_, df, units, columns, out_dir, *args):
        checks = real_write(spark_, df, units, columns, out_dir, *args)
        victim = sorted(p for p in Path(out_dir).rglob("*.parquet"))[0]
        victim.unlink()  # a file lost by storage between the write and the commit
        return checks

    monkeypatch.setattr(writing, "write_batch", write_then_lose_a_file)
    with pytest.raises(VerificationError, match="staged files hold"):
        run_cluster(spark, ClusterOptions(table=partitioned, columns=["user_id"], num_files=2))
    assert visible_files(partitioned) == before
    journals = list(Path(partitioned, "_zorder", "journal").glob("*.json"))
    assert [json.loads(j.read_text())["state"] for j in journals] == ["rolled_back"]
    assert not list(Path(partitioned, "_zorder", "staging").rglob("*.parquet"))


def test_schema_and_values_of_every_type_survive(spark, tmp_path):
    """Names, types and values come back exactly (nullability only widens), for every clusterable type and awkward names."""
    import datetime as dt
    from decimal import Decimal

    n = 3000
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("b", pa.int8()),
            pa.field("s", pa.int16()),
            pa.field("i", pa.int32()),
            pa.field("f", pa.float32()),
            pa.field("d", pa.float64()),
            pa.field("dec", pa.decimal128(20, 4)),
            pa.field("day", pa.date32()),
            pa.field("ts", pa.timestamp("us", tz="UTC")),
            pa.field("txt", pa.string()),
            pa.field("flag", pa.bool_()),
            pa.field("blob", pa.binary()),
            pa.field("odd name.x", pa.string()),
            pa.field("tags", pa.list_(pa.int32())),
        ]
    )
    rng = list(range(n))
    special = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0]
    table = pa.table(
        {
            "id": rng,
            "b": [None if k % 11 == 0 else (k % 256) - 128 for k in rng],
            "s": [(k * 7) % 60000 - 30000 for k in rng],
            "i": [(k * 7919) % 100_003 for k in rng],
            "f": [special[k % 5] if k % 13 == 0 else k / 7 for k in rng],
            "d": [special[k % 5] if k % 17 == 0 else -k / 3 for k in rng],
            "dec": [Decimal(k * 37 % 9999) / Decimal(1000) for k in rng],
            "day": [dt.date(2020, 1, 1) + dt.timedelta(days=k % 900) for k in rng],
            "ts": [dt.datetime(2021, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=k * 999_983) for k in rng],
            "txt": [None if k % 9 == 0 else "é🙂" * (k % 4) + str(k * 31 % 1000) for k in rng],
            "flag": [k % 3 == 0 for k in rng],
            "blob": [bytes([k % 256, (k * 3) % 256]) for k in rng],
            "odd name.x": [f"v{k % 50}" for k in rng],
            "tags": [[k, k + 1] if k % 4 else None for k in rng],
        },
        schema=schema,
    )
    root = tmp_path / "typed"
    root.mkdir()
    for j in range(6):
        pq.write_table(table.slice(j * 500, 500), root / f"part-{j}.parquet")
    before = pq.read_schema(root / "part-0.parquet")
    result = run_cluster(spark, ClusterOptions(table=str(root), columns=["i", "txt", "d"], curve="zorder", num_files=4))
    assert result["status"] == "clustered"
    files = sorted(p for p in root.glob("*.parquet"))
    assert len(files) == 4
    for f in files:
        got = pq.read_schema(f)
        assert got.names == before.names
        for a, b in zip(got, before):
            # Spark reads every Parquet column as nullable, so "required" comes back "optional"
            assert a.type == b.type and (a.nullable or not b.nullable), (a, b)
    after = ds.dataset([str(f) for f in files], format="parquet").to_table().sort_by("id")
    assert after.num_rows == n
    for c in table.column_names:
        if c not in ("f", "d"):
            assert after.column(c).to_pylist() == table.column(c).to_pylist(), c
    for c in ("f", "d"):  # NaN != NaN: compare the bit patterns
        assert (
            after.column(c).to_numpy(zero_copy_only=False).tobytes()
            == table.column(c).to_numpy(zero_copy_only=False).tobytes()
        )


def _wide_table(src, n: int = 60_000) -> pa.Table:
    """Two clustering columns, two near-unique ones (``id``, ``note``) and two repeating ones, in 4 files."""
    import numpy as np

    rng = np.random.default_rng(11)
    src.mkdir()
    t = pa.table(
        {
            "a": pa.array(rng.integers(0, 1000, n)),
            "b": pa.array(rng.integers(0, 1000, n)),
            "id": pa.array(rng.permutation(n).astype(np.int64) * 7919),  # unique
            "note": pa.array([f"free text {x:012d}" for x in rng.integers(0, 10**12, n)]),  # ~unique strings
            "cat": pa.array(rng.choice(["red", "green", "blue"], n)),  # 3 values
            "day": pa.array(rng.integers(0, 300, n).astype(np.int32)),  # 300 values
        }
    )
    for i in range(4):  # row order random w.r.t. every column
        pq.write_table(t.slice(i * n // 4, n // 4), src / f"part-{i}.parquet")
    return t


def test_near_unique_columns_are_written_without_a_dictionary(spark, tmp_path):
    """Columns whose dictionary the writer would abandon are written PLAIN; repeating ones keep it; rows equal."""
    src = tmp_path / "wide"
    t = _wide_table(src)

    def rows() -> pa.Table:
        got = ds.dataset(str(src), format="parquet", ignore_prefixes=["_", "."]).to_table()
        return got.sort_by([(c, "ascending") for c in t.column_names])

    before = rows()
    result = run_cluster(spark, ClusterOptions(table=str(src), columns=["a", "b"], num_files=2))
    assert sorted(result["partitions"][0]["plan"]["plain_encoded"]) == ["id", "note"]
    assert rows().equals(before)
    for f in visible_files(str(src)):
        md = pq.read_metadata(src / f)
        dictionary = {
            md.row_group(0).column(i).path_in_schema: md.row_group(0).column(i).has_dictionary_page
            for i in range(md.num_columns)
        }
        assert not dictionary["id"] and not dictionary["note"]
        assert dictionary["cat"] and dictionary["day"] and dictionary["a"]


@pytest.mark.parametrize("curve", ["zorder", "hilbert"])
def test_column_names_with_dots_spaces_and_backticks(spark, tmp_path, curve):
    """Every data column passes through the key expressions by name: names are taken literally."""
    root = tmp_path / "odd"
    root.mkdir()
    ids = list(range(20_000))
    before = pa.table({"a.b": ids, "we`ird": [i % 97 for i in ids], "s p": [f"x{i}" for i in ids]})
    pq.write_table(before, root / "part-0.parquet", row_group_size=5_000)
    confs = {k: spark.conf.get(k, None) for k in ("spark.sql.ansi.enabled", "spark.sql.optimizer.excludedRules")}
    call_sites = pyspark_errors.is_debugging_enabled()  # switched off while the write's plan is built
    result = run_cluster(spark, ClusterOptions(table=str(root), columns=["a.b", "we`ird"], curve=curve, num_files=4))
    assert result["status"] == "clustered"
    after = ds.dataset(str(root), format="parquet", ignore_prefixes=["_", "."]).to_table()
    assert after.column_names == ["a.b", "we`ird", "s p"]
    assert after.sort_by("a.b").equals(before)
    assert len(visible_files(str(root))) == 4
    # the write's own SQL settings (no ANSI checks, no column pruning) do not leak into the session
    assert {k: spark.conf.get(k, None) for k in confs} == confs
    assert pyspark_errors._enable_debugging_cache is call_sites is pyspark_errors.is_debugging_enabled()


def test_encodings_sample_is_read_before_the_plan(spark, tmp_path):
    """The encodings' files are picked and read with no plan yet (the job reads them during the plan's
    sample job); judged once the plan is there, the columns are those of the one-step call."""
    from spark_jobs.rewrite import encodings, reading, sampling, unit_work

    src = tmp_path / "wide"
    n = _wide_table(src).num_rows
    paths = sorted(str(p) for p in src.glob("*.parquet"))
    schema = spark.read.parquet(*paths).schema
    df = reading.read_batch(spark, [(0, paths)], schema, local=True)

    def units() -> list:
        w = unit_work.UnitWork(0, "t", paths, 2)
        w.rows = n
        return [w]

    early, late = units(), units()
    sample = encodings.encodings_sample(spark, early, schema, 5, LocalFileSystem())
    assert early[0].plan is None and sample.rows.num_rows > 0
    assert {u.index for u, _, _ in sample.chosen} == {0} and len(sample.chosen) >= encodings.SAMPLED_FILES
    for w in (early, late):
        sampling.plan_batch(df, w, ["a", "b"], "zorder", 1024, 16, 5)
    two_steps = encodings.plain_from_sample(spark, early, ["a", "b"], sample)
    assert two_steps == encodings.plain_encoded_columns(spark, late, ["a", "b"], schema, 5, LocalFileSystem())
    assert sorted(two_steps) == ["id", "note"]


def test_encodings_sample_read_on_the_driver_equals_sparks(spark, tmp_path):
    """Local files are read for the encodings sample with pyarrow, typed as Spark's toArrow types them."""
    import datetime as dt
    from decimal import Decimal

    from spark_jobs.rewrite import reading

    n = 500
    t = pa.table(
        {
            "i": pa.array(range(n), pa.int32()),
            "l": pa.array([k * 10**12 for k in range(n)], pa.int64()),
            "d": pa.array([k / 3 for k in range(n)]),
            "dec": pa.array([Decimal(k) / 100 for k in range(n)], pa.decimal128(12, 2)),
            "day": pa.array([dt.date(2026, 1, 1) + dt.timedelta(days=k) for k in range(n)]),
            "ts": pa.array([k * 1_000_003 for k in range(n)], pa.timestamp("us", tz="UTC")),
            "s": pa.array([None if k % 9 == 0 else f"é{k}" for k in range(n)]),
            "flag": pa.array([k % 2 == 0 for k in range(n)]),
            "tags": pa.array([[k] for k in range(n)], pa.list_(pa.int32())),
        }
    )
    src = tmp_path / "typed"
    src.mkdir()
    for i in range(2):
        pq.write_table(t.slice(i * n // 2, n // 2), src / f"part-{i}.parquet")
    paths = [str(src / f"part-{i}.parquet") for i in range(2)]
    schema = spark.read.parquet(*paths).schema
    parts = [(0, paths[:1]), (3, paths[1:])]
    on_driver = reading.read_on_driver(spark, LocalFileSystem(), parts, schema)
    by_spark = reading.read_batch(spark, parts, schema).drop("tags").toArrow()
    assert on_driver.column_names == by_spark.column_names  # atomic columns only, the unit last
    assert [f.type for f in on_driver.schema] == [f.type for f in by_spark.schema]
    key = [("__zorder_unit", "ascending"), ("i", "ascending")]
    assert on_driver.sort_by(key).to_pylist() == by_spark.sort_by(key).to_pylist()
    # a file that is not on this machine's disk, or not Parquet, sends the caller to Spark
    (src / "bad.parquet").write_bytes(b"not parquet")
    assert reading.read_on_driver(spark, LocalFileSystem(), [(0, [str(src / "bad.parquet")])], schema) is None


def test_plan_sample_read_on_the_driver_matches_sparks(spark, tmp_path):
    """In local mode on local files the plan's sample is read with pyarrow: Spark's types, each unit's fraction."""
    import datetime as dt
    from decimal import Decimal
    from types import SimpleNamespace

    import numpy as np

    from spark_jobs.rewrite import reading, sampling, unit_work

    n = 4_000
    t = pa.table(
        {
            "l": pa.array([k * 7919 % n for k in range(n)], pa.int64()),
            "dec": pa.array([Decimal(k) / 100 for k in range(n)], pa.decimal128(12, 2)),
            "day": pa.array([dt.date(2026, 1, 1) + dt.timedelta(days=k % 400) for k in range(n)]),
            "ts": pa.array([None if k % 11 == 0 else k * 1_000_003 for k in range(n)], pa.timestamp("us", tz="UTC")),
            "s": pa.array([f"é{k % 97}" for k in range(n)]),
            "other": pa.array(range(n)),
        }
    )
    src = tmp_path / "planned"
    src.mkdir()
    for i in range(4):
        pq.write_table(t.slice(i * n // 4, n // 4), src / f"part-{i}.parquet", row_group_size=300)
    paths = sorted(str(p) for p in src.glob("*.parquet"))
    schema = spark.read.parquet(*paths).schema
    units = [
        unit_work.UnitWork(0, "a", paths[:2], 4, rows=n // 2),
        unit_work.UnitWork(1, "b", paths[2:], 4, rows=n // 2),
    ]
    df = reading.read_batch(spark, [(u.index, u.paths) for u in units], schema, local=True)
    columns = ["l", "dec", "day", "ts", "s"]
    fractions = {0: 1.0, 1: 0.25}

    got = sampling.plan_sample_on_driver(df, units, columns, fractions, 3, LocalFileSystem())
    by_spark = df.select(unit_work.UNIT_COL, *columns).sampleBy(unit_work.UNIT_COL, fractions, 3).toArrow()
    assert [got.schema.field(c).type for c in columns] == [by_spark.schema.field(c).type for c in columns]
    assert got.schema.field(unit_work.HASH_COL).type == pa.int64()
    unit = got.column(unit_work.UNIT_COL).to_numpy()
    whole = got.filter(pa.array(unit == 0)).select(columns)
    assert sorted(whole.to_pylist(), key=str) == sorted(t.slice(0, n // 2).select(columns).to_pylist(), key=str)
    part = got.filter(pa.array(unit == 1)).select(columns).to_pylist()
    assert 0.18 * n / 2 < len(part) < 0.32 * n / 2  # Bernoulli draws at 25%
    later = {str(r) for r in t.slice(n // 2).select(columns).to_pylist()}
    assert all(str(r) in later for r in part)
    again = sampling.plan_sample_on_driver(df, units, columns, fractions, 3, LocalFileSystem())
    assert again.equals(got)  # the seed fixes the draw

    # plan_batch builds every unit's plan from the driver-read sample
    sampling.plan_batch(df, units, columns, "hilbert", 64, 8, 3, LocalFileSystem())
    assert all(u.plan is not None and u.plan.num_files == 4 for u in units)
    # a file pyarrow cannot read, a missing column, or a cluster master: the Spark job instead
    assert sampling.plan_sample_on_driver(df, units, columns + ["nope"], fractions, 3, LocalFileSystem()) is None
    bad = unit_work.UnitWork(0, "bad", [str(src / "bad.parquet")], 1, rows=1)
    (src / "bad.parquet").write_bytes(b"not parquet")
    assert sampling.plan_sample_on_driver(df, [bad], columns, {0: 1.0}, 3, LocalFileSystem()) is None
    # a YARN driver cannot run here: a stand-in session whose master is not local
    on_yarn = SimpleNamespace(
        sparkSession=SimpleNamespace(sparkContext=SimpleNamespace(master="yarn")), schema=df.schema
    )
    assert sampling.plan_sample_on_driver(on_yarn, units, columns, fractions, 3, LocalFileSystem()) is None
    assert np.isin(unit, [0, 1]).all()
