"""Per-file statistics of Iceberg tables read from their manifests (real tables in a pyiceberg SQL catalog)."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyiceberg")

from iceberg_tables import write_table  # noqa: E402

from airflow_zorder.core.iceberg import manifest_stats  # noqa: E402
from airflow_zorder.core.stats import stats_schema as ss  # noqa: E402


def _batch(lo: int, hi: int, day: str) -> pa.Table:
    ids = list(range(lo, hi))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "n": pa.array([i % 7 for i in ids], pa.int32()),
            "x": pa.array([i / 3 for i in ids], pa.float64()),
            "amount": pa.array([decimal.Decimal(i) / 100 for i in ids], pa.decimal128(10, 2)),
            "ts": pa.array([dt.datetime(2024, 1, 1) + dt.timedelta(minutes=i) for i in ids], pa.timestamp("us")),
            "d": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i % 30) for i in ids], pa.date32()),
            "name": pa.array([f"a-rather-long-customer-name-{i:05d}" for i in ids]),
            "short": pa.array([f"s{i}" for i in ids]),
            "maybe": pa.array([None] * len(ids), pa.int64()),
            "day": pa.array([day] * len(ids)),
        }
    )


def test_the_rows_equal_the_files_values_and_say_what_is_a_bound(tmp_path):
    batches = [_batch(0, 100, "2024-01-01"), _batch(100, 250, "2024-01-02"), _batch(250, 300, "2024-01-01")]
    table, _ = write_table(tmp_path, "ns.t", batches, partition_by="day")
    snap = table.current_snapshot()
    rows = manifest_stats.stats_rows(table, snap, 3, "ns.t")
    assert rows.schema.equals(ss.FILE_STATS_SCHEMA, check_metadata=False)
    assert set(rows["column_name"].to_pylist()) == {"id", "n", "x", "amount", "ts", "d", "name", "short", "maybe"}
    files = sorted(set(rows["path"].to_pylist()))
    assert len(files) == 3 and set(rows["method"].to_pylist()) == {"iceberg_manifest"}
    assert set(rows["partition"].to_pylist()) == {"day=2024-01-01", "day=2024-01-02"}
    by = {(r["path"], r["column_name"]): r for r in rows.to_pylist()}
    for f in table.scan().plan_files():
        values = pq.read_table(f.file.file_path.removeprefix("file://"))
        mine = rows.filter(pc.equal(rows["path"], f.file.file_path))
        for c in ("id", "n", "x", "amount", "ts", "d"):
            r = by[(f.file.file_path, c)]
            assert r["has_stats"] and r["min_exact"] and r["max_exact"]
            lo, hi, _ = ss.column_bounds(mine, c)  # the typed bounds, decoded as every reader of the rows does
            assert (lo[0].as_py(), hi[0].as_py()) == (pc.min(values[c]).as_py(), pc.max(values[c]).as_py()), c
            assert r["file_rows"] == values.num_rows and r["null_count"] == 0
        name = by[(f.file.file_path, "name")]
        assert name["has_stats"] and name["min_exact"] is False and name["max_exact"] is False  # truncate(16)
        assert len(name["min_value"]) == 16 and name["min_value"] <= pc.min(values["name"]).as_py()
        assert name["max_value"] > pc.max(values["name"]).as_py()  # the incremented prefix: above every value
        short = by[(f.file.file_path, "short")]
        assert short["min_exact"] and short["max_exact"] and short["min_value"] == pc.min(values["short"]).as_py()
        maybe = by[(f.file.file_path, "maybe")]
        assert maybe["has_stats"] and maybe["min_value"] is None and maybe["null_count"] == values.num_rows
    # the order keys let the metrics compare bounds as typed values
    ids = rows.filter(pc.equal(rows["column_name"], "id")).sort_by("min_num")
    assert ids["min_num"].to_pylist() == [0.0, 100.0, 250.0] and ids["max_num"].to_pylist() == [99.0, 249.0, 299.0]


def test_columns_without_bounds_are_said_so(tmp_path):
    table, _ = write_table(
        tmp_path, "ns.c", [_batch(0, 50, "x")], properties={"write.metadata.metrics.column.x": "counts"}
    )
    rows = manifest_stats.stats_rows(table, table.current_snapshot(), 1, "ns.c", ["x", "id"])
    x = rows.filter(pc.equal(rows["column_name"], "x")).to_pylist()[0]
    assert not x["has_stats"] and x["reason"] == "not_in_metadata_stats" and x["min_value"] is None
    assert rows.filter(pc.equal(rows["column_name"], "id"))["has_stats"].to_pylist() == [True]


def test_the_projected_read_equals_whole_entries(tmp_path):
    table, _ = write_table(tmp_path, "ns.p", [_batch(0, 40, "a"), _batch(40, 90, "b")], partition_by="day")
    whole, _ = manifest_stats.live_files(table, table.current_snapshot())
    fast, _ = manifest_stats.live_files(table, table.current_snapshot(), for_stats=True)
    key = lambda f: (f.path, f.size, f.rows, f.partition, f.values, f.data_file.lower_bounds)  # noqa: E731
    assert [key(f) for f in fast] == [key(f) for f in whole] and len(fast) == 2


@pytest.mark.parametrize("case", ["position deletes", "renamed column", "bucket partition", "truncate partition"])
def test_what_a_rewrite_cannot_keep_correct_is_refused_before_anything_is_written(tmp_path, case):
    from iceberg_deletes import add_position_deletes
    from iceberg_tables import CATALOG
    from pyiceberg.transforms import BucketTransform, TruncateTransform

    from airflow_zorder.core.errors import IcebergRewriteRefusedError
    from airflow_zorder.core.storage.io.local import LocalFileSystem
    from airflow_zorder.core.tables import open_table

    table, props = write_table(tmp_path, "ns.r", [_batch(0, 50, "a"), _batch(50, 90, "b")])
    expected = {
        "position deletes": "live delete file",
        "renamed column": r"renamed columns since some files were written \(short -> label\)",
        "bucket partition": r"partitioned by id_bucket \(bucket\[4\]\)",
        "truncate partition": r"partitioned by name_trunc \(truncate\[3\]\)",
    }[case]
    if case == "position deletes":
        add_position_deletes(table, sorted(f.file.file_path for f in table.scan().plan_files())[0], [0, 1])
    elif case == "renamed column":
        with table.update_schema() as schema:
            schema.rename_column("short", "label")
    else:
        with table.update_spec() as spec:
            if case == "bucket partition":
                spec.add_field("id", BucketTransform(4), "id_bucket")
            else:
                spec.add_field("name", TruncateTransform(3), "name_trunc")
    metadata = table.refresh().metadata_location
    opened = open_table("ns.r", LocalFileSystem(), iceberg_catalog=CATALOG, catalog_properties=props)
    with pytest.raises(IcebergRewriteRefusedError, match=expected):
        opened.check_rewritable()
    assert table.refresh().metadata_location == metadata  # nothing committed
