"""Tests for airflow_zorder.core.stats.footer_stats against exact values from pyarrow.compute."""

from __future__ import annotations

import datetime as dt
import math
import shutil
import struct
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyarrow import fs as pafs

from airflow_zorder.core.stats import footer_stats as fst
from airflow_zorder.core.stats import parquet_footer
from airflow_zorder.core.stats.footer_stats import (
    column_bounds,
    list_parquet_files,
    partition_of,
    read_footers,
    read_footers_parallel,
)
from airflow_zorder.core.stats.stats_schema import FILE_STATS_SCHEMA
from airflow_zorder.core.stats.value_order import parse_arrow_type
from airflow_zorder.core.storage.locations import parse_partition_path

ROWS = 300
ROW_GROUP = 64  # -> 5 row groups per file


def _with_nulls(rng: np.random.Generator, values: list, frac: float = 0.1) -> list:
    return [None if rng.random() < frac else v for v in values]


def _make_table(seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = ROWS
    ints = rng.integers(-(10**12), 10**12, n)
    floats = rng.normal(0, 1e6, n)
    floats[rng.random(n) < 0.05] = np.nan
    floats[rng.random(n) < 0.02] = 0.0
    floats[rng.random(n) < 0.02] = -0.0
    words = ["".join(chr(c) for c in rng.integers(0x20, 0x7E, rng.integers(0, 150))) for _ in range(n)]
    words = [w + ("\u00e9\u4e2d" if i % 7 == 0 else "") for i, w in enumerate(words)]
    # a row group's worth of strings share a long common prefix: long min/max values
    words = [("p" * 100 + w) if i % 3 == 0 else w for i, w in enumerate(words)]
    blobs = [bytes(rng.integers(0, 256, rng.integers(0, 90)).astype(np.uint8)) for _ in range(n)]
    cols = {
        "i8": pa.array(_with_nulls(rng, rng.integers(-128, 128, n).tolist()), pa.int8()),
        "i32": pa.array(_with_nulls(rng, rng.integers(-(2**31), 2**31, n).tolist()), pa.int32()),
        "i64": pa.array(_with_nulls(rng, ints.tolist()), pa.int64()),
        "u64": pa.array(_with_nulls(rng, rng.integers(0, 2**64, n, dtype=np.uint64).tolist()), pa.uint64()),
        "f32": pa.array(_with_nulls(rng, floats.astype(np.float32).tolist()), pa.float32()),
        "f64": pa.array(_with_nulls(rng, floats.tolist()), pa.float64()),
        "dec_small": pa.array(
            _with_nulls(rng, [Decimal(int(x)).scaleb(-2) for x in rng.integers(-99999, 99999, n)]), pa.decimal128(5, 2)
        ),
        "dec_big": pa.array(
            _with_nulls(rng, [Decimal(int(x)).scaleb(-10) for x in ints * 10**6]), pa.decimal128(38, 10)
        ),
        "date": pa.array(
            _with_nulls(rng, [dt.date(1900, 1, 1) + dt.timedelta(days=int(d)) for d in rng.integers(0, 70000, n)]),
            pa.date32(),
        ),
        # pre- and post-epoch, microsecond precision
        "ts_us": pa.array(_with_nulls(rng, rng.integers(-2 * 10**15, 4 * 10**15, n).tolist()), pa.timestamp("us")),
        "ts_utc": pa.array(
            _with_nulls(rng, rng.integers(-2 * 10**15, 4 * 10**15, n).tolist()), pa.timestamp("us", "UTC")
        ),
        "ts_ns": pa.array(_with_nulls(rng, rng.integers(-(10**18), 10**18, n).tolist()), pa.timestamp("ns")),
        "t_us": pa.array(_with_nulls(rng, rng.integers(0, 86400 * 10**6, n).tolist()), pa.time64("us")),
        "s": pa.array(_with_nulls(rng, words), pa.string()),
        "ls": pa.array(_with_nulls(rng, words), pa.large_string()),
        "b": pa.array(_with_nulls(rng, blobs), pa.binary()),
        "flag": pa.array(_with_nulls(rng, (rng.random(n) < 0.5).tolist()), pa.bool_()),
        "all_null": pa.array([None] * n, pa.int64()),
    }
    return pa.table(cols)


TYPED_COLUMNS = [c for c in _make_table(0).column_names]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    d = tmp_path_factory.mktemp("footers")
    out = []
    for i in range(4):
        p = d / f"part-{i}.parquet"
        pq.write_table(_make_table(100 + i), p, row_group_size=ROW_GROUP)
        out.append(p)
    # a file whose decimals are stored as INT32/INT64 (like Spark and tpchgen do)
    p = d / "part-int-decimals.parquet"
    pq.write_table(_make_table(200), p, row_group_size=ROW_GROUP, store_decimal_as_integer=True)
    out.append(p)
    return out


def _exact(values: pa.ChunkedArray) -> tuple:
    arr = values.combine_chunks()
    if pa.types.is_floating(arr.type):
        arr = pc.filter(arr, pc.invert(pc.fill_null(pc.is_nan(arr), False)))  # Parquet bounds exclude NaN
    if pa.types.is_large_string(arr.type):
        arr = arr.cast(pa.string())
    if pa.types.is_time64(arr.type):
        arr = arr.view(pa.int64())
    mm = pc.min_max(arr)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    return lo, hi, values.null_count


def test_stats_equal_exact_values_for_every_type(files: list[Path]) -> None:
    table = read_footers(files, TYPED_COLUMNS)
    assert table.schema == FILE_STATS_SCHEMA
    assert table.num_rows == len(files) * len(TYPED_COLUMNS)
    for col in TYPED_COLUMNS:
        mins, maxs, has = column_bounds(table, col)
        rows = table.filter(pc.equal(table["column_name"], col)).to_pylist()
        for k, path in enumerate(files):
            data = pq.read_table(path, columns=[col])[col]
            lo, hi, nulls = _exact(data)
            row = rows[k]
            assert row["path"] == str(path)
            assert row["null_count"] == nulls, col
            assert row["value_count"] == ROWS
            assert row["file_rows"] == ROWS
            assert row["num_row_groups"] == math.ceil(ROWS / ROW_GROUP)
            assert row["file_size"] == path.stat().st_size
            if col == "all_null":
                assert has[k] and row["has_stats"] and row["min_value"] is None and row["max_value"] is None
                assert mins[k].as_py() is None and maxs[k].as_py() is None
                continue
            assert has[k], (col, row["reason"])
            got_lo, got_hi = mins[k].as_py(), maxs[k].as_py()
            if col == "t_us":
                got_lo, got_hi = mins.view(pa.int64())[k].as_py(), maxs.view(pa.int64())[k].as_py()
            assert got_lo == lo, (col, got_lo, lo)
            assert got_hi == hi, (col, got_hi, hi)
            assert row["min_exact"] is True and row["max_exact"] is True


def test_typed_arrays_have_logical_types(files: list[Path]) -> None:
    table = read_footers(files[:1], TYPED_COLUMNS)
    expected = {
        "i8": pa.int8(),
        "i32": pa.int32(),
        "i64": pa.int64(),
        "u64": pa.uint64(),
        "f32": pa.float32(),
        "f64": pa.float64(),
        "dec_small": pa.decimal128(5, 2),
        "dec_big": pa.decimal128(38, 10),
        "date": pa.date32(),
        "ts_us": pa.timestamp("us"),
        "ts_utc": pa.timestamp("us", "UTC"),
        "ts_ns": pa.timestamp("ns"),
        "t_us": pa.time64("us"),
        "s": pa.string(),
        "ls": pa.string(),
        "b": pa.binary(),
        "flag": pa.bool_(),
    }
    for col, t in expected.items():
        mins, maxs, _ = column_bounds(table, col)
        assert mins.type == t and maxs.type == t, col
        assert parse_arrow_type(table.filter(pc.equal(table["column_name"], col))["arrow_type"][0].as_py()) == t


def test_bounds_from_files_equal_bounds_from_table(files: list[Path]) -> None:
    table = read_footers(files, TYPED_COLUMNS)
    for col in TYPED_COLUMNS:
        a = column_bounds(table, col)
        b = column_bounds([str(p) for p in files], col)
        assert a[0].equals(b[0]) and a[1].equals(b[1]) and (a[2] == b[2]).all(), col


def test_float_zero_sign_normalised(tmp_path: Path) -> None:
    p = tmp_path / "z.parquet"
    pq.write_table(pa.table({"x": pa.array([0.0, 1.0]), "y": pa.array([-1.0, -0.0])}), p)
    t = read_footers([p], ["x", "y"])
    (xl, xh, _), (yl, yh, _) = column_bounds(t, "x"), column_bounds(t, "y")
    # Parquet spec: a zero min may hide -0.0 and a zero max may hide +0.0
    assert math.copysign(1, xl[0].as_py()) == -1 and xh[0].as_py() == 1.0
    assert yl[0].as_py() == -1.0 and math.copysign(1, yh[0].as_py()) == 1


def test_all_nan_row_group_makes_file_stats_missing(tmp_path: Path) -> None:
    # row group 0: numbers; row group 1: only NaN -> no min/max there -> the whole file is unknown
    p = tmp_path / "nan.parquet"
    pq.write_table(pa.table({"x": pa.array([1.0, 2.0, math.nan, math.nan])}), p, row_group_size=2)
    row = read_footers([p], ["x"]).to_pylist()[0]
    assert row["has_stats"] is False and row["min_value"] is None and row["max_value"] is None
    assert row["reason"] == "row_group_without_min_max"
    mins, maxs, has = column_bounds([p], "x")
    assert not has[0] and mins[0].as_py() is None


def test_all_null_row_group_does_not_hide_other_row_groups(tmp_path: Path) -> None:
    p = tmp_path / "nullrg.parquet"
    pq.write_table(pa.table({"x": pa.array([None, None, 5, 3], pa.int64())}), p, row_group_size=2)
    row = read_footers([p], ["x"]).to_pylist()[0]
    assert row["has_stats"] and row["min_value"] == "3" and row["max_value"] == "5" and row["null_count"] == 2


def test_no_statistics_written(tmp_path: Path) -> None:
    p = tmp_path / "nostats.parquet"
    pq.write_table(pa.table({"x": [1, 2], "y": [3, 4]}), p, write_statistics=["y"])
    rows = {r["column_name"]: r for r in read_footers([p], ["x", "y"]).to_pylist()}
    assert rows["x"]["has_stats"] is False and rows["x"]["min_value"] is None
    assert rows["x"]["reason"] == "row_group_without_stats"
    assert rows["y"]["has_stats"] and rows["y"]["min_value"] == "3"


def test_int96_timestamps_are_missing(tmp_path: Path) -> None:
    p = tmp_path / "int96.parquet"
    t = pa.table({"ts": pa.array([1, 2, 3], pa.timestamp("us")), "k": [1, 2, 3]})
    pq.write_table(t, p, use_deprecated_int96_timestamps=True)
    rows = {r["column_name"]: r for r in read_footers([p], ["ts", "k"]).to_pylist()}
    assert rows["ts"]["physical_type"] == "INT96"
    assert rows["ts"]["has_stats"] is False and rows["ts"]["reason"] == "int96"
    assert rows["ts"]["min_value"] is None
    assert rows["k"]["has_stats"]


def test_huge_strings_dropped_by_pyarrow_are_missing_not_guessed(tmp_path: Path) -> None:
    # parquet-cpp does not truncate: it drops min/max above 4096 bytes
    p = tmp_path / "huge.parquet"
    pq.write_table(pa.table({"s": ["a" * 5000, "b"]}), p)
    row = read_footers([p], ["s"]).to_pylist()[0]
    assert row["has_stats"] is False and row["min_value"] is None


def test_long_strings_from_pyarrow_are_exact(tmp_path: Path) -> None:
    vals = ["m" * 200 + "a", "m" * 200 + "z", "m" * 65]
    p = tmp_path / "long.parquet"
    pq.write_table(pa.table({"s": vals}), p)
    row = read_footers([p], ["s"]).to_pylist()[0]
    assert row["min_value"] == min(vals) and row["max_value"] == max(vals)
    assert row["min_exact"] is True and row["max_exact"] is True


def _tpchgen() -> str | None:
    cand = Path(sys.executable).parent / "tpchgen-cli"
    return str(cand) if cand.exists() else shutil.which("tpchgen-cli")


@pytest.mark.skipif(_tpchgen() is None, reason="tpchgen-cli not installed")
def test_truncated_parquet_rs_statistics_are_flagged(tmp_path: Path) -> None:
    """parquet-rs (tpchgen-cli) truncates byte-array stats to 64 bytes and says so in the footer."""
    subprocess.run(
        [_tpchgen(), "parquet", "-s", "0.01", "--tables=customer,supplier", f"--output-dir={tmp_path}", "--quiet"],
        check=True,
    )
    paths = [tmp_path / "customer.parquet", tmp_path / "supplier.parquet"]
    cols = {"customer.parquet": "c_comment", "supplier.parquet": "s_comment"}
    saw_inexact = False
    for p in paths:
        col = cols[p.name]
        row = read_footers([p], [col]).to_pylist()[0]
        assert row["created_by"].startswith("parquet-rs")
        exact_lo, exact_hi, _ = _exact(pq.read_table(p, columns=[col])[col].cast(pa.string()))
        assert row["has_stats"]
        # whatever the flags say, the bounds must be valid bounds ...
        assert row["min_value"] <= exact_lo and row["max_value"] >= exact_hi
        # ... and a bound that differs from the exact value must not be reported exact
        assert row["min_exact"] is (row["min_value"] == exact_lo)
        assert row["max_exact"] is (row["max_value"] == exact_hi)
        saw_inexact |= not (row["min_exact"] and row["max_exact"])
        mins, maxs, has = column_bounds([p], col, exact_only=True)
        assert has[0] == bool(row["min_exact"] and row["max_exact"])
    assert saw_inexact, "expected tpchgen's >64-byte comments to be truncated"


def test_thrift_exact_flags_match_footer_shape(files: list[Path]) -> None:
    data = files[0].read_bytes()
    flen = struct.unpack("<I", data[-8:-4])[0]
    flags = parquet_footer.exact_flags(data[-8 - flen : -8])
    md = pq.ParquetFile(files[0]).metadata
    assert len(flags) == md.num_row_groups
    for r in range(md.num_row_groups):
        assert len(flags[r]) == md.num_columns
        for j in range(md.num_columns):
            s = md.row_group(r).column(j).statistics
            if s is not None and s.has_min_max:
                assert flags[r][j] == (True, True)  # parquet-cpp writes the flags, never truncates


def test_hive_partition_columns_are_skipped(tmp_path: Path) -> None:
    d = tmp_path / "tbl" / "dt=2024-01-01" / "city=New%20York"
    d.mkdir(parents=True)
    p = d / "part-0.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), p)
    (tmp_path / "tbl" / "_SUCCESS").write_text("")
    (tmp_path / "tbl" / "_delta_log").mkdir()
    pq.write_table(pa.table({"x": [1]}), tmp_path / "tbl" / "_delta_log" / "ignored.parquet")
    assert parse_partition_path(partition_of(str(p)), strict=False) == {"dt": "2024-01-01", "city": "New York"}
    assert list_parquet_files(str(tmp_path / "tbl")) == [str(p)]
    assert list_parquet_files(str(tmp_path / "tbl"), pafs.LocalFileSystem()) == [str(p)]
    t = read_footers([p], ["dt", "x", "nope"])
    rows = t.to_pylist()
    assert [r["column_name"] for r in rows] == ["x", "nope"]
    assert rows[0]["partition"] == "dt=2024-01-01/city=New%20York"
    assert rows[1]["has_stats"] is False and rows[1]["reason"] == "column_not_in_file"


def test_nested_columns_are_reported_not_guessed(tmp_path: Path) -> None:
    p = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"st": [{"a": 1}, {"a": 2}], "l": [[1], [2, 3]], "x": [1, 2]}), p)
    rows = {r["column_name"]: r for r in read_footers([p], ["st", "l", "x"]).to_pylist()}
    assert rows["st"]["reason"] == "nested_column" and not rows["st"]["has_stats"]
    assert rows["l"]["reason"] == "nested_column" and not rows["l"]["has_stats"]
    assert rows["x"]["has_stats"]


def test_parallel_and_filesystem_give_the_same_table(files: list[Path]) -> None:
    paths = [str(p) for p in files] * 5
    read_at = ["collected_at"]  # when the rows were read: the only field that differs between two reads
    seq = read_footers(paths, TYPED_COLUMNS).drop_columns(read_at)
    par = read_footers_parallel(paths, TYPED_COLUMNS, max_workers=4).drop_columns(read_at)
    assert par.equals(seq)
    viafs = read_footers_parallel(paths, TYPED_COLUMNS, max_workers=3, filesystem=pafs.LocalFileSystem())
    assert viafs.drop_columns(read_at).equals(seq)


def test_footer_rows_are_stats_table_rows(tmp_path: Path) -> None:
    """The reader emits the stats table's one row schema, stamped as footer rows of no snapshot yet."""
    d = tmp_path / "tbl" / "dt=2024-01-01"
    d.mkdir(parents=True)
    p = d / "part-0.parquet"
    pq.write_table(pa.table({"x": [1, 5]}), p)
    before = dt.datetime.now(dt.UTC)
    t = read_footers([p], ["x"])
    assert t.schema == FILE_STATS_SCHEMA
    row = t.to_pylist()[0]
    assert row["snapshot_id"] == 0 and row["table_name"] == "" and row["method"] == "footer"
    assert row["partition"] == "dt=2024-01-01" and row["partition_values"] == [("dt", "2024-01-01")]
    assert row["column_name"] == "x" and (row["min_value"], row["max_value"]) == ("1", "5")
    assert row["min_key"] is None and row["error"] is None and row["file_mtime_ms"] is None
    assert before - dt.timedelta(seconds=1) <= row["collected_at"] <= dt.datetime.now(dt.UTC)
    stamped = fst.rows_to_table(fst.read_file_footer(str(p), ["x"]), table_name="db.t", collected_at=before)
    assert stamped["table_name"].to_pylist() == ["db.t"] and stamped["collected_at"][0].as_py() == before


def test_unreadable_file(tmp_path: Path, files: list[Path]) -> None:
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet at all")
    with pytest.raises(ValueError):
        read_footers([bad], ["i64"])
    t = read_footers([files[0], bad], ["i64"], on_error="missing")
    rows = t.to_pylist()
    assert rows[0]["has_stats"] and rows[1]["has_stats"] is False
    assert rows[1]["reason"].startswith("unreadable_file")


def test_schema_evolution_widens_and_refuses_lossy_mixes(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a.parquet", tmp_path / "b.parquet", tmp_path / "c.parquet"
    pq.write_table(pa.table({"x": pa.array([1, 2], pa.int32())}), a)
    pq.write_table(pa.table({"x": pa.array([2**40, 2**41], pa.int64())}), b)
    pq.write_table(pa.table({"x": pa.array([0.5, 1.5])}), c)
    mins, maxs, has = column_bounds([a, b], "x")
    assert mins.type == pa.int64() and mins.to_pylist() == [1, 2**40] and maxs.to_pylist() == [2, 2**41]
    with pytest.raises(TypeError):
        column_bounds([a, c], "x")


def test_text_encoding_round_trips_extremes(tmp_path: Path) -> None:
    p = tmp_path / "ext.parquet"
    t = pa.table(
        {
            "f": pa.array([5e-324, 1.7976931348623157e308, 0.1]),
            "u": pa.array([0, 2**64 - 1], pa.uint64()).take([0, 1, 1]),
            "ts": pa.array([-(2**62), 0, 2**62], pa.timestamp("ns")),
            "d": pa.array([Decimal("-" + "9" * 38), Decimal(0), Decimal("9" * 38)], pa.decimal128(38, 0)),
            "b": pa.array([b"\x00", b"\xff" * 10, b""], pa.binary()),
        }
    )
    pq.write_table(t, p)
    table = read_footers([p], t.column_names)
    for col in t.column_names:
        mins, maxs, _ = column_bounds(table, col)
        mm = pc.min_max(t[col])
        assert mins[0].as_py() == mm["min"].as_py() and maxs[0].as_py() == mm["max"].as_py(), col


def test_parse_arrow_type_round_trip() -> None:
    for t in [
        pa.int8(),
        pa.uint64(),
        pa.float32(),
        pa.float64(),
        pa.bool_(),
        pa.date32(),
        pa.decimal128(5, 2),
        pa.decimal256(60, 3),
        pa.timestamp("us"),
        pa.timestamp("ms", "UTC"),
        pa.timestamp("ns", "Europe/Paris"),
        pa.time32("ms"),
        pa.time64("ns"),
        pa.string(),
        pa.binary(),
    ]:
        assert parse_arrow_type(str(t)) == t
    assert parse_arrow_type("large_string") == pa.string()
    with pytest.raises(ValueError):
        parse_arrow_type("list<item: int64>")


def test_a_large_key_value_metadata_is_left_out_of_the_parse_and_nothing_else(tmp_path):
    # Apache Hudi writes a ~430 KB bloom filter into every base file's key-value metadata
    from airflow_zorder.core.stats import parquet_footer

    path = str(tmp_path / "hudi_like.parquet")
    t = pa.table({"a": pa.array([3, 1, 2], pa.int64()), "s": ["x", "yy", None]})
    big = {b"org.apache.hudi.bloomfilter": b"\x01" * 400_000, b"hoodie_min_record_key": b"1"}
    pq.write_table(t.replace_schema_metadata(big), path)
    footer, _ = parquet_footer.read_footer_bytes(path, None)
    small = parquet_footer.drop_large_key_values(footer)
    assert len(footer) > 400_000 > 10_000 > len(small)
    parsed, full = parquet_footer.metadata_from_footer(footer), pq.read_metadata(path)
    assert parsed.metadata is None and full.metadata[b"hoodie_min_record_key"] == b"1"
    assert parsed.created_by == full.created_by and parsed.num_rows == full.num_rows
    for c in range(2):
        assert parsed.row_group(0).column(c).statistics == full.row_group(0).column(c).statistics
    assert parquet_footer.exact_flags(small) == parquet_footer.exact_flags(footer)
    assert parquet_footer.drop_large_key_values(small) == small  # a small one stays
