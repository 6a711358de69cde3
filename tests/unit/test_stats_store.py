"""The stats table without Spark: schema, order keys, atomic snapshots, history, events, readers (pyarrow, DuckDB)."""

from __future__ import annotations

import datetime as dt
import json
import os
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyarrow import fs as pafs

from airflow_zorder.core.errors import ConcurrentChangeError
from airflow_zorder.core.policy import history
from airflow_zorder.core.stats import stats_schema, stats_store
from airflow_zorder.core.stats.stats_schema import FILE_STATS_SCHEMA
from airflow_zorder.core.stats.value_order import order_key, order_keys
from airflow_zorder.core.storage.io.local import LocalFileSystem

UTC = dt.UTC


# --------------------------------------------------------------------------- helpers


def stats_rows(
    paths_values: dict[str, tuple[int, int]],
    column: str = "x",
    arrow_type: str = "int64",
    collected_at: dt.datetime | None = None,
) -> pa.Table:
    """FILE_STATS rows for one integer column: {path: (min, max)}."""
    at = collected_at or dt.datetime(2026, 1, 1, tzinfo=UTC)
    rows = []
    for i, (p, (lo, hi)) in enumerate(sorted(paths_values.items())):
        rows.append(
            {
                "snapshot_id": 0,
                "table_name": "t",
                "path": p,
                "partition": "day=1" if i % 2 else None,
                "partition_values": [("day", "1")] if i % 2 else None,
                "file_size": 100 + i,
                "file_mtime_ms": 1000 + i,
                "file_rows": 10,
                "num_row_groups": 1,
                "created_by": "test",
                "column_name": column,
                "arrow_type": arrow_type,
                "physical_type": "INT64",
                "min_value": str(lo),
                "max_value": str(hi),
                "null_count": 0,
                "nan_count": None,
                "value_count": 10,
                "has_stats": True,
                "min_exact": True,
                "max_exact": True,
                "reason": None,
                "method": "footer",
                "error": None,
                "collected_at": at,
            }
        )
    t = pa.Table.from_pylist(rows, schema=FILE_STATS_SCHEMA)
    b = stats_schema.bound_columns(t["min_value"], t["max_value"], t["arrow_type"])
    for k, v in b.items():
        t = t.set_column(t.schema.get_field_index(k), FILE_STATS_SCHEMA.field(k), v)
    return t


def run_record(run_id: str, **kw) -> dict:
    return {
        "run_id": run_id,
        "table_name": "t",
        "table_kind": "path",
        "status": "ok",
        "method": "auto",
        "columns": ["x"],
        "columns_requested": "all",
        "files_total": 2,
        "errors": [],
        "gone_paths": [],
        **kw,
    }


@pytest.fixture
def loc(tmp_path) -> str:
    return str(tmp_path / "t" / "_zorder" / "stats")


# --------------------------------------------------------------------------- schema


def test_schema_is_versioned_and_sql_friendly():
    assert stats_schema.SCHEMA_VERSION == 1
    for schema in (stats_schema.FILE_STATS_SCHEMA, stats_schema.RUNS_SCHEMA, stats_schema.EVENTS_SCHEMA):
        assert schema.metadata[stats_schema.SCHEMA_VERSION_KEY] == b"1"
        # no SQL reserved words as column names (DuckDB/Postgres reject `column`, `table`)
        assert not {"column", "table", "min", "max", "order", "group"} & set(schema.names)
    f = stats_schema.FILE_STATS_SCHEMA
    for name in (
        "path",
        "partition",
        "partition_values",
        "file_size",
        "file_mtime_ms",
        "file_rows",
        "column_name",
        "min_value",
        "max_value",
        "min_key",
        "max_key",
        "null_count",
        "value_count",
        "method",
        "collected_at",
        "snapshot_id",
        "table_name",
    ):
        assert name in f.names
    assert f.field("collected_at").type == pa.timestamp("us", tz="UTC")
    assert f.field("min_key").type == pa.binary()


def _assert_keys_order(values: list, t: pa.DataType) -> None:
    keys = order_keys(pa.array(values, t)).to_pylist()
    for i, a in enumerate(values):
        for j, b in enumerate(values):
            assert (a < b) == (keys[i] < keys[j]), (t, a, b)
            assert (a == b) == (keys[i] == keys[j]), (t, a, b)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=20))
def test_order_keys_int64(values):
    _assert_keys_order(values, pa.int64())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=20))
def test_order_keys_uint64(values):
    _assert_keys_order(values, pa.uint64())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(allow_nan=False), min_size=1, max_size=20))
def test_order_keys_double_ieee_order(values):
    _assert_keys_order(values, pa.float64())  # -0.0 == 0.0 compares equal, as in IEEE


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.decimals(allow_nan=False, allow_infinity=False, min_value=Decimal("-1e30"), max_value=Decimal("1e30")),
        min_size=1,
        max_size=15,
    )
)
def test_decimal_keys_compare_by_value_across_scales(values):
    keys = [order_key(v, "decimal128(38, 10)") for v in values]
    for i, a in enumerate(values):
        for j, b in enumerate(values):
            assert (a < b) == (keys[i] < keys[j]) and (a == b) == (keys[i] == keys[j]), (a, b)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=30), min_size=1, max_size=20))
def test_order_keys_full_strings(values):
    # UTF-8 byte order == code point order == Parquet/Spark string order; nothing truncated
    keys = order_keys(pa.array(values, pa.string())).to_pylist()
    for i, a in enumerate(values):
        for j, b in enumerate(values):
            assert (a.encode() < b.encode()) == (keys[i] < keys[j])


def test_order_keys_special_values_and_units():
    nan, inf = float("nan"), float("inf")
    k = order_keys(pa.array([-inf, -1.0, -0.0, 0.0, 1e-300, inf, nan])).to_pylist()
    assert k[0] < k[1] < k[2] == k[3] < k[4] < k[5] < k[6]  # NaN above +inf (Spark's order)
    # timestamps compare across units at ns resolution; dates and times have keys too
    us = order_keys(pa.array([1_000_001], pa.timestamp("us"))).to_pylist()[0]
    ns = order_keys(pa.array([1_000_001_000, 1_000_001_001], pa.timestamp("ns"))).to_pylist()
    assert us == ns[0] < ns[1]
    old = order_keys(
        pa.array(
            [dt.datetime(1, 1, 1), dt.datetime(1969, 12, 31, 23, 59, 59, 999999), dt.datetime(1970, 1, 1)],
            pa.timestamp("us"),
        )
    ).to_pylist()
    assert old[0] < old[1] < old[2]
    d = order_keys(pa.array([dt.date(1, 1, 1), dt.date(1969, 12, 31), dt.date(2020, 1, 1)])).to_pylist()
    assert d[0] < d[1] < d[2]
    assert order_key(False, "bool") < order_key(True, "bool")
    assert order_key(b"\x00", "binary") < order_key(b"\x00\x00", "binary") < order_key(b"\xff", "binary")
    # a stats text value is accepted as the literal too
    assert order_key("2020-01-01", "date32[day]") == order_key(dt.date(2020, 1, 1), "date32[day]")
    assert order_key("1.50", "decimal128(10, 2)") == order_key(Decimal("1.5"), "decimal128(5, 1)")
    assert order_key(None, "int64") is None


def test_bound_columns_decode_text_per_type():
    b = stats_schema.bound_columns(
        pa.array(["-5", None, "2020-01-01", "1.50", "abc", "2020-01-01 00:00:00.000001Z"]),
        pa.array(["7", None, "2021-01-01", "2.50", "abd", "2020-01-02 00:00:00.000000Z"]),
        pa.array(["int32", "int32", "date32[day]", "decimal128(5, 2)", "string", "timestamp[us, tz=UTC]"]),
    )
    assert b["min_key"][1].as_py() is None and b["min_num"][1].as_py() is None
    assert b["min_num"].to_pylist()[0] == -5.0 and b["max_num"].to_pylist()[3] == 2.5
    assert b["min_num"].to_pylist()[2] == 18262.0  # days since epoch
    assert b["min_num"].to_pylist()[4] is None  # strings have no numeric view
    assert b["min_num"].to_pylist()[5] == pytest.approx(1577836800.000001)
    assert b["min_key"][4].as_py() == b"abc"
    assert all(lo < hi for lo, hi in zip(b["min_key"].to_pylist(), b["max_key"].to_pylist()) if lo is not None)


# --------------------------------------------------------------------------- snapshots


def test_write_and_load_latest_round_trip(loc):
    rows = stats_rows({"/t/a.parquet": (1, 5), "/t/b.parquet": (3, 9)})
    sid = stats_store.write_snapshot(loc, rows, run_record("r1"))
    assert sid == 1
    got = stats_store.load_latest(loc)
    assert got.schema.remove_metadata().equals(FILE_STATS_SCHEMA.remove_metadata())
    assert got["snapshot_id"].to_pylist() == [1, 1]
    cols = [c for c in FILE_STATS_SCHEMA.names if c != "snapshot_id"]
    assert got.select(cols).sort_by("path").equals(rows.select(cols).sort_by("path"))
    run = json.loads(got.schema.metadata[stats_schema.RUN_METADATA_KEY])
    assert run["run_id"] == "r1" and run["snapshot_id"] == 1 and run["schema_version"] == 1
    # typed, exact bounds back
    mins, maxs, has = stats_schema.column_bounds(got, "x")
    assert mins.type == pa.int64() and sorted(mins.to_pylist()) == [1, 3] and has.all()
    # second snapshot; history kept
    sid2 = stats_store.write_snapshot(loc, stats_rows({"/t/a.parquet": (1, 5)}), run_record("r2"))
    assert sid2 == 2
    assert stats_store.list_snapshots(loc) == [1, 2]
    assert stats_store.load_latest(loc)["path"].to_pylist() == ["/t/a.parquet"]
    assert stats_store.load_snapshot(loc, 1).num_rows == 2
    ptr = json.load(open(os.path.join(loc, "_latest.json")))
    assert ptr["snapshot_id"] == 2 and ptr["run_id"] == "r2"


def test_a_datetime_collected_at_is_stored_as_iso_and_the_commit_completes(loc):
    at = dt.datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    sid = stats_store.write_snapshot(loc, stats_rows({"/t/a": (1, 2)}), run_record("r1", collected_at=at))
    ptr = json.load(open(os.path.join(loc, "_latest.json")))
    assert ptr["snapshot_id"] == sid and ptr["collected_at"] == "2026-03-01T12:00:00.000000Z"
    assert stats_store.latest_snapshot_id(loc) == sid and stats_store.load_runs(loc).num_rows == 1


def test_column_filter_reads_only_that_columns_rows(loc):
    rows = pa.concat_tables([stats_rows({"/t/a": (1, 2), "/t/b": (3, 4)}, column=c) for c in ("x", "y", "z")])
    stats_store.write_snapshot(loc, rows, run_record("r1"))
    got = stats_store.load_latest(loc, columns=["y"])
    assert set(got["column_name"].to_pylist()) == {"y"} and got.num_rows == 2


def test_missing_stats_raise_clear_error(tmp_path):
    with pytest.raises(stats_store.StatsNotFoundError, match="collect_stats"):
        stats_store.load_latest(str(tmp_path / "nothing"))
    assert stats_store.latest_snapshot_id(str(tmp_path / "nothing")) is None


def test_readers_through_pyarrow_fsspec_and_uri(loc):
    stats_store.write_snapshot(loc, stats_rows({"/t/a": (1, 2)}), run_record("r1"))
    a = stats_store.load_latest(loc, filesystem=pafs.LocalFileSystem())
    b = stats_store.load_latest("file://" + loc)
    fsspec = pytest.importorskip("fsspec")
    c = stats_store.load_latest(loc, filesystem=fsspec.filesystem("file"))
    sub = pafs.SubTreeFileSystem(os.path.dirname(loc), pafs.LocalFileSystem())
    d = stats_store.load_latest("stats", filesystem=sub)
    assert a.equals(b) and a.equals(c) and a.equals(d)


def test_crash_between_commit_and_pointer_is_invisible_and_repaired(loc, monkeypatch):
    stats_store.write_snapshot(loc, stats_rows({"/t/a": (1, 2)}), run_record("r1"))

    def crash(*a, **k):
        raise OSError("simulated crash after the commit point")

    monkeypatch.setattr(stats_store, "_write_run_record", crash)
    with pytest.raises(OSError, match="simulated"):
        stats_store.write_snapshot(loc, stats_rows({"/t/a": (1, 2), "/t/b": (5, 6)}), run_record("r2"))
    monkeypatch.undo()
    # snapshot 2 is committed (its file exists): readers agree on it even though the pointer says 1
    assert json.load(open(os.path.join(loc, "_latest.json")))["snapshot_id"] == 1
    assert stats_store.latest_snapshot_id(loc) == 2
    assert stats_store.load_latest(loc).num_rows == 2
    assert [r for r in stats_store.load_runs(loc)["run_id"].to_pylist()] == ["r1"]
    # repair rebuilds the run record from the snapshot's metadata and moves the pointer
    assert stats_store.repair(loc) == [2]
    assert stats_store.load_runs(loc)["run_id"].to_pylist() == ["r1", "r2"]
    assert json.load(open(os.path.join(loc, "_latest.json")))["snapshot_id"] == 2


def test_failed_publish_leaves_no_visible_snapshot(loc, monkeypatch):
    stats_store.write_snapshot(loc, stats_rows({"/t/a": (1, 2)}), run_record("r1"))

    def boom(self, path, data):
        tmp = self._write_temp(self.local_path(path), data[: len(data) // 2])  # half-written temp file, then the crash
        raise OSError(f"disk full while writing {tmp}")

    monkeypatch.setattr(LocalFileSystem, "create_exclusive", boom)
    with pytest.raises(OSError, match="disk full"):
        stats_store.write_snapshot(loc, stats_rows({"/t/zzz": (1, 2)}), run_record("r2"))
    monkeypatch.undo()
    assert stats_store.list_snapshots(loc) == [1]
    assert stats_store.load_latest(loc)["path"].to_pylist() == ["/t/a"]
    duckdb = pytest.importorskip("duckdb")
    paths = duckdb.sql(f"SELECT DISTINCT path FROM read_parquet('{loc}/files/*.parquet')").fetchall()
    assert paths == [("/t/a",)]  # the half-written temp file is hidden from glob readers too
    assert stats_store.load_runs(loc)["run_id"].to_pylist() == ["r1"]


def test_concurrent_commit_of_the_same_id_conflicts(loc, monkeypatch):
    stats_store.write_snapshot(loc, stats_rows({"/t/a": (1, 2)}), run_record("r1"))
    real = stats_store._snapshot_ids
    monkeypatch.setattr(stats_store, "_snapshot_ids", lambda io, base: [])  # a stale view: both pick id 1
    with pytest.raises(ConcurrentChangeError, match="another collection run"):
        stats_store.write_snapshot(loc, stats_rows({"/t/b": (1, 2)}), run_record("r2"))
    monkeypatch.setattr(stats_store, "_snapshot_ids", real)
    assert stats_store.load_latest(loc)["path"].to_pylist() == ["/t/a"]


def test_retention_keeps_newest_snapshots_and_all_runs(loc):
    for i in range(5):
        stats_store.write_snapshot(loc, stats_rows({f"/t/{i}": (i, i)}), run_record(f"r{i}"), keep_snapshots=2)
    assert stats_store.list_snapshots(loc) == [4, 5]
    assert stats_store.load_runs(loc)["run_id"].to_pylist() == [f"r{i}" for i in range(5)]


def test_unwritable_location_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file.txt"
    blocker.write_text("not a directory")
    with pytest.raises(PermissionError, match="not writable"):
        stats_store.check_writable(str(blocker / "stats"))


def test_noop_run_is_recorded_without_a_new_snapshot(loc):
    stats_store.write_snapshot(loc, stats_rows({"/t/a": (1, 2)}), run_record("r1"))
    stats_store.write_run(loc, run_record("r2", files_read=0, files_reused=1))
    runs = stats_store.load_runs(loc)
    assert runs["run_id"].to_pylist() == ["r1", "r2"]
    assert runs["new_snapshot"].to_pylist() == [True, False]
    assert runs["snapshot_id"].to_pylist() == [1, 1]
    assert stats_store.list_snapshots(loc) == [1]


def test_history_with_clustering_health(loc):
    # snapshot 1: four fully overlapping files; snapshot 2: four disjoint files
    stats_store.write_snapshot(loc, stats_rows({f"/t/{i}": (0, 100) for i in range(4)}), run_record("r1"))
    stats_store.write_snapshot(loc, stats_rows({f"/t/{i}": (i * 25, i * 25 + 24) for i in range(4)}), run_record("r2"))
    h = history.clustering_history(loc, clustering_columns=["x"])
    assert h["run_id"].to_pylist() == ["r1", "r2"]
    assert h["worst_column"].to_pylist() == ["x", "x"]
    before, after = h["headline"].to_pylist()
    assert before > after and after == pytest.approx(1.0, rel=0.35)
    assert h["average_depth"].to_pylist()[0] == pytest.approx(4.0)


# --------------------------------------------------------------------------- events


def test_events_record_and_load(loc):
    result = {
        "status": "clustered",
        "run_id": "c1",
        "table": "/t",
        "kind": "path",
        "curve": "hilbert",
        "columns": ["a", "b"],
        "partitions": [{"partition": "day=1"}, {"partition": "day=2"}],
        "before": {"files": 10, "bytes": 1000, "rows": 50},
        "after": {"files": 2, "bytes": 900, "rows": 50},
        "duration_s": 3.5,
        "phases": {"write_s": 1.0},
    }
    p = stats_store.record_event(loc, stats_store.cluster_event(result))
    assert os.path.basename(p).startswith("event-") and p.endswith("-c1.json")
    # the clustering job passes its own fs.py FileSystem: text-only IO works for events
    stats_store.record_event(
        loc,
        {
            "kind": "cluster",
            "run_id": "c2",
            "columns": ["a"],
            "curve": "zorder",
            "files_before": 2,
            "files_after": 2,
            "custom": {"x": 1},
        },
        filesystem=LocalFileSystem(),
    )
    ev = stats_store.load_events(loc, kind="cluster")
    assert ev.schema.remove_metadata().equals(stats_schema.EVENTS_SCHEMA.remove_metadata())
    assert ev["run_id"].to_pylist() == ["c1", "c2"]
    first = ev.to_pylist()[0]
    assert first["partitions"] == ["day=1", "day=2"] and first["files_before"] == 10 and first["files_after"] == 2
    assert first["curve"] == "hilbert" and first["columns"] == ["a", "b"] and first["at"].tzinfo is not None
    assert json.loads(ev.to_pylist()[1]["details"]) == {"custom": {"x": 1}}
    with pytest.raises(ValueError, match="kind"):
        stats_store.record_event(loc, {"run_id": "x"})
    assert stats_store.load_events(loc, kind="other").num_rows == 0


# --------------------------------------------------------------------------- SQL engines


def test_duckdb_reads_snapshots_runs_and_events(loc):
    duckdb = pytest.importorskip("duckdb")
    rows = pa.concat_tables(
        [
            stats_rows({"/t/a": (-5, 2), "/t/b": (10, 20)}, column="x"),
            stats_rows({"/t/a": (1, 2), "/t/b": (3, 4)}, column="y"),
        ]
    )
    stats_store.write_snapshot(loc, rows, run_record("r1"))
    stats_store.write_snapshot(loc, rows.filter(pc.equal(rows["path"], "/t/b")), run_record("r2"))
    stats_store.record_event(loc, {"kind": "cluster", "run_id": "c1", "files_before": 3, "files_after": 1})
    files = f"read_parquet('{loc}/files/*.parquet')"
    latest = duckdb.sql(
        f"SELECT path, column_name, CAST(min_value AS BIGINT) lo FROM {files} "
        f"WHERE snapshot_id = (SELECT max(snapshot_id) FROM {files}) ORDER BY column_name"
    ).fetchall()
    assert latest == [("/t/b", "x", 10), ("/t/b", "y", 3)]
    # exact pruning with the order keys: files of snapshot 1 whose x range contains -3
    k = order_key(-3, "int64")
    hit = duckdb.execute(
        f"SELECT path FROM {files} WHERE snapshot_id = 1 AND column_name = 'x' AND min_key <= $k AND max_key >= $k",
        {"k": k},
    ).fetchall()
    assert hit == [("/t/a",)]
    runs = duckdb.sql(
        f"SELECT run_id, snapshot_id, new_snapshot FROM read_json('{loc}/runs/*.json') ORDER BY collected_at"
    ).fetchall()
    assert runs == [("r1", 1, True), ("r2", 2, True)]
    ev = duckdb.sql(f"SELECT kind, files_before, files_after FROM read_json('{loc}/events/*.json')").fetchall()
    assert ev == [("cluster", 3, 1)]


def test_duckdb_exact_casts_of_text_bounds(loc):
    duckdb = pytest.importorskip("duckdb")
    rows = []
    base = stats_rows({"/t/a": (0, 0)}).to_pylist()[0]
    for col, t, lo, hi in [
        ("d", "decimal128(20, 4)", "-12345678901234.5678", "99999999999999.9999"),
        ("ts", "timestamp[us, tz=UTC]", "2020-01-01 00:00:00.000001Z", "2020-01-01 00:00:00.999999Z"),
        ("day", "date32[day]", "1995-03-15", "1996-01-01"),
        ("f", "double", "-0", "1e+300"),
        ("s", "string", "a" * 200, "a" * 200 + "b"),
    ]:
        rows.append({**base, "column_name": col, "arrow_type": t, "min_value": lo, "max_value": hi})
    t = pa.Table.from_pylist(rows, schema=FILE_STATS_SCHEMA)
    stats_store.write_snapshot(loc, t, run_record("r1"))
    got = dict(duckdb.sql(f"SELECT column_name, max_value FROM read_parquet('{loc}/files/*.parquet')").fetchall())
    assert got["s"] == "a" * 200 + "b"  # full strings, never truncated
    d = duckdb.sql(
        f"SELECT CAST(min_value AS DECIMAL(20,4)) FROM read_parquet('{loc}/files/*.parquet') WHERE column_name = 'd'"
    ).fetchall()[0][0]
    assert d == Decimal("-12345678901234.5678")
    ts = duckdb.sql(
        f"SELECT epoch_us(CAST(min_value AS TIMESTAMPTZ)) FROM read_parquet('{loc}/files/*.parquet') "
        "WHERE column_name = 'ts'"
    ).fetchall()[0][0]
    assert ts == 1577836800000001
    day = duckdb.sql(
        f"SELECT CAST(min_value AS DATE) FROM read_parquet('{loc}/files/*.parquet') WHERE column_name = 'day'"
    ).fetchall()[0][0]
    assert day == dt.date(1995, 3, 15)
    f = duckdb.sql(
        f"SELECT CAST(max_value AS DOUBLE) FROM read_parquet('{loc}/files/*.parquet') WHERE column_name = 'f'"
    ).fetchall()[0][0]
    assert f == 1e300


def test_snapshot_feeds_metrics_directly(loc):
    from airflow_zorder.core.policy import metrics

    rows = stats_rows({f"/t/{i}": (i * 10, i * 10 + 9) for i in range(8)})
    no_columns = stats_schema.file_stats_table(  # the placeholder row of a file without column rows
        {
            "snapshot_id": [0],
            "table_name": ["t"],
            "path": ["/t/empty"],
            "has_stats": [False],
            "collected_at": [dt.datetime(2026, 1, 1, tzinfo=UTC)],
        },
        1,
    )
    stats_store.write_snapshot(loc, pa.concat_tables([rows, no_columns]), run_record("r1"))
    t = stats_store.load_latest(loc)
    assert t.schema.remove_metadata().equals(FILE_STATS_SCHEMA.remove_metadata()) and t.num_rows == 9
    summary = metrics.table_clustering(t, ["x"])
    assert summary["num_files"] == 8
    assert summary["per_column"]["x"]["average_depth"] == pytest.approx(1.0)


def test_order_keys_vectorised_matches_scalar():
    rng = np.random.default_rng(3)
    vals = rng.integers(-(10**15), 10**15, 200).tolist()
    arr = pa.array(vals, pa.int64())
    assert order_keys(arr).to_pylist() == [order_key(v, "int64") for v in vals]
    ts = pa.array(rng.integers(-6 * 10**16, 6 * 10**16, 50), pa.timestamp("us", tz="UTC"))
    assert order_keys(ts).to_pylist() == [order_key(v, ts.type) for v in ts.to_pylist()]


def test_store_keeps_the_runs_and_leaves_analytics_to_the_policy(loc):
    """Storage does not depend on analytics: the history's clustering figures come from core.policy.history."""
    import ast
    from pathlib import Path

    for mod in (stats_store, stats_schema):
        tree = ast.parse(Path(mod.__file__).read_text(encoding="utf-8"))
        imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert not {m for m in imported if m.startswith("airflow_zorder.core.policy")}, mod.__name__
    stats_store.write_snapshot(loc, stats_rows({"/t/a": (1, 2)}), run_record("r1"))
    runs = stats_store.load_history(loc)
    assert runs.equals(stats_store.load_runs(loc)) and "headline" not in runs.column_names
    assert history.clustering_history(loc).equals(runs)  # no columns: the runs as they are
