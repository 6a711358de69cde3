"""FileStatsHook on real Parquet tables whose stats were collected from their real footers (no Spark)."""

from __future__ import annotations

import datetime as dt
import json
from datetime import timedelta

import pytest
from overlap_tables import COLUMNS, collect, record_cluster, write_table

from airflow_zorder.core.errors import StorageConnectionError
from airflow_zorder.core.policy.recluster_policy import HealthPolicy
from airflow_zorder.core.stats import stats_store
from airflow_zorder.core.stats.stats_location import default_stats_location
from airflow_zorder.hooks.file_stats import FileStatsHook

UTC = dt.UTC


@pytest.fixture
def scrambled(tmp_path):
    root = write_table(tmp_path / "events", {"": "scrambled"})
    collect(root)
    return root


def test_reads_snapshot_events_and_evaluates(scrambled):
    hook = FileStatsHook(str(scrambled))
    assert hook.stats_location == f"{scrambled}/_zorder/stats"
    snap = hook.get_snapshot()
    assert snap.num_rows == 16 * 2 and set(snap["column_name"].to_pylist()) == set(COLUMNS)
    assert hook.get_snapshot(["a"]).num_rows == 16
    assert hook.get_events().num_rows == 0
    clu = hook.clustering()
    assert clu["per_column"]["a"]["average_depth"] == 16.0 and clu["headline"] == pytest.approx(4.0)
    p = hook.evaluate()
    assert p["decision"] == "recluster" and p["table"] == str(scrambled)
    assert p["stats_location"] == hook.stats_location and p["snapshot_id"] == 1
    assert "a: a point query reads 100% of 16 files, 4.0x the ideal 25% (threshold 2.0x)" in p["reasons"]
    assert p["total_bytes"] == sum(f.stat().st_size for f in scrambled.glob("*.parquet"))
    assert hook.evaluate(HealthPolicy(max_ratio_to_ideal=4.0))["decision"] == "healthy"


def test_partitions_are_usable_by_the_clustering_job(tmp_path):
    root = write_table(
        tmp_path / "t", {"day=2026-01-01": "clustered", "day=2026-01-02": "scrambled", "day=2026-01-03": "clustered"}
    )
    collect(root)
    p = FileStatsHook(str(root)).evaluate()
    assert p["decision"] == "recluster" and p["partitions"] == ["day=2026-01-02"]
    from airflow_zorder.core.jobs.options import parse_partitions
    from airflow_zorder.core.storage.io.local import LocalFileSystem
    from airflow_zorder.core.tables.model import select_units
    from airflow_zorder.core.tables.parquet_dir import list_units

    units = select_units(list_units(LocalFileSystem(), str(root))[1], parse_partitions([json.dumps(p["partitions"])]))
    assert [u.relpath for u in units] == ["day=2026-01-02"]


def test_stats_age_counts_from_the_newest_collection_run(scrambled):
    loc = default_stats_location(str(scrambled))
    old = dt.datetime.now(UTC) - timedelta(days=3)
    collect(scrambled, collected_at=old)  # a new snapshot, collected 3 days ago
    hook = FileStatsHook(str(scrambled))
    p = hook.evaluate()
    assert p["decision"] == "hold" and p["snapshot_id"] == 2 and p["stats_age_s"] > 2.9 * 86400
    # a later run that found nothing new confirms the snapshot: fresh again
    stats_store.write_run(loc, {"run_id": "noop", "table_name": str(scrambled), "status": "ok"})
    p = hook.evaluate()
    assert p["decision"] == "recluster" and p["stats_age_s"] < 60


def test_last_clustering_sets_default_columns_and_history(scrambled):
    record_cluster(scrambled, dt.datetime.now(UTC) - timedelta(days=2))
    hook = FileStatsHook(str(scrambled))
    assert hook.get_events("cluster").num_rows == 1
    assert hook.evaluate()["columns_source"] == "last_cluster_event"
    collect(scrambled)
    hist = hook.get_history()
    assert hist.num_rows == 2 and hist["headline"].to_pylist() == [pytest.approx(4.0)] * 2
    assert hist["worst_column"].to_pylist()[0] in COLUMNS


def test_clear_errors(tmp_path, scrambled):
    with pytest.raises(stats_store.StatsNotFoundError, match="table .*nope does not exist"):
        FileStatsHook(str(tmp_path / "nope")).evaluate()
    bare = write_table(tmp_path / "bare", {"": "clustered"})
    with pytest.raises(
        stats_store.StatsNotFoundError, match=r"never collected \(.*does not exist\): run SparkCollectFileStatsOperator"
    ):
        FileStatsHook(str(bare)).get_snapshot()
    with pytest.raises(stats_store.StatsNotFoundError, match="stats location .*elsewhere does not exist"):
        FileStatsHook(str(bare), stats_location=str(tmp_path / "elsewhere")).evaluate()
    record_cluster(bare, dt.datetime.now(UTC))  # the location exists, but holds no snapshot
    with pytest.raises(stats_store.StatsNotFoundError, match="never collected at .*no committed snapshot"):
        FileStatsHook(str(bare)).evaluate()
    with pytest.raises(ValueError, match="catalog table name.*pass stats_location"):
        FileStatsHook("sales.events")
    with pytest.raises(ValueError, match=r"unknown column\(s\) \['c'\].*have \['a', 'b'\]"):
        FileStatsHook(str(scrambled)).evaluate(columns=["a", "c"])
    # a catalog table reads the stats location it is given
    cat = FileStatsHook("sales.events", stats_location=default_stats_location(str(scrambled)))
    assert cat.evaluate()["decision"] == "recluster"


def test_the_connection_is_looked_up_on_first_use(airflow_db, scrambled):
    """Building the hook does no I/O: a connection that does not exist is named by the first read, not before."""
    hook = FileStatsHook(str(scrambled), conn_id="nowhere")
    assert hook.stats_location == f"{scrambled}/_zorder/stats"  # a path's stats location: no lookup either
    with pytest.raises(StorageConnectionError, match="connection 'nowhere' is not defined: create it"):
        hook.get_snapshot()


def test_fsspec_schemes_open_without_a_connection(tmp_path):
    """A real fsspec in-memory store: schemes pyarrow has no filesystem for go through fsspec (``core.storage.locations``)."""
    fsspec = pytest.importorskip("fsspec")
    mem = fsspec.filesystem("memory")
    root = write_table(tmp_path / "t", {"": "scrambled"})
    collect(root, stats_location="memory://lake/t/_zorder/stats", filesystem=mem)
    try:
        hook = FileStatsHook("memory://lake/t")
        assert type(hook.get_conn()).__name__ == "PyFileSystem"
        assert hook.evaluate()["decision"] == "recluster"
    finally:
        mem.rm("/lake", recursive=True)
