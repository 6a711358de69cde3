"""The stats job on real Delta Lake tables (written by ``deltalake``) with real Spark: files and most statistics
from the log, footers read only for what the log lacks, removed-but-not-vacuumed files never counted, partition
values from the log, and FileStatsHook using the job's rows only for the Delta version the job read."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from airflow_zorder.core.errors import ForeignTableFormatError, StatsCollectionError
from airflow_zorder.core.jobs.options import CollectOptions
from airflow_zorder.core.stats import stats_schema, stats_store
from spark_jobs.stats_collection.run import run_collect

pytestmark = pytest.mark.spark

deltalake = pytest.importorskip("deltalake")
from deltalake import DeltaTable, write_deltalake  # noqa: E402

N_COLS = 40
INDEXED = 32  # delta.dataSkippingNumIndexedCols' default
NAMES = [f"c{i:02d}" for i in range(N_COLS)]
# what a stats row says about a column's values (not where or when it was read)
VALUE_FIELDS = ("arrow_type", "min_value", "max_value", "min_key", "max_key", "null_count", "value_count", "has_stats")


def wide_batch(seed: int, n: int = 200) -> pa.Table:
    """40 columns of ints, doubles and short strings with nulls: bounds the log keeps exactly."""
    rng = np.random.default_rng(seed)
    cols = {}
    for i, name in enumerate(NAMES):
        mask = rng.random(n) < 0.1
        if i % 3 == 0:
            arr = pa.array(rng.integers(-1000 * (i + 1), 1000 * (i + 1), n), pa.int64(), mask=mask)
        elif i % 3 == 1:
            arr = pa.array(rng.normal(i, 100, n), pa.float64(), mask=mask)
        else:
            arr = pa.array([f"v{x:04d}" for x in rng.integers(0, 5000, n)], pa.string(), mask=mask)
        cols[name] = arr
    return pa.table(cols)


def by_file_column(stats: pa.Table) -> dict[tuple[str, str], dict]:
    return {(os.path.basename(r["path"]), r["column_name"]): r for r in stats.to_pylist()}


def live_paths(root: Path) -> set[str]:
    return {str(Path(u)) for u in DeltaTable(str(root)).file_uris()}


def parquet_on_disk(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*.parquet") if "_delta_log" not in p.parts and "_zorder" not in p.parts}


@pytest.fixture(scope="module")
def wide(tmp_path_factory) -> Path:
    """A 40-column Delta table of three files (three appends)."""
    root = tmp_path_factory.mktemp("delta") / "wide"
    for seed in range(3):
        write_deltalake(str(root), wide_batch(seed), mode="append")
    return root


# --------------------------------------------------------------------------- log first, footers for the rest


def test_forty_columns_take_32_from_the_log_and_read_8_like_the_footer_path(spark, wide, tmp_path):
    res = run_collect(spark, CollectOptions(table=str(wide), stats_location=str(tmp_path / "delta_stats")))
    assert res["status"] == "ok", res["errors"]
    assert res["delta_version"] == 2 and res["files_total"] == 3
    assert res["columns_from_log"] == NAMES[:INDEXED] and res["columns_read"] == NAMES[INDEXED:]
    assert res["files_read"] == 3 and res["files_from_log"] == 0 and res["files_scanned"] == 0
    methods = {c["column_name"]: c for c in res["column_methods"]}
    assert methods["c00"]["delta_log"] == 3 and methods["c00"]["footer"] == 0
    assert methods["c39"]["footer"] == 3 and methods["c39"]["delta_log"] == 0
    st = stats_store.load_latest(str(tmp_path / "delta_stats"))
    run = json.loads(st.schema.metadata[stats_schema.RUN_METADATA_KEY])
    assert run["delta_version"] == 2  # the snapshot names the Delta version it describes
    assert st.num_rows == 3 * N_COLS and all(st["has_stats"].to_pylist())
    got = by_file_column(st)
    assert {c for (_, c), r in got.items() if r["method"] == "delta_log"} == set(NAMES[:INDEXED])
    assert {c for (_, c), r in got.items() if r["method"] == "footer"} == set(NAMES[INDEXED:])
    # deploy mode cluster: the operator reads the same counts back from the run record
    from airflow_zorder.core.jobs.options import STATS_RESULT_COUNTS
    from airflow_zorder.operators import SparkCollectFileStatsOperator

    op = SparkCollectFileStatsOperator(task_id="s", table=str(wide), stats_location=str(tmp_path / "delta_stats"))
    back = op.result_from_store(res["run_id"])
    assert {k: back[k] for k in STATS_RESULT_COUNTS} == {k: res[k] for k in STATS_RESULT_COUNTS}

    # the same files as a plain Parquet directory, through the footer path
    plain = tmp_path / "plain"
    plain.mkdir()
    for p in live_paths(wide):
        shutil.copy(p, plain / os.path.basename(p))
    ref = run_collect(spark, CollectOptions(table=str(plain), stats_location=str(tmp_path / "plain_stats")))
    want = by_file_column(stats_store.load_latest(str(tmp_path / "plain_stats")))
    assert set(want) == set(got)
    for key, r in got.items():
        w = want[key]
        assert {f: r[f] for f in VALUE_FIELDS} == {f: w[f] for f in VALUE_FIELDS}, key
        assert r["file_rows"] == w["file_rows"] and r["file_size"] == w["file_size"], key
        if r["method"] == "footer":  # the read rows are the footer path's rows, field for field
            skip = {"path", "table_name", "snapshot_id", "file_mtime_ms", "collected_at"}
            assert {k: v for k, v in r.items() if k not in skip} == {k: v for k, v in w.items() if k not in skip}
    assert res["rows_total"] == ref["rows_total"] == 600

    # nothing new: no file read, no new snapshot; a new commit: only its file is read
    again = run_collect(spark, CollectOptions(table=str(wide), stats_location=str(tmp_path / "delta_stats")))
    assert (again["new_snapshot"], again["files_read"], again["files_reused"]) == (False, 0, 3)
    table = tmp_path / "grown"
    shutil.copytree(wide, table)
    first = run_collect(spark, CollectOptions(table=str(table)))
    write_deltalake(str(table), wide_batch(7), mode="append")
    grown = run_collect(spark, CollectOptions(table=str(table)))
    assert first["delta_version"] == 2 and grown["delta_version"] == 3 and grown["new_snapshot"]
    assert (grown["files_total"], grown["files_read"], grown["files_reused"], grown["files_new"]) == (4, 1, 3, 1)


def test_only_log_columns_requested_reads_no_file(spark, wide, tmp_path):
    res = run_collect(
        spark, CollectOptions(table=str(wide), columns=["C01", "c05"], stats_location=str(tmp_path / "s"))
    )
    assert res["columns"] == ["c01", "c05"]  # spelled as the table spells them
    assert (res["files_read"], res["files_from_log"], res["columns_read"]) == (0, 3, [])
    st = stats_store.load_latest(str(tmp_path / "s"))
    assert set(st["method"].to_pylist()) == {"delta_log"} and set(st["column_name"].to_pylist()) == {"c01", "c05"}
    with pytest.raises(StatsCollectionError, match="unknown column 'nope'"):
        run_collect(spark, CollectOptions(table=str(wide), columns=["nope"], stats_location=str(tmp_path / "s")))


# --------------------------------------------------------------------------- files come from the log only


def test_removed_but_not_vacuumed_files_are_never_counted(spark, tmp_path):
    root = tmp_path / "churn"
    for seed in range(3):
        write_deltalake(str(root), wide_batch(seed, n=100), mode="append")
    DeltaTable(str(root)).delete("c00 < 0")  # rewrites every file that holds a negative c00
    after_delete = live_paths(root)
    write_deltalake(str(root), wide_batch(9, n=50), mode="overwrite")  # removes every file
    live = live_paths(root)
    stale = parquet_on_disk(root) - live
    assert len(live) == 1 and len(stale) >= 3 and after_delete <= stale  # removed files are still on disk
    res = run_collect(spark, CollectOptions(table=str(root)))
    assert res["status"] == "ok" and res["files_total"] == 1 and res["rows_total"] == 50
    assert res["files_read"] == 1  # the footer read touched the live file only
    st = stats_store.load_latest(res["stats_location"])
    assert set(st["path"].to_pylist()) == live and not stale & set(st["path"].to_pylist())
    expected_rows = DeltaTable(str(root)).to_pyarrow_table()
    c39 = st.filter(pc.equal(st["column_name"], "c39")).to_pylist()[0]
    assert c39["method"] == "footer" and c39["null_count"] == expected_rows["c39"].null_count
    assert c39["max_value"] == str(pc.max(expected_rows["c39"]).as_py())


def test_a_file_without_stats_in_the_log_is_read_for_every_column(spark, tmp_path):
    from deltalake.transaction import AddAction

    root = tmp_path / "nostats"
    write_deltalake(str(root), wide_batch(0, n=80).select(NAMES[:5]), mode="append")
    extra = wide_batch(1, n=60).select(NAMES[:5])
    name = "part-handwritten-nostats.parquet"
    pq.write_table(extra, root / name)
    table = DeltaTable(str(root))
    now = int(time.time() * 1000)
    table.create_write_transaction(
        [AddAction(name, (root / name).stat().st_size, {}, now, True, None)], mode="append", schema=table.schema()
    )
    res = run_collect(spark, CollectOptions(table=str(root)))
    assert res["status"] == "ok" and res["files_total"] == 2
    assert (res["files_read"], res["files_from_log"]) == (1, 1)
    st = by_file_column(stats_store.load_latest(res["stats_location"]))
    for c in NAMES[:5]:
        r = st[(name, c)]
        assert r["method"] == "footer" and r["has_stats"] and r["null_count"] == extra[c].null_count, c
    assert (st[(name, "c00")]["min_value"], st[(name, "c00")]["max_value"]) == (
        str(pc.min(extra["c00"]).as_py()),
        str(pc.max(extra["c00"]).as_py()),
    )
    assert st[(name, "c02")]["max_value"] == pc.max(extra["c02"]).as_py()
    assert {r["method"] for (p, _), r in st.items() if p != name} == {"delta_log"}


def test_partition_values_come_from_the_log(spark, tmp_path):
    root = tmp_path / "parted"
    t = pa.table(
        {
            "region": ["us", "eu/1", None, "us", "a b%c"],
            "a": [1, 2, 3, 4, 5],
            "b": [5.0, None, 7.0, 8.0, 9.0],
        }
    )
    write_deltalake(str(root), t, partition_by=["region"], configuration={"delta.dataSkippingNumIndexedCols": "1"})
    res = run_collect(spark, CollectOptions(table=str(root)))
    assert res["status"] == "ok", res["errors"]
    assert res["columns"] == ["a", "b"] and res["columns_from_log"] == ["a"] and res["columns_read"] == ["b"]
    st = stats_store.load_latest(res["stats_location"])
    adds = pa.table(DeltaTable(str(root)).get_add_actions(flatten=True)).to_pylist()
    want = {os.path.basename(a["path"]): a["partition.region"] for a in adds}
    assert len(want) == 4
    for r in st.to_pylist():
        got = dict(r["partition_values"])
        assert got == {"region": want[os.path.basename(r["path"])]}, r["path"]
        assert r["method"] == ("delta_log" if r["column_name"] == "a" else "footer")
    rows = {(dict(r["partition_values"])["region"], r["column_name"]): r for r in st.to_pylist()}
    assert rows[("eu/1", "b")]["null_count"] == 1 and rows[("us", "b")]["max_value"] == "8"
    assert rows[(None, "a")]["partition"] == "region=__HIVE_DEFAULT_PARTITION__"
    assert rows[("eu/1", "a")]["partition"] == "region=eu%2F1"
    # a partition column is not collected; a directory inside the table stays refused
    only = run_collect(
        spark, CollectOptions(table=str(root), columns=["region", "b"], stats_location=str(tmp_path / "o"))
    )
    assert only["columns"] == ["b"] and any("partition column" in m for m in only["messages"])
    with pytest.raises(ForeignTableFormatError, match="lies inside a Delta Lake table"):
        run_collect(spark, CollectOptions(table=str(root / "region=us")))


# --------------------------------------------------------------------------- the hook


def test_hook_sees_the_read_columns_for_the_version_the_job_read_only(spark, wide, tmp_path):
    from airflow_zorder.hooks.file_stats import FileStatsHook

    root = tmp_path / "watched"
    shutil.copytree(wide, root)
    before = FileStatsHook(str(root)).get_snapshot()
    late = before.filter(pc.is_in(before["column_name"], pa.array(NAMES[INDEXED:])))
    assert late.num_rows == 24 and not any(late["has_stats"].to_pylist())  # the log lacks them

    res = run_collect(spark, CollectOptions(table=str(root)))
    hook = FileStatsHook(str(root))
    snap = hook.get_snapshot()
    assert snap.num_rows == 3 * N_COLS and all(snap["has_stats"].to_pylist())
    assert set(snap["snapshot_id"].to_pylist()) == {res["delta_version"]} == {2}
    got = by_file_column(snap)
    job = by_file_column(stats_store.load_latest(res["stats_location"]))
    for key, r in got.items():
        assert r["method"] == ("footer" if key[1] in NAMES[INDEXED:] else "delta_log"), key
        assert {f: r[f] for f in VALUE_FIELDS} == {f: job[key][f] for f in VALUE_FIELDS}, key
    only = hook.get_snapshot(["c39", "c00"])
    assert sorted(set(only["column_name"].to_pylist())) == ["c00", "c39"] and all(only["has_stats"].to_pylist())
    c39 = hook.clustering(["c39"])["per_column"]["c39"]
    assert c39["files_with_stats"] == 3 and c39["files_without_stats"] == 0

    # a newer version the job has not read: the log's rows only, the read columns missing again
    write_deltalake(str(root), wide_batch(11), mode="append")
    newer = hook.get_snapshot()
    assert set(newer["snapshot_id"].to_pylist()) == {3}
    late = newer.filter(pc.is_in(newer["column_name"], pa.array(NAMES[INDEXED:])))
    assert late.num_rows == 4 * 8 and not any(late["has_stats"].to_pylist())
    assert set(late["method"].to_pylist()) == {"delta_log"}
    assert hook.clustering(["c39"])["per_column"]["c39"]["files_without_stats"] == 4

    # the job reads the new version: the hook sees every column again
    res = run_collect(spark, CollectOptions(table=str(root)))
    assert res["delta_version"] == 3 and res["files_read"] == 1
    assert all(hook.get_snapshot()["has_stats"].to_pylist())
