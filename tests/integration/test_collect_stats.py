"""The stats-collection job with real Spark and real Parquet files: exact values for every type, INT96,
incremental runs, removed and corrupt files, bad input, catalog tables, and one real spark-submit."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import shutil
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from table_checks import spark_submit

from airflow_zorder.core.errors import StatsCollectionError, TableError
from airflow_zorder.core.jobs.options import CollectOptions
from airflow_zorder.core.stats import stats_schema, stats_store, value_order
from airflow_zorder.core.stats.stats_location import default_stats_location
from airflow_zorder.core.storage.io.hadoop import HadoopFileSystem
from spark_jobs.stats_collection.run import run_collect

pytestmark = pytest.mark.spark

UTC = dt.UTC


# --------------------------------------------------------------------------- data


def _nulls(rng, values, frac=0.15):
    return [None if rng.random() < frac else v for v in values]


def typed_table(seed: int, n: int = 120, long_strings: bool = False, all_nan: bool = False) -> pa.Table:
    """Every atomic type, with nulls; floats with NaN and signed zeros; one all-null column."""
    rng = np.random.default_rng(seed)
    floats = rng.normal(0, 1e3, n)
    floats[rng.random(n) < 0.1] = np.nan
    floats[:3] = [0.0, -0.0, np.nan]
    words = ["".join(chr(c) for c in rng.integers(0x20, 0x250, rng.integers(0, 12))) for _ in range(n)]
    micros = rng.integers(-2 * 10**15, 2 * 10**15, n)
    cols = {
        "i8": pa.array(_nulls(rng, rng.integers(-128, 128, n).tolist()), pa.int8()),
        "i16": pa.array(_nulls(rng, rng.integers(-(2**15), 2**15, n).tolist()), pa.int16()),
        "i32": pa.array(_nulls(rng, rng.integers(-(2**31), 2**31, n).tolist()), pa.int32()),
        "i64": pa.array(_nulls(rng, rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64).tolist()), pa.int64()),
        "u8": pa.array(_nulls(rng, rng.integers(0, 256, n).tolist()), pa.uint8()),
        "u16": pa.array(_nulls(rng, rng.integers(0, 2**16, n).tolist()), pa.uint16()),
        "u32": pa.array(_nulls(rng, rng.integers(0, 2**32, n).tolist()), pa.uint32()),
        "u64": pa.array(_nulls(rng, rng.integers(0, 2**64, n, dtype=np.uint64).tolist()), pa.uint64()),
        "f32": pa.array(_nulls(rng, floats.astype(np.float32).tolist()), pa.float32()),
        "f64": pa.array(_nulls(rng, floats.tolist()), pa.float64()),
        "nan_only": pa.array([math.nan if all_nan else float(i) for i in range(n)], pa.float64()),
        "dec_i32": pa.array(
            _nulls(rng, [Decimal(int(x)).scaleb(-2) for x in rng.integers(-(10**6), 10**6, n)]), pa.decimal128(7, 2)
        ),
        "dec_i64": pa.array(
            _nulls(rng, [Decimal(int(x)).scaleb(-4) for x in rng.integers(-(10**17), 10**17, n)]), pa.decimal128(18, 4)
        ),
        "dec_big": pa.array(
            _nulls(rng, [Decimal(int(x) * 10**11 + 7).scaleb(-5) for x in rng.integers(-(10**12), 10**12, n)]),
            pa.decimal128(30, 5),
        ),
        "flag": pa.array(_nulls(rng, (rng.random(n) < 0.5).tolist()), pa.bool_()),
        "day": pa.array(
            _nulls(rng, [dt.date(1970, 1, 1) + dt.timedelta(days=int(x)) for x in rng.integers(-700_000, 20_000, n)]),
            pa.date32(),
        ),
        "ts_ms": pa.array(_nulls(rng, (micros // 1000).tolist()), pa.timestamp("ms", tz="UTC")),
        "ts_us": pa.array(_nulls(rng, micros.tolist()), pa.timestamp("us", tz="UTC")),
        "ts_ntz": pa.array(_nulls(rng, (micros + 17).tolist()), pa.timestamp("us")),
        "ts_ns": pa.array(_nulls(rng, (micros * 1000 + 999).tolist()), pa.timestamp("ns")),
        "tod": pa.array(_nulls(rng, rng.integers(0, 86_400_000_000, n).tolist()), pa.time64("us")),
        "s": pa.array(_long(_nulls(rng, words)) if long_strings else _nulls(rng, words), pa.string()),
        "bin": pa.array(
            _nulls(rng, [bytes(rng.integers(0, 256, rng.integers(0, 6)).astype(np.uint8)) for _ in range(n)]),
            pa.binary(),
        ),
        "fsb": pa.array(_nulls(rng, [bytes(rng.integers(0, 256, 4).astype(np.uint8)) for _ in range(n)]), pa.binary(4)),
        "all_null": pa.nulls(n, pa.int32()),
    }
    return pa.table(cols)


def _long(words: list) -> list:
    """The file's max string is 5 KB: pyarrow drops footer min/max above 4 KiB, so the auto method must scan."""
    words = list(words)
    words[5] = "\uffef" + "z" * 5000
    return words


SPARK_UNREADABLE = {"ts_ns", "tod"}  # Spark 4 reads neither nanosecond timestamps nor TIME


def expected(arr: pa.ChunkedArray | pa.Array) -> dict:
    """Exact stats of one file's column with pyarrow.compute (NaN excluded from min/max, counted apart)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_fixed_size_binary(arr.type):
        arr = arr.cast(pa.binary())
    nulls = arr.null_count
    nans = None
    vals = arr.drop_null()
    if pa.types.is_floating(arr.type):
        isnan = pc.is_nan(vals)
        nans = pc.sum(isnan.cast(pa.int64())).as_py() or 0
        vals = vals.filter(pc.invert(isnan))
    if len(vals) == 0:
        return {"min": None, "max": None, "nulls": nulls, "nans": nans}
    mm = pc.min_max(vals)
    return {"min": mm["min"].as_py(), "max": mm["max"].as_py(), "nulls": nulls, "nans": nans}


def decoded(row: dict):
    t = value_order.parse_arrow_type(row["arrow_type"])
    lo = value_order.decode_bounds(pa.array([row["min_value"]], pa.string()), t)[0].as_py()
    hi = value_order.decode_bounds(pa.array([row["max_value"]], pa.string()), t)[0].as_py()
    return lo, hi


def check_rows_exact(stats: pa.Table, files: dict[str, pa.Table], skip=lambda r: False) -> int:
    """Assert every row with stats equals pyarrow.compute's exact values on its file; returns rows checked."""
    checked = 0
    for r in stats.to_pylist():
        if skip(r):
            continue
        assert r["error"] is None, r
        exp = expected(files[r["path"]][r["column_name"]])
        assert r["null_count"] == exp["nulls"], (r["path"], r["column_name"])
        assert r["value_count"] == files[r["path"]].num_rows
        if not r["has_stats"]:
            continue
        lo, hi = decoded(r)
        assert lo == exp["min"] and hi == exp["max"], (r["path"], r["column_name"], lo, hi, exp)
        if r["method"] == "scan" and exp["nans"] is not None:
            assert r["nan_count"] == exp["nans"], (r["path"], r["column_name"])
        if exp["min"] is not None:  # keys agree with the values
            assert r["min_key"] == value_order.order_key(exp["min"], r["arrow_type"])
            assert r["max_key"] == value_order.order_key(exp["max"], r["arrow_type"])
        checked += 1
    return checked


@pytest.fixture(scope="module")
def typed_source(tmp_path_factory):
    """A Hive-partitioned table (special characters in a partition value) of pyarrow files, several row groups."""
    root = tmp_path_factory.mktemp("typed") / "t"
    files = {}
    parts = ["k=plain", "k=a b%25[x]"]
    for i in range(4):
        d = root / parts[i % 2]
        d.mkdir(parents=True, exist_ok=True)
        t = typed_table(i, long_strings=(i == 1), all_nan=(i == 2))
        p = str(d / f"part {i}.parquet")
        pq.write_table(t, p, row_group_size=50)
        files[p] = t
    return str(root), files


# --------------------------------------------------------------------------- exact values, every type


def test_every_type_auto_scan_and_footer_equal_exact_values(spark, typed_source, tmp_path):
    root, files = typed_source
    names = list(next(iter(files.values())).column_names)

    auto = run_collect(spark, CollectOptions(table=root, stats_location=str(tmp_path / "auto")))
    assert auto["status"] == "ok", auto["errors"]
    assert auto["files_total"] == 4 and auto["files_read"] == 4 and set(auto["columns"]) == set(names)
    st = stats_store.load_latest(str(tmp_path / "auto"))
    assert st.num_rows == 4 * len(names)
    assert all(st["has_stats"].to_pylist()), "auto leaves nothing without stats here"
    assert check_rows_exact(st, files) == st.num_rows
    rows = {(os.path.basename(r["path"]), r["column_name"]): r for r in st.to_pylist()}
    # only the (file, column) pairs whose footer stats were missing were scanned
    scanned = {k for k, r in rows.items() if r["method"] == "scan"}
    assert scanned == {("part 1.parquet", "s"), ("part 2.parquet", "nan_only")}
    assert rows[("part 1.parquet", "s")]["reason"] == "scanned:row_group_without_min_max"
    assert rows[("part 1.parquet", "s")]["max_value"] == "\uffef" + "z" * 5000  # the full string
    nan_only = rows[("part 2.parquet", "nan_only")]
    assert nan_only["min_value"] is None and nan_only["nan_count"] == 120 and nan_only["has_stats"]
    assert (
        rows[("part 0.parquet", "all_null")]["has_stats"] and rows[("part 0.parquet", "all_null")]["min_value"] is None
    )
    assert rows[("part 0.parquet", "f64")]["min_value"] != "nan"
    # partitions come from the directories, unescaped in the map
    r = rows[("part 1.parquet", "i8")]
    assert r["partition"] == "k=a b%25[x]" and dict(r["partition_values"]) == {"k": "a b%[x]"}
    assert rows[("part 0.parquet", "i8")]["partition"] == "k=plain"
    cm = {c["column_name"]: c for c in auto["column_methods"]}
    assert cm["s"] == {"column_name": "s", "footer": 3, "scan": 1, "no_stats": 0}

    scan = run_collect(spark, CollectOptions(table=root, method="scan", stats_location=str(tmp_path / "scan")))
    assert scan["status"] == "ok", scan["errors"]
    st = stats_store.load_latest(str(tmp_path / "scan"))
    by_method = {(r["column_name"], r["method"]) for r in st.to_pylist()}
    assert {m for c, m in by_method if c not in SPARK_UNREADABLE} == {"scan"}
    assert {m for c, m in by_method if c in SPARK_UNREADABLE} == {"footer"}
    for r in st.to_pylist():
        if r["column_name"] in SPARK_UNREADABLE:
            assert "scan_unsupported_type" in r["reason"]
    assert check_rows_exact(st, files) == st.num_rows
    f64 = [r for r in st.to_pylist() if r["column_name"] == "f64"]
    assert all(r["nan_count"] == expected(files[r["path"]]["f64"])["nans"] for r in f64)

    footer = run_collect(spark, CollectOptions(table=root, method="footer", stats_location=str(tmp_path / "footer")))
    st = stats_store.load_latest(str(tmp_path / "footer"))
    assert set(st["method"].to_pylist()) == {"footer"}
    missing = {(os.path.basename(r["path"]), r["column_name"]) for r in st.to_pylist() if not r["has_stats"]}
    assert missing == {("part 1.parquet", "s"), ("part 2.parquet", "nan_only")}
    assert check_rows_exact(st, files) == st.num_rows - 2
    assert footer["phases"]["scan_s"] == 0.0


# --------------------------------------------------------------------------- INT96


def test_int96_timestamps_fall_back_to_the_scan(spark, tmp_path):
    root = tmp_path / "int96"
    root.mkdir()
    micros = np.array([-(10**15), 0, 1_600_000_000_123_456, 1_700_000_000_000_001])
    t = pa.table({"ts": pa.array(micros, pa.timestamp("us")), "x": pa.array([1, 2, 3, None], pa.int64())})
    pq.write_table(t, str(root / "py.parquet"), use_deprecated_int96_timestamps=True)
    # and a table written by Spark itself (default outputTimestampType: INT96)
    df = spark.createDataFrame(
        [(i, dt.datetime(2024, 1, 1, 12, tzinfo=UTC) + dt.timedelta(seconds=i)) for i in range(50)],
        "x long, ts timestamp",
    )
    before = spark.conf.get("spark.sql.parquet.outputTimestampType")
    spark.conf.set("spark.sql.parquet.outputTimestampType", "INT96")
    try:
        df.coalesce(1).write.mode("overwrite").parquet(str(root / "sub=spark"))
    finally:
        spark.conf.set("spark.sql.parquet.outputTimestampType", before)
    res = run_collect(spark, CollectOptions(table=str(root / "sub=spark"), columns=["ts", "x"]))
    assert res["status"] == "ok"
    st = stats_store.load_latest(res["stats_location"])
    ts = st.filter(pc.equal(st["column_name"], "ts")).to_pylist()[0]
    assert ts["physical_type"] == "INT96" and ts["method"] == "scan" and ts["reason"] == "scanned:int96"
    assert decoded(ts) == (dt.datetime(2024, 1, 1, 12), dt.datetime(2024, 1, 1, 12, 0, 49))
    x = st.filter(pc.equal(st["column_name"], "x")).to_pylist()[0]
    assert x["method"] == "footer" and decoded(x) == (0, 49)

    shutil.rmtree(root / "sub=spark")
    res = run_collect(spark, CollectOptions(table=str(root), columns=["TS", "x"]))  # names are case-insensitive
    st = stats_store.load_latest(res["stats_location"])
    assert res["columns"] == ["ts", "x"]
    ts = st.filter(pc.equal(st["column_name"], "ts")).to_pylist()[0]
    assert ts["method"] == "scan" and ts["arrow_type"] == "timestamp[us]"
    exp = pq.read_table(str(root / "py.parquet"))["ts"].cast(pa.timestamp("us"))
    assert decoded(ts) == (pc.min(exp).as_py(), pc.max(exp).as_py())
    assert ts["null_count"] == 0 and ts["value_count"] == 4


# --------------------------------------------------------------------------- incremental, removed, no-op


def _write_events(d: Path, i: int, n: int = 200) -> str:
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(i)
    p = str(d / f"f{i:03d}.parquet")
    pq.write_table(
        pa.table(
            {
                "id": pa.array(np.arange(i * n, (i + 1) * n)),
                "v": pa.array(rng.normal(size=n)),
                "name": pa.array([f"n{j % 17}" for j in range(n)]),
            }
        ),
        p,
    )
    return p


def test_incremental_reads_only_new_files_and_drops_removed_ones(spark, tmp_path):
    root = tmp_path / "inc"
    files = [_write_events(root / "day=1", i) for i in range(4)]
    first = run_collect(spark, CollectOptions(table=str(root)))
    assert (first["files_read"], first["snapshot_id"], first["new_snapshot"]) == (4, 1, True)

    # Prove the old files are not read again: garble one in place, keeping its size and mtime.
    st = os.stat(files[0])
    with open(files[0], "r+b") as f:
        f.seek(st.st_size - 8)
        f.write(b"\0" * 8)
    os.utime(files[0], ns=(st.st_atime_ns, st.st_mtime_ns))
    new = [_write_events(root / "day=2", i) for i in range(4, 6)]
    second = run_collect(spark, CollectOptions(table=str(root)))
    assert second["status"] == "ok", second["errors"]
    assert (second["files_read"], second["files_reused"], second["files_new"]) == (2, 4, 2)
    assert second["snapshot_id"] == 2
    latest = stats_store.load_latest(second["stats_location"])
    assert sorted(set(latest["path"].to_pylist())) == sorted(files + new)
    by_path = {p: a for p, a in zip(latest["path"].to_pylist(), latest["collected_at"].to_pylist())}
    assert len({by_path[p] for p in files}) == 1 and by_path[files[0]] < by_path[new[0]]

    # Removed files disappear from the latest snapshot (and are listed as gone).
    os.remove(files[1])
    os.remove(files[0])
    third = run_collect(spark, CollectOptions(table=str(root)))
    assert (third["files_read"], third["files_gone"], third["snapshot_id"]) == (0, 2, 3)
    assert third["gone_paths"] == sorted(files[:2])
    latest = stats_store.load_latest(third["stats_location"])
    assert files[0] not in set(latest["path"].to_pylist()) and len(set(latest["path"].to_pylist())) == 4
    assert stats_store.load_snapshot(third["stats_location"], 2).num_rows == 6 * 3  # history kept

    # Nothing changed: no new snapshot, the run is still recorded.
    fourth = run_collect(spark, CollectOptions(table=str(root)))
    assert (fourth["new_snapshot"], fourth["snapshot_id"], fourth["files_read"]) == (False, 3, 0)
    assert fourth["phases"]["footer_s"] == 0.0 and fourth["phases"]["scan_s"] == 0.0
    runs = stats_store.load_runs(third["stats_location"])
    assert runs["snapshot_id"].to_pylist() == [1, 2, 3, 3]
    assert runs["files_gone"].to_pylist() == [0, 0, 2, 0]

    # A changed file (same path, new content) is read again; a column subset reuses the rest.
    _write_events(root / "day=2", 4, n=300)
    fifth = run_collect(spark, CollectOptions(table=str(root), columns=["id"]))
    assert fifth["files_read"] == 1 and fifth["files_changed"] == 1 and fifth["columns"] == ["id"]
    latest = stats_store.load_latest(fifth["stats_location"])
    assert set(latest["column_name"].to_pylist()) == {"id"} and latest.num_rows == 4
    row = latest.filter(pc.equal(latest["path"], new[0])).to_pylist()[0]
    assert decoded(row) == (1200, 1499) and row["file_rows"] == 300


# --------------------------------------------------------------------------- failures and bad input


def test_corrupt_files_are_named_and_the_others_committed(spark, tmp_path):
    root = tmp_path / "bad"
    good = [_write_events(root, i) for i in range(3)]
    garbage = root / "garbage.parquet"
    garbage.write_bytes(b"this is not parquet" * 10)
    # valid footer, destroyed data pages: only a read of the data finds out
    pages = _write_events(root, 9, n=5000)
    raw = bytearray(open(pages, "rb").read())
    for i in range(8, len(raw) // 2):
        raw[i] = 0xAB
    open(pages, "wb").write(bytes(raw))

    res = run_collect(spark, CollectOptions(table=str(root), method="scan"))
    assert res["status"] == "partial" and res["files_failed"] == 2
    errs = {e["path"]: e["error"] for e in res["errors"]}
    assert set(errs) == {str(garbage), pages}
    assert "not a Parquet file" in errs[str(garbage)]
    latest = stats_store.load_latest(res["stats_location"])
    failed_rows = latest.filter(pc.is_valid(latest["error"]))
    assert set(failed_rows["path"].to_pylist()) == set(errs) and not any(failed_rows["has_stats"].to_pylist())
    ok_rows = latest.filter(pc.is_null(latest["error"]))
    assert set(ok_rows["path"].to_pylist()) == set(good)
    assert check_rows_exact(ok_rows, {p: pq.read_table(p) for p in good}) == 9
    run = stats_store.load_runs(res["stats_location"]).to_pylist()[-1]
    assert run["status"] == "partial" and {e["path"] for e in run["errors"]} == set(errs)
    # failed files are retried next time (and still fail), the good ones are reused
    again = run_collect(spark, CollectOptions(table=str(root), method="scan"))
    assert again["files_read"] == 2 and again["files_reused"] == 3 and again["files_failed"] == 2


def test_bad_input_fails_clearly_and_commits_nothing(spark, tmp_path):
    with pytest.raises(TableError, match="does not exist"):
        run_collect(spark, CollectOptions(table=str(tmp_path / "missing")))
    root = tmp_path / "t"
    _write_events(root, 0)
    with pytest.raises(StatsCollectionError, match="unknown column 'nope'; the table's columns are: id, v, name"):
        run_collect(spark, CollectOptions(table=str(root), columns=["id", "nope"]))
    assert stats_store.latest_snapshot_id(default_stats_location(str(root))) is None
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the stats directory should go")
    with pytest.raises(StatsCollectionError, match="not writable"):
        run_collect(spark, CollectOptions(table=str(root), stats_location=str(blocker / "stats")))
    with pytest.raises(ValueError, match="method='guess' is not one of auto, footer, scan"):
        run_collect(spark, CollectOptions(table=str(root), method="guess"))


# --------------------------------------------------------------------------- catalog tables, events


def test_catalog_table_and_stats_catalog_table(spark, tmp_path):
    spark.sql("DROP TABLE IF EXISTS default.cs_events")
    spark.sql("DROP TABLE IF EXISTS default.cs_events_stats")
    spark.sql("DROP TABLE IF EXISTS default.cs_events_stats_runs")
    df = spark.createDataFrame(
        [(i, f"c{i % 3}", float(i) / 3) for i in range(300)], "id long, country string, v double"
    )
    df.repartition(2).write.format("parquet").partitionBy("country").saveAsTable("default.cs_events")
    res = run_collect(
        spark,
        CollectOptions(
            table="default.cs_events", columns=["id", "country", "V"], stats_table="default.cs_events_stats"
        ),
    )
    assert res["status"] == "ok" and res["kind"] == "catalog" and res["columns"] == ["id", "v"]
    assert any("partition column" in m for m in res["messages"])
    st = stats_store.load_latest(res["stats_location"])
    assert set(st["partition"].to_pylist()) == {"country=c0", "country=c1", "country=c2"}
    rows = spark.sql("""
        SELECT partition_values['country'] AS country, min(CAST(min_value AS BIGINT)) AS lo, sum(file_rows) AS n
        FROM default.cs_events_stats
        WHERE column_name = 'id' AND snapshot_id = (SELECT max(snapshot_id) FROM default.cs_events_stats)
        GROUP BY 1 ORDER BY 1""").collect()
    assert [(r.country, r.lo, r.n) for r in rows] == [("c0", 0, 100), ("c1", 1, 100), ("c2", 2, 100)]
    runs = spark.sql("SELECT run_id, status FROM default.cs_events_stats_runs").collect()
    assert [(r.run_id, r.status) for r in runs] == [(res["run_id"], "ok")]
    with pytest.raises(StatsCollectionError, match="unknown column 'nope'"):
        run_collect(spark, CollectOptions(table="default.cs_events", columns=["nope"]))


def test_record_event_through_the_clustering_jobs_filesystem(spark, tmp_path):
    loc = default_stats_location(str(tmp_path / "t"))
    ev = stats_store.cluster_event(
        {
            "status": "clustered",
            "run_id": "r9",
            "table": str(tmp_path / "t"),
            "curve": "zorder",
            "columns": ["a"],
            "partitions": [],
            "before": {"files": 8, "bytes": 10, "rows": 5},
            "after": {"files": 2, "bytes": 9, "rows": 5},
        }
    )
    stats_store.record_event(loc, ev, filesystem=HadoopFileSystem(spark))
    got = stats_store.load_events(loc).to_pylist()
    assert [(e["kind"], e["run_id"], e["files_before"], e["files_after"]) for e in got] == [("cluster", "r9", 8, 2)]


# --------------------------------------------------------------------------- spark-submit


def test_spark_submit_writes_stats_and_result(tmp_path):
    root = tmp_path / "t"
    for i in range(3):
        _write_events(root / f"day={i}", i)
    (root / "day=2" / "broken.parquet").write_bytes(b"PAR1 but not really")
    out = tmp_path / "result.json"
    proc = spark_submit("collect_stats", "--table", str(root), "--columns", "id,v", "--result-json", str(out))
    assert proc.returncode == 2, proc.stderr[-3000:]  # committed, but one file could not be read
    result = json.loads(out.read_text())
    assert result["status"] == "partial" and result["files_total"] == 4 and result["files_failed"] == 1
    assert result["errors"][0]["path"].endswith("broken.parquet")
    st = stats_store.load_latest(result["stats_location"])
    assert st.num_rows == 8 and set(st["column_name"].to_pylist()) == {"id", "v"}
    assert st.filter(pc.is_null(st["error"]))["has_stats"].to_pylist() == [True] * 6


def test_hadoop_stats_io_commits_snapshots_readable_by_pyarrow(spark, tmp_path, monkeypatch):
    """The driver-side Hadoop IO (used for hdfs://, s3a://, ...), exercised through the JVM on file: URIs."""
    hadoop = HadoopFileSystem(spark)
    monkeypatch.setattr(hadoop, "_local_path", lambda path: None)  # no OS shortcut: every call goes through Hadoop
    loc = "file://" + str(tmp_path / "stats")
    stats_store.check_writable(loc, hadoop)
    rows = pa.Table.from_pylist(
        [
            {
                "snapshot_id": 0,
                "table_name": "t",
                "path": "/t/a.parquet",
                "column_name": "x",
                "arrow_type": "int64",
                "min_value": "1",
                "max_value": "9",
                "has_stats": True,
                "method": "footer",
                "collected_at": dt.datetime(2026, 1, 1, tzinfo=UTC),
            }
        ],
        schema=stats_schema.FILE_STATS_SCHEMA,
    )
    assert stats_store.write_snapshot(loc, rows, {"run_id": "h1"}, hadoop) == 1
    assert stats_store.write_snapshot(loc, rows, {"run_id": "h2"}, hadoop) == 2
    stats_store.write_run(loc, {"run_id": "h3"}, hadoop)
    for reader in (hadoop, None):  # back through Hadoop, and with plain pyarrow
        got = stats_store.load_latest(loc, reader)
        assert got["snapshot_id"].to_pylist() == [2] and got["min_value"].to_pylist() == ["1"]
        assert stats_store.load_runs(loc, reader)["run_id"].to_pylist() == ["h1", "h2", "h3"]
    visible = sorted(os.listdir(tmp_path / "stats" / "files"))
    assert [v for v in visible if not v.startswith(".")] == [
        "snapshot-000000000001.parquet",
        "snapshot-000000000002.parquet",
    ]


def test_schema_evolution_and_empty_table(spark, tmp_path):
    root = tmp_path / "evo"
    old = _write_events(root, 0)
    first = run_collect(spark, CollectOptions(table=str(root)))
    assert first["columns"] == ["id", "v", "name"]
    newer = str(root / "f001.parquet")  # a later file adds a column
    pq.write_table(
        pa.table(
            {
                "id": pa.array([7, 8], pa.int64()),
                "v": [1.0, 2.0],
                "name": ["a", "b"],
                "extra": pa.array([None, 5], pa.int32()),
            }
        ),
        newer,
    )
    second = run_collect(spark, CollectOptions(table=str(root)))
    assert second["files_read"] == 1 and second["columns"] == ["id", "v", "name", "extra"]
    st = stats_store.load_latest(second["stats_location"], columns=["extra"]).to_pylist()
    by = {r["path"]: r for r in st}
    # the old file (not read again) reads as all-null in the new column
    assert by[old]["has_stats"] and by[old]["min_value"] is None and by[old]["null_count"] == 200
    assert by[old]["reason"] == "column_not_in_file"
    assert decoded(by[newer]) == (5, 5) and by[newer]["null_count"] == 1

    empty = tmp_path / "empty"
    empty.mkdir()
    res = run_collect(spark, CollectOptions(table=str(empty)))
    assert res["status"] == "ok" and res["files_total"] == 0 and res["snapshot_id"] == 1
    assert stats_store.load_latest(res["stats_location"]).num_rows == 0
    _write_events(tmp_path / "parted" / "day=1", 0)
    with pytest.raises(StatsCollectionError, match="no data column"):
        run_collect(spark, CollectOptions(table=str(tmp_path / "parted"), columns=["DAY"]))


def test_files_python_cannot_open_fall_back_to_the_scan(spark, tmp_path, monkeypatch):
    """A store only Hadoop can reach (no pyarrow/fsspec filesystem on the executors): auto scans it all."""
    from spark_jobs.stats_collection import footers

    root = tmp_path / "remote"
    paths = [_write_events(root, i) for i in range(2)]

    def no_python_fs(spark, items, parallelism=None):
        return stats_schema.empty_file_stats(), [
            (p, footers.NO_PY_FS, "ArrowInvalid: no filesystem") for _, p, _ in items
        ]

    monkeypatch.setattr(footers, "read_footers_distributed", no_python_fs)
    res = run_collect(spark, CollectOptions(table=str(root)))
    assert res["status"] == "ok" and res["files_scanned"] == 2 and res["columns"] == ["id", "v", "name"]
    st = stats_store.load_latest(res["stats_location"])
    assert set(st["method"].to_pylist()) == {"scan"} and st.num_rows == 6
    assert check_rows_exact(st, {p: pq.read_table(p) for p in paths}) == 6
    assert any("could not be opened from Python executors" in m for m in res["messages"])
    footer_only = run_collect(
        spark, CollectOptions(table=str(root), method="footer", full=True, stats_location=str(tmp_path / "f"))
    )
    st = stats_store.load_latest(footer_only["stats_location"])
    assert not any(st["has_stats"].to_pylist()) and st["reason"][0].as_py().startswith("no_python_filesystem")
