"""The Delta commit of a clustering rewrite, on real Delta tables written by deltalake (delta-rs).

The rewrite here is done with pyarrow (the Spark job's part is tested in tests/integration); what is tested
is the transaction: its actions and stats, the history entry, time travel, the refusals, and conflicts with
real deltalake writers running in another process.
"""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import json
import os
import subprocess
import sys
import uuid

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from airflow_zorder.core.errors import DeltaRewriteRefusedError

deltalake = pytest.importorskip("deltalake")

from airflow_zorder.core.delta import delta_commit as dc  # noqa: E402
from airflow_zorder.core.errors import ConcurrentChangeError  # noqa: E402


def _table(tmp_path, files: int = 3, rows: int = 50, **kw) -> str:
    uri = str(tmp_path / "events")
    for i in range(files):
        ids = list(range(i * rows, (i + 1) * rows))
        t = pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "day": pa.array([f"d{i % 2}"] * rows),
                "name": pa.array([f"user-{x:05d}" for x in ids]),
            }
        )
        deltalake.write_deltalake(uri, t, mode="append", partition_by=["day"], **kw)
    return uri


def _rows(uri: str, version: int | None = None) -> pa.Table:
    t = pa.table(deltalake.DeltaTable(uri, version=version).to_pyarrow_dataset().to_table())
    return t.select(sorted(t.column_names)).sort_by([(c, "ascending") for c in sorted(t.column_names)])


def _checksum(t: pa.Table) -> str:
    h = hashlib.sha256()
    for batch in t.to_batches():
        for col in batch.columns:
            h.update(str(col.to_pylist()).encode())
    return h.hexdigest()


def _rewrite(uri: str, table) -> tuple[list[dc.DeltaFile], list[tuple[dc.DeltaFile, str]]]:
    """Rewrite every partition into one file sorted by id descending (a layout change, same rows)."""
    snap = dc.read_snapshot(table)
    added = []
    by_part: dict[tuple, list[dc.DeltaFile]] = {}
    for f in snap.files:
        by_part.setdefault(tuple(sorted(f.partition_values.items())), []).append(f)
    for part, files in by_part.items():
        data = pa.concat_tables([pq.read_table(os.path.join(uri, f.path)) for f in files])
        data = data.sort_by([("id", "descending")])
        rel = "/".join(f"{k}={v}" for k, v in part) + f"/part-zorder-{uuid.uuid4().hex}.parquet"
        path = os.path.join(uri, rel)
        pq.write_table(data, path)
        md = pq.read_metadata(path)
        cols = dc.indexed_columns(snap.configuration, data.column_names)
        added.append((dc.DeltaFile(rel, os.path.getsize(path), dict(part), md.num_rows), dc.file_stats(md, cols)))
    return list(snap.files), added


def test_rewrite_commits_one_transaction_same_rows_history_and_time_travel(tmp_path):
    uri = _table(tmp_path)
    before = _rows(uri)
    table = dc.open_table(uri)
    dc.check_rewritable(table)
    removed, added = _rewrite(uri, table)
    version = dc.commit_rewrite(table, removed, added, {"curve": "hilbert", "columns": ["id"], "run_id": "r1"})
    assert version == 3
    assert _checksum(_rows(uri)) == _checksum(before) and _rows(uri).num_rows == 150
    fresh = deltalake.DeltaTable(uri)
    assert sorted(fresh.file_uris()) == sorted(os.path.join(uri, f.path) for f, _ in added)
    entry = fresh.history(1)[0]
    assert json.loads(entry[dc.METADATA_KEY]) == {"curve": "hilbert", "columns": ["id"], "run_id": "r1"}
    assert _checksum(_rows(uri, version=2)) == _checksum(before)  # time travel to the version before
    # the log carries the new files' stats, dataChange=false on both sides
    log = [json.loads(line) for line in open(os.path.join(uri, "_delta_log", f"{version:020d}.json"))]
    acts = [a for a in log if "add" in a or "remove" in a]
    assert {a.get("add", a.get("remove"))["dataChange"] for a in acts} == {False}
    stats = [json.loads(a["add"]["stats"]) for a in acts if "add" in a]
    assert sorted(s["numRecords"] for s in stats) == [50, 100]
    assert all(set(s["minValues"]) == {"id", "name"} and s["nullCount"]["id"] == 0 for s in stats)


def test_file_stats_from_the_footer_bound_every_value(tmp_path):
    long_a, long_b = "x" * 40 + "a", "x" * 40 + "b"
    ts = [dt.datetime(2020, 1, 1, 1, 2, 3, 456789, tzinfo=dt.UTC), dt.datetime(2021, 6, 1, tzinfo=dt.UTC)]
    t = pa.table(
        {
            "i": pa.array([3, None], pa.int32()),
            "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
            "d": pa.array([dt.date(2020, 1, 2), dt.date(2020, 3, 4)]),
            "dec": pa.array([decimal.Decimal("12.34"), decimal.Decimal("-1.00")], pa.decimal128(10, 2)),
            "s": pa.array([long_a, long_b]),
            "f": pa.array([float("nan"), 1.0]),
            "b": pa.array([True, False]),
            "st": pa.array([{"x": 1}, {"x": 2}]),
        }
    )
    path = str(tmp_path / "f.parquet")
    pq.write_table(t, path, row_group_size=1)
    stats = json.loads(dc.file_stats(pq.read_metadata(path), ["i", "ts", "d", "dec", "s", "f", "b", "st"]))
    assert stats["numRecords"] == 2 and stats["nullCount"]["i"] == 1
    assert stats["minValues"]["i"] == 3 and stats["maxValues"]["i"] == 3
    assert stats["minValues"]["ts"] == "2020-01-01T01:02:03.456789Z" and stats["maxValues"]["ts"].startswith(
        "2021-06-01"
    )
    assert stats["minValues"]["d"] == "2020-01-02" and stats["minValues"]["dec"] == -1.0
    # a 41-character string: a 32-unit prefix as the min, an upper bound above every string with that prefix
    assert stats["minValues"]["s"] == "x" * 32 and stats["maxValues"]["s"] > long_b
    assert "b" not in stats["minValues"] and "st" not in stats["minValues"]
    assert "f" not in stats["minValues"] or not isinstance(stats["minValues"]["f"], str)


def test_delta_rs_prunes_with_the_committed_stats(tmp_path):
    uri = _table(tmp_path, files=4)
    table = dc.open_table(uri)
    removed, added = _rewrite(uri, table)
    dc.commit_rewrite(table, removed, added, {"run_id": "r"})
    acts = pa.table(deltalake.DeltaTable(uri).get_add_actions(flatten=True))
    assert pc.min(acts["min.id"]).as_py() == 0 and pc.max(acts["max.id"]).as_py() == 199
    got = deltalake.DeltaTable(uri).to_pyarrow_dataset().to_table(filter=pc.field("id") == 123)
    assert got["name"].to_pylist() == ["user-00123"]


def _other_writer(uri: str, code: str) -> None:
    """A real deltalake writer in another process."""
    prog = "import sys, pyarrow as pa, deltalake; uri = sys.argv[1]; dt = deltalake.DeltaTable(uri)\n" + code
    subprocess.run([sys.executable, "-c", prog, uri], check=True, timeout=120)


def test_append_committed_during_the_run_keeps_its_rows(tmp_path):
    uri = _table(tmp_path)
    table = dc.open_table(uri)
    removed, added = _rewrite(uri, table)
    _other_writer(
        uri,
        "deltalake.write_deltalake(uri, pa.table({'id': pa.array([999], pa.int64()), 'day': ['d0'], "
        "'name': ['late']}), mode='append', partition_by=['day'])",
    )
    dc.commit_rewrite(table, removed, added, {"run_id": "r"})
    rows = _rows(uri)
    assert rows.num_rows == 151 and "late" in rows["name"].to_pylist()
    assert deltalake.DeltaTable(uri).version() == 4


@pytest.mark.parametrize(
    "change",
    [
        "dt.delete('id = 5')",
        "deltalake.write_deltalake(uri, pa.table({'id': pa.array([1], pa.int64()), 'day': ['d0'], 'name': ['x']}), "
        "mode='overwrite', partition_by=['day'])",
    ],
)
def test_delete_or_overwrite_during_the_run_fails_the_commit_clearly(tmp_path, change):
    uri = _table(tmp_path)
    table = dc.open_table(uri)
    removed, added = _rewrite(uri, table)
    _other_writer(uri, change)
    after_other = _rows(uri)
    with pytest.raises(ConcurrentChangeError, match="another writer changed files"):
        dc.commit_rewrite(table, removed, added, {"run_id": "r"})
    assert _checksum(_rows(uri)) == _checksum(after_other)  # as the other writer left it
    assert deltalake.DeltaTable(uri).version() == 3


@pytest.mark.parametrize(
    "config, match",
    [
        ({"delta.enableDeletionVectors": "true"}, "deletion vectors"),
        ({"delta.columnMapping.mode": "name"}, "column mapping"),
    ],
)
def test_refuses_what_a_rewrite_cannot_keep_correct(tmp_path, config, match):
    uri = str(tmp_path / "t")
    deltalake.write_deltalake(uri, pa.table({"a": [1, 2]}), configuration=config)
    with pytest.raises(DeltaRewriteRefusedError, match=match):
        dc.check_rewritable(dc.open_table(uri))


def test_plain_and_change_feed_tables_are_rewritable(tmp_path):
    uri = str(tmp_path / "t")
    deltalake.write_deltalake(uri, pa.table({"a": [1, 2]}), configuration={"delta.enableChangeDataFeed": "true"})
    dc.check_rewritable(dc.open_table(uri))


def test_indexed_columns_follow_the_table_properties():
    cols = [f"c{i}" for i in range(40)]
    assert dc.indexed_columns({}, cols) == cols[:32]
    assert dc.indexed_columns({"delta.dataSkippingNumIndexedCols": "2"}, cols) == ["c0", "c1"]
    assert dc.indexed_columns({"delta.dataSkippingNumIndexedCols": "-1"}, cols) == cols
    assert dc.indexed_columns({"delta.dataSkippingStatsColumns": "c5, `c1`"}, cols) == ["c1", "c5"]
