"""core.delta.delta_log: per-file stats rows of real Delta tables (written by ``deltalake``) read from their log,
checked against the footer reader on the same files and against pyarrow's own min/max/null counts."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import time
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from airflow_zorder.core.delta import delta_log
from airflow_zorder.core.errors import DeltaLogError
from airflow_zorder.core.policy import metrics, point_queries
from airflow_zorder.core.skipping import pruning
from airflow_zorder.core.skipping.predicates import col
from airflow_zorder.core.stats import footer_stats, stats_schema, value_order

deltalake = pytest.importorskip("deltalake")
from deltalake import DeltaTable, write_deltalake  # noqa: E402 - after the importorskip

UTC = dt.UTC
COLUMNS = ["i64", "i32", "f64", "day", "ts", "ts_ntz", "s", "dec", "flag"]


def _file_data(seed: int, rows: int = 50) -> pa.Table:
    """One file's worth: every type the brief names, with nulls, NaN and signed zeros (millisecond timestamps)."""
    rng = np.random.default_rng(seed)

    def nulls(values: list) -> list:
        return [None if rng.random() < 0.1 else v for v in values]

    f = rng.normal(0, 1e3, rows)
    f[:3] = [np.nan, 0.0, -0.0]
    base = dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(days=int(seed) * 40)
    ms = rng.integers(-(10**10), 10**10, rows)
    words = [
        "".join(chr(c) for c in rng.integers(0x61, 0x7B, rng.integers(0, 20))) + ("\u00e9" if i % 5 else "")
        for i in range(rows)
    ]
    return pa.table(
        {
            "i64": pa.array(nulls(rng.integers(-(10**15), 10**15, rows).tolist()), pa.int64()),
            "i32": pa.array(nulls(rng.integers(-(2**31), 2**31, rows).tolist()), pa.int32()),
            "f64": pa.array(nulls(f.tolist()), pa.float64()),
            "day": pa.array(
                nulls([dt.date(1960, 1, 1) + dt.timedelta(days=int(d)) for d in rng.integers(0, 40000, rows)]),
                pa.date32(),
            ),
            "ts": pa.array(nulls([base + dt.timedelta(milliseconds=int(m)) for m in ms]), pa.timestamp("us", "UTC")),
            "ts_ntz": pa.array(
                nulls([(base + dt.timedelta(milliseconds=int(m))).replace(tzinfo=None) for m in ms]), pa.timestamp("us")
            ),
            "s": pa.array(nulls(words), pa.string()),
            "dec": pa.array(
                nulls([Decimal(int(v)).scaleb(-3) for v in rng.integers(-(10**11), 10**11, rows)]), pa.decimal128(12, 3)
            ),
            "flag": pa.array(nulls((rng.random(rows) < 0.5).tolist()), pa.bool_()),
        }
    )


def _by_key(t: pa.Table) -> dict[tuple[str, str], dict]:
    return {(r["path"], r["column_name"]): r for r in t.to_pylist()}


def _pyarrow_min_max(values: pa.ChunkedArray) -> tuple[object, object, int]:
    """min, max (NaN excluded, as Parquet and Delta keep them) and null count, computed by pyarrow."""
    arr = values.combine_chunks()
    valid = pc.drop_null(arr)
    if pa.types.is_floating(arr.type):
        valid = valid.filter(pc.invert(pc.is_nan(valid)))
    mm = pc.min_max(valid)
    return mm["min"].as_py(), mm["max"].as_py(), arr.null_count


@pytest.fixture()
def table(tmp_path: Path) -> Path:
    root = tmp_path / "events"
    for seed in range(3):  # three commits, one file each
        write_deltalake(str(root), _file_data(seed), mode="append")
    return root


def test_rows_equal_the_footer_path_and_pyarrows_values(table):
    rows = delta_log.snapshot_rows(str(table))
    assert rows.schema.remove_metadata().equals(stats_schema.FILE_STATS_SCHEMA.remove_metadata())
    live = sorted(DeltaTable(str(table)).file_uris())
    assert sorted(set(rows["path"].to_pylist())) == live and len(live) == 3
    assert sorted(set(rows["column_name"].to_pylist())) == sorted(COLUMNS)
    assert set(rows["method"].to_pylist()) == {"delta_log"} and set(rows["snapshot_id"].to_pylist()) == {2}

    mine = _by_key(rows)
    footer = _by_key(footer_stats.read_footers(live, COLUMNS))
    assert mine.keys() == footer.keys()
    for key, f in footer.items():
        m = mine[key]
        for field in ("arrow_type", "min_value", "null_count", "value_count", "has_stats", "file_rows", "file_size"):
            assert m[field] == f[field], (key, field, m[field], f[field])
        if key[1] in ("ts", "ts_ntz"):  # the log keeps milliseconds: the max is widened by 999 us
            ty = value_order.parse_arrow_type(f["arrow_type"])
            fmax, mmax = (
                value_order.decode_bounds(pa.array([v]), ty)[0].value for v in (f["max_value"], m["max_value"])
            )
            assert mmax == fmax + 999 and m["max_exact"] is False
        else:
            assert m["max_value"] == f["max_value"], (key, m["max_value"], f["max_value"])
            assert m["min_exact"] is m["max_exact"] is True

    # and what pyarrow computes from the data itself
    for path in live:
        data = pq.read_table(path)
        for c in COLUMNS:
            lo, hi, nulls = _pyarrow_min_max(data[c])
            sel = rows.filter(pc.and_(pc.equal(rows["path"], path), pc.equal(rows["column_name"], c)))
            mins, maxs, has = stats_schema.column_bounds(sel, c)
            assert has.tolist() == [True] and sel["null_count"].to_pylist() == [nulls], (path, c)
            assert sel["value_count"].to_pylist() == [data.num_rows]
            got_lo, got_hi = mins[0].as_py(), maxs[0].as_py()
            if c in ("ts", "ts_ntz"):
                assert got_lo == lo and hi <= got_hi < hi + dt.timedelta(milliseconds=1)
            else:
                assert (got_lo, got_hi) == (lo, hi), (path, c)


def test_microsecond_timestamps_are_bounded_from_millisecond_stats(tmp_path):
    root = tmp_path / "ts"
    values = [
        dt.datetime(1969, 12, 31, 23, 59, 59, 999_501, tzinfo=UTC),  # before the epoch, sub-ms digits
        dt.datetime(2020, 1, 1, 1, 2, 3, 456_789, tzinfo=UTC),
        dt.datetime(2020, 1, 1, 1, 2, 3, 456_001, tzinfo=UTC),
    ]
    write_deltalake(str(root), pa.table({"ts": pa.array(values, pa.timestamp("us", "UTC"))}))
    rows = delta_log.snapshot_rows(str(root))
    assert rows["min_value"].to_pylist() == ["1969-12-31 23:59:59.999000Z"]  # Delta's millisecond floor
    assert rows["max_value"].to_pylist() == ["2020-01-01 01:02:03.456999Z"]  # .456 widened by 999 us
    assert rows["min_exact"].to_pylist() == [None] and rows["max_exact"].to_pylist() == [False]
    mins, maxs, has = stats_schema.column_bounds(rows, "ts")
    assert has.all() and mins[0].as_py() <= min(values) and max(values) <= maxs[0].as_py()
    stats = rows
    for v in values:  # a point query on any value the file holds keeps the file
        assert pruning.prune(stats, col("ts") == v).keep.tolist() == [True]
    assert pruning.prune(stats, col("ts") == dt.datetime(2020, 1, 1, 1, 2, 3, 457_000, tzinfo=UTC)).keep.tolist() == [
        False
    ]


def test_removed_files_stay_out_though_they_are_still_on_disk(tmp_path):
    root = tmp_path / "t"
    write_deltalake(str(root), pa.table({"a": list(range(100)), "b": list(range(100))}))
    write_deltalake(str(root), pa.table({"a": [500, 501], "b": [1, 2]}), mode="append")
    DeltaTable(str(root)).delete("a >= 500")  # removes the appended file
    write_deltalake(str(root), pa.table({"a": [7, 8, 9], "b": [1, 1, 1]}), mode="append")
    on_disk = footer_stats.list_parquet_files(str(root))
    live = sorted(DeltaTable(str(root)).file_uris())
    assert len(on_disk) == 3 and len(live) == 2 and set(live) < set(on_disk)  # one removed, not vacuumed
    rows = delta_log.snapshot_rows(str(root), columns=["a"])
    assert sorted(rows["path"].to_pylist()) == live
    mins, maxs, _ = stats_schema.column_bounds(rows, "a")
    assert sorted(zip(mins.to_pylist(), maxs.to_pylist())) == [(0, 99), (7, 9)]  # not 500..501
    write_deltalake(str(root), pa.table({"a": [1], "b": [1]}), mode="overwrite")
    rows = delta_log.snapshot_rows(str(root))
    assert rows.num_rows == 2 and set(rows["path"].to_pylist()) == set(DeltaTable(str(root)).file_uris())
    assert all(Path(p).exists() for p in on_disk)  # every removed file is still there


def test_partition_values_come_from_the_log(tmp_path):
    root = tmp_path / "parts"
    data = pa.table(
        {
            "k": pa.array(["a b", "x:y/z=1%", None, "x:y/z=1%"]),
            "n": pa.array([1, 2, None, 2]),
            "v": pa.array([1.5, 2.5, 3.5, 4.5]),
        }
    )
    write_deltalake(str(root), data, partition_by=["k", "n"])
    rows = delta_log.snapshot_rows(str(root))
    assert set(rows["column_name"].to_pylist()) == {"v"}  # partition columns are not in the files
    got = sorted(
        (r["partition"], tuple(r["partition_values"]), r["min_value"], r["max_value"], r["file_rows"])
        for r in rows.to_pylist()
    )
    assert got == [
        ("k=__HIVE_DEFAULT_PARTITION__/n=__HIVE_DEFAULT_PARTITION__", (("k", None), ("n", None)), "3.5", "3.5", 1),
        ("k=a b/n=1", (("k", "a b"), ("n", "1")), "1.5", "1.5", 1),
        ("k=x%3Ay%2Fz%3D1%25/n=2", (("k", "x:y/z=1%"), ("n", "2")), "2.5", "4.5", 2),
    ]
    assert all(Path(p).is_file() for p in rows["path"].to_pylist())  # the log's paths, URI-decoded
    summary = metrics.table_clustering(rows, ["v"])
    assert sorted(summary["partitions"]) == sorted(r[0] for r in got)


def _spark_style_table(root: Path, values: list[str]) -> None:
    """A Delta table whose one file's string stats are truncated as (older) Delta Spark writes them: a 32-char
    prefix as the min, the prefix plus a U+FFFD tie-breaker as the max (committed with delta-rs)."""
    from deltalake.transaction import AddAction

    schema = pa.schema([("s", pa.string()), ("k", pa.int64())])
    dt_ = DeltaTable.create(str(root), schema=schema)
    pq.write_table(pa.table({"s": values, "k": list(range(len(values)))}, schema=schema), root / "part-0.parquet")
    lo, hi = min(values), max(values)
    stats = {
        "numRecords": len(values),
        "nullCount": {"s": 0, "k": 0},
        "minValues": {"s": lo[:32], "k": 0},
        "maxValues": {"s": hi[:32] + "\ufffd", "k": len(values) - 1},
    }
    dt_.create_write_transaction(
        [
            AddAction(
                "part-0.parquet",
                (root / "part-0.parquet").stat().st_size,
                {},
                int(time.time() * 1000),
                True,
                json.dumps(stats),
            )
        ],
        mode="append",
        schema=schema,
    )


def test_truncated_strings_are_inexact_bounds_and_never_prune_a_file_holding_the_value(tmp_path):
    prefix = "k" * 32
    values = [prefix + "a", prefix + "\U0001f600", prefix + "zzz", "k" * 31]  # U+1F600 sorts above U+FFFD in UTF-8
    _spark_style_table(tmp_path / "spark", values)
    raw = pa.table(DeltaTable(str(tmp_path / "spark")).get_add_actions(flatten=True))
    assert raw["max.s"].to_pylist() == [prefix + "\ufffd"] < [max(values)]  # the log's max is below a value
    rows = delta_log.snapshot_rows(str(tmp_path / "spark"), columns=["s"])
    assert rows["min_exact"].to_pylist() == [True]  # "k" * 31: shorter than the prefix, exact
    assert rows["max_exact"].to_pylist() == [False] and rows["max_value"].to_pylist() == ["k" * 31 + "l"]
    stats = rows
    for v in values:
        assert pruning.prune(stats, col("s") == v).keep.tolist() == [True], v
        assert pruning.prune(stats, col("s") >= v).keep.tolist() == [True], v
    assert pruning.prune(stats, col("s") == "l").keep.tolist() == [False]  # still a bound
    mins, maxs, has = stats_schema.column_bounds(rows, "s")
    assert has.all() and point_queries.point_query_fractions(mins, maxs, has, pa.array(values)).tolist() == [1.0] * 4

    # delta-rs itself: parquet-rs's 64-byte statistics, copied into the log
    long = ["m" * 100, "m" * 63 + "\u4e2d" * 5, "\U0001f600" * 20, "short"]
    write_deltalake(str(tmp_path / "rs"), pa.table({"s": long}))
    rows = delta_log.snapshot_rows(str(tmp_path / "rs"))
    assert rows["min_value"].to_pylist() == ["m" * 64]  # a prefix: still a lower bound
    assert rows["min_exact"].to_pylist() == rows["max_exact"].to_pylist() == [False]
    stats = rows
    assert all(pruning.prune(stats, col("s") == v).keep.tolist() == [True] for v in long)


def test_string_upper_bound():
    assert delta_log.string_upper_bound("abc") == "abd"
    assert delta_log.string_upper_bound("ab\ufffd\ufffd") == "ac"
    assert delta_log.string_upper_bound("a\ud7ff".encode("utf-16", "surrogatepass").decode("utf-16")) == "a\ue000"
    assert delta_log.string_upper_bound("a\U0010ffff") == "b"
    assert delta_log.string_upper_bound("\ufffd") is None


def test_columns_beyond_the_indexed_ones_have_no_stats_and_may_match(tmp_path):
    root = tmp_path / "wide"
    data = pa.table({f"c{i}": pa.array([i, i + 10], pa.int64()) for i in range(4)} | {"blob": [b"x", b"y"]})
    write_deltalake(str(root), data, configuration={"delta.dataSkippingNumIndexedCols": "2"})
    write_deltalake(str(root), data, mode="append")
    rows = delta_log.snapshot_rows(str(root))
    by_col = {c: rows.filter(pc.equal(rows["column_name"], c)) for c in data.column_names}
    for c in ("c0", "c1"):
        assert by_col[c]["has_stats"].to_pylist() == [True, True]
    for c in ("c2", "c3", "blob"):
        assert by_col[c]["has_stats"].to_pylist() == [False, False]
        assert set(by_col[c]["reason"].to_pylist()) == {"not_in_delta_stats"}
    stats = rows
    assert pruning.prune(stats, col("c0") == 1000).keep.tolist() == [False, False]
    assert pruning.prune(stats, col("c2") == 1000).keep.tolist() == [True, True]  # unknown: may match
    c2 = metrics.table_clustering(stats, ["c2"])["per_column"]["c2"]
    assert c2["files_without_stats"] == 2 and c2["expected_fraction"] == 1.0


def test_all_null_and_nested_columns_as_the_footer_reader_has_them(tmp_path):
    root = tmp_path / "nulls"
    data = pa.table({"a": [1, None], "s": pa.array([None, None], pa.string()), "st": [{"x": 1}, None]})
    write_deltalake(str(root), data)
    rows = {r["column_name"]: r for r in delta_log.snapshot_rows(str(root)).to_pylist()}
    footer = {
        r["column_name"]: r
        for r in footer_stats.read_footers(DeltaTable(str(root)).file_uris(), ["a", "s", "st"]).to_pylist()
    }
    for c in ("a", "s", "st"):  # all-null: stats without bounds (never matches c = v); nested: no stats
        got = (rows[c]["has_stats"], rows[c]["min_value"], rows[c]["max_value"])
        assert got == (footer[c]["has_stats"], footer[c]["min_value"], footer[c]["max_value"]), c
    assert rows["s"]["null_count"] == 2 and rows["st"]["reason"] == footer["st"]["reason"] == "nested_column"
    stats = delta_log.snapshot_rows(str(root))
    assert pruning.prune(stats, col("s") == "x").keep.tolist() == [False]
    assert pruning.prune(stats, col("s").is_null()).keep.tolist() == [True]


def test_time_travel_reads_the_version_asked_for(tmp_path):
    root = tmp_path / "tt"
    write_deltalake(str(root), pa.table({"a": [1, 2]}))
    time.sleep(0.01)
    write_deltalake(str(root), pa.table({"a": [3, 4]}), mode="append")
    time.sleep(0.01)
    write_deltalake(str(root), pa.table({"a": [5]}), mode="overwrite")
    commits = {h["version"]: h["timestamp"] for h in DeltaTable(str(root)).history()}
    assert delta_log.latest_version(str(root)) == 2
    for v in (0, 1, 2):
        rows = delta_log.snapshot_rows(str(root), version=v)
        assert sorted(rows["path"].to_pylist()) == sorted(DeltaTable(str(root), version=v).file_uris())
        assert set(rows["snapshot_id"].to_pylist()) == {v}
        assert {t.timestamp() * 1000 for t in rows["collected_at"].to_pylist()} == {commits[v]}
        assert delta_log.commit_time(str(root), version=v) == dt.datetime.fromtimestamp(commits[v] / 1000, UTC)
        run = json.loads(rows.schema.metadata[stats_schema.RUN_METADATA_KEY])
        assert run["snapshot_id"] == v and run["method"] == "delta_log"
    assert sorted(delta_log.snapshot_rows(str(root), version=1)["max_value"].to_pylist()) == ["2", "4"]
    assert delta_log.snapshot_rows(str(root))["max_value"].to_pylist() == ["5"]


def test_the_log_is_refreshed_incrementally(tmp_path):
    root = tmp_path / "inc"
    write_deltalake(str(root), pa.table({"a": [1]}))
    log = delta_log.DeltaLog(str(root), table_name="events")
    assert log.refresh() == 0 and log.snapshot()["table_name"].to_pylist() == ["events"]
    write_deltalake(str(root), pa.table({"a": [2]}), mode="append")
    assert log.latest_version() == 1 and log.snapshot().num_rows == 2
    run = log.run_record()
    assert run["snapshot_id"] == 1 and run["collected_at"] >= run["committed_at"]


def test_wide_decimals_are_widened_or_missing(tmp_path):
    root = tmp_path / "dec"
    values = [Decimal("1.5"), Decimal("2.123456789012345678")]
    data = pa.table(
        {
            "d38": pa.array(values, pa.decimal128(38, 18)),
            "d20": pa.array([Decimal("123456789012345678.91"), Decimal("-1.00")], pa.decimal128(20, 2)),
        }
    )
    write_deltalake(str(root), data)
    rows = delta_log.snapshot_rows(str(root))
    d38 = rows.filter(pc.equal(rows["column_name"], "d38"))
    mins, maxs, has = stats_schema.column_bounds(d38, "d38")
    assert has.all() and mins[0].as_py() <= min(values) and max(values) <= maxs[0].as_py()
    assert d38["min_exact"].to_pylist() == d38["max_exact"].to_pylist() == [False]
    assert maxs[0].as_py() - max(values) < Decimal("1e-15")
    d20 = rows.filter(pc.equal(rows["column_name"], "d20")).to_pylist()[0]
    if d20["has_stats"]:  # delta-rs 1.6 cannot read these back from its own doubles: missing, never wrong
        lo, hi = (Decimal(d20["min_value"]), Decimal(d20["max_value"]))
        assert lo <= Decimal("-1.00") and Decimal("123456789012345678.91") <= hi
    else:
        assert d20["reason"] == "not_in_delta_stats"


def test_storage_options_from_the_pyarrow_options_of_a_connection():
    opts = {
        "access_key": "AK",
        "secret_key": "SK",
        "session_token": "TOK",
        "region": "eu-west-1",
        "endpoint_override": "127.0.0.1:5000",
        "scheme": "http",
    }
    assert delta_log.delta_storage_options(opts) == {
        "AWS_ACCESS_KEY_ID": "AK",
        "AWS_SECRET_ACCESS_KEY": "SK",
        "AWS_SESSION_TOKEN": "TOK",
        "AWS_REGION": "eu-west-1",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:5000",
        "AWS_ALLOW_HTTP": "true",
        "aws_conditional_put": "etag",  # commits are conditional PUTs (If-None-Match: *), whatever the environment says
    }
    assert delta_log.delta_storage_options(
        {"region": "us-east-1", "endpoint_override": "s3.example.com", "scheme": "https"}
    ) == {"AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": "https://s3.example.com", "aws_conditional_put": "etag"}
    assert delta_log.delta_storage_options({}) is None and delta_log.delta_storage_options(None) is None
    assert delta_log.table_uri("s3a://lake/t") == "s3://lake/t"
    assert delta_log.table_uri("file:///data/t") == "/data/t"


def test_a_missing_deltalake_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "deltalake", None)
    with pytest.raises(ImportError, match=r"pip install 'airflow-zorder\[delta\]'"):
        delta_log.snapshot_rows(str(tmp_path))


def test_an_unreadable_log_is_a_clear_error(tmp_path):
    (tmp_path / "nothing" / "_delta_log").mkdir(parents=True)
    with pytest.raises(DeltaLogError, match=r"cannot read the Delta log of .*nothing"):
        delta_log.snapshot_rows(str(tmp_path / "nothing"))
    assert isinstance(DeltaLogError("x"), OSError)
    assert os.listdir(tmp_path / "nothing" / "_delta_log") == []
