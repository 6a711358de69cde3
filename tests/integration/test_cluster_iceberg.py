"""The clustering job on Apache Iceberg tables in a real pyiceberg SQL catalog (SQLite), with a real local SparkSession.

Spark reads the current snapshot's data files and writes the clustered files; pyiceberg commits them on the
driver as one ``replace`` snapshot. Other writers are pyiceberg writers on their own catalog object, run while the
job is held at one of its fault points; crashes are the fault points raising (``SimulatedCrash``).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
from pathlib import Path

import pyarrow as pa
import pytest

pytest.importorskip("pyiceberg")

from iceberg_tables import CATALOG, catalog, write_table  # noqa: E402

from airflow_zorder.core.errors import ConcurrentChangeError, IcebergRewriteRefusedError  # noqa: E402
from airflow_zorder.core.jobs.options import ClusterOptions  # noqa: E402
from airflow_zorder.core.storage import faults  # noqa: E402
from airflow_zorder.core.tables import iceberg_table  # noqa: E402
from spark_jobs.cluster_table import run_action, run_cluster  # noqa: E402

pytestmark = pytest.mark.spark

COLUMNS = ["a", "b"]


def _batch(seed: int, rows: int = 2000) -> pa.Table:
    """Unsorted rows: a/b spread over the whole range in every file; strings longer than Iceberg's 16-char bounds."""
    r = random.Random(seed)
    a = [r.randrange(0, 1_000_000) for _ in range(rows)]
    return pa.table(
        {
            "a": pa.array(a, pa.int64()),
            "b": pa.array([r.randrange(0, 1_000_000) for _ in range(rows)], pa.int64()),
            "s": pa.array([f"customer-name-padding-{x:07d}" for x in a]),
            "ts": pa.array([dt.datetime(2024, 1, 1) + dt.timedelta(seconds=x) for x in a], pa.timestamp("us")),
            "day": pa.array([f"2024-01-0{1 + (x % 2)}" for x in a]),
        }
    )


@pytest.fixture()
def table(tmp_path, monkeypatch):
    """An unpartitioned table of 8 files; the catalog is configured as users do, by PYICEBERG_CATALOG__ variables."""
    _, props = write_table(tmp_path, "ns.events", [_batch(i) for i in range(8)])
    for key, value in props.items():
        monkeypatch.setenv(f"PYICEBERG_CATALOG__{CATALOG.upper()}__{key.upper()}", value)
    return tmp_path


def _load(home):
    return catalog(home)[0].load_table("ns.events")


def _rows(t, snapshot_id=None) -> list[tuple]:
    data = t.scan(snapshot_id=snapshot_id).to_arrow().select(["a", "b", "s", "ts", "day"])
    return sorted(zip(*(data.column(c).to_pylist() for c in data.column_names)))


def _files_on_disk(home) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(home / "warehouse") for f in fs if f.endswith(".parquet")}


def _opts(**kw) -> ClusterOptions:
    return ClusterOptions(table="ns.events", columns=COLUMNS, iceberg_catalog=CATALOG, num_files=4, **kw)


def _at(point: str, action, monkeypatch) -> list:
    """Run ``action`` when the job reaches ``point`` (once), then go on."""
    ran: list = []
    real = faults.fault_point

    def hook(name: str) -> None:
        if name == point and not ran:
            ran.append(action())
        real(name)

    monkeypatch.setattr(iceberg_table, "fault_point", hook)
    return ran


def test_an_iceberg_table_clusters_in_one_replace_snapshot_with_the_same_rows(spark, table):
    from pyiceberg.expressions import EqualTo

    before_t = _load(table)
    before, before_id = _rows(before_t), before_t.current_snapshot().snapshot_id
    probe = before_t.scan().to_arrow().column("a")[777].as_py()
    planned_before = sum(1 for _ in before_t.scan(row_filter=EqualTo("a", probe)).plan_files())
    result = run_cluster(spark, _opts())
    assert result["status"] == "clustered" and result["kind"] == "iceberg"
    assert result["location"] == before_t.location().rstrip("/")  # what lineage names the table by
    assert (result["before"]["files"], result["after"]["files"]) == (8, 4)
    t = _load(table)
    snap = t.current_snapshot()
    assert snap.summary.operation.value == "replace" and snap.summary["zorder.run-id"] == result["run_id"]
    assert (
        snap.parent_snapshot_id == before_id and result["iceberg"]["version"] == result["iceberg"]["read_version"] + 1
    )
    assert _rows(t) == before and _rows(t, before_id) == before  # and time travel still reads the old files
    assert len(t.history()) == len(before_t.history()) + 1
    # the new files' metrics are in the manifests: pyiceberg's own planning prunes by them
    planned_after = sum(1 for _ in t.scan(row_filter=EqualTo("a", probe)).plan_files())
    assert planned_before == 8 and planned_after < 4
    # what a reader of the format reads, through the seam
    from airflow_zorder.core.storage.io.local import LocalFileSystem
    from airflow_zorder.core.tables import open_table

    opened = open_table("ns.events", LocalFileSystem(), iceberg_catalog=CATALOG)
    rows = opened.metadata_stats(["a"])
    assert rows.num_rows == 4 and set(rows["method"].to_pylist()) == {"iceberg_manifest"}
    assert all(rows["has_stats"].to_pylist()) and all(rows["min_exact"].to_pylist())


def test_a_table_with_required_columns_clusters(spark, tmp_path, monkeypatch):
    """Columns declared required (NOT NULL, as Spark SQL and Java writers often create them): Spark writes them
    optional, and the commit accepts them because the footers count no null (pyiceberg's own check refused)."""
    first = _batch(1, 500)
    required = pa.schema([f.with_nullable(f.name not in COLUMNS) for f in first.schema])
    t, props = write_table(tmp_path, "ns.events", [_batch(i, 500).cast(required) for i in range(4)])
    for key, value in props.items():
        monkeypatch.setenv(f"PYICEBERG_CATALOG__{CATALOG.upper()}__{key.upper()}", value)
    assert [f.required for f in t.schema().fields][:2] == [True, True]
    before = _rows(t)
    result = run_cluster(
        spark, ClusterOptions(table="ns.events", columns=COLUMNS, iceberg_catalog=CATALOG, num_files=2)
    )
    assert result["status"] == "clustered" and (result["before"]["files"], result["after"]["files"]) == (4, 2)
    after = _load(tmp_path)
    assert _rows(after) == before and [f.required for f in after.schema().fields][:2] == [True, True]


def test_a_file_with_nulls_in_a_required_column_is_refused(tmp_path):
    """The relaxed check still refuses what a required column cannot hold."""
    import pyarrow.parquet as pq

    from airflow_zorder.core.iceberg.replace_commit import data_file_for

    required = pa.schema([pa.field("a", pa.int64(), nullable=False), pa.field("b", pa.int64())])
    t, _ = write_table(tmp_path, "ns.events", [pa.table({"a": [1, 2], "b": [3, None]}, schema=required)])
    good, bad = tmp_path / "good.parquet", tmp_path / "bad.parquet"
    pq.write_table(pa.table({"a": [5, 6], "b": [None, 7]}), good)  # optional in the file, as Spark writes it
    pq.write_table(pa.table({"a": [5, None], "b": [1, 7]}), bad)
    assert data_file_for(t, str(good)).record_count == 2
    with pytest.raises(ValueError, match="nulls in column.*: a"):
        data_file_for(t, str(bad))


def test_an_append_committed_during_the_run_is_kept(spark, table, monkeypatch):
    before = _rows(_load(table))
    extra = _batch(99, 10)
    ran = _at("iceberg_before_commit", lambda: _load(table).append(extra), monkeypatch)
    result = run_cluster(spark, _opts())
    assert ran and result["status"] == "clustered"
    t = _load(table)
    assert _rows(t) == sorted(before + list(zip(*(extra.column(c).to_pylist() for c in extra.column_names))))
    assert t.current_snapshot().summary.operation.value == "replace"


def test_a_delete_during_the_run_fails_it_cleanly(spark, table, monkeypatch):
    """A copy-on-write delete rewrote files the run replaces: a clear conflict, no file of ours left."""
    on_disk = _files_on_disk(table)

    def delete():
        from pyiceberg.expressions import LessThan

        _load(table).delete(LessThan("a", 500_000))

    ran = _at("iceberg_before_commit", delete, monkeypatch)
    with pytest.raises(ConcurrentChangeError, match="another writer changed files"):
        run_cluster(spark, _opts())
    assert ran
    t = _load(table)
    assert t.current_snapshot().summary.operation.value != "replace"
    assert all(r[0] >= 500_000 for r in _rows(t))
    ours = {p for p in _files_on_disk(table) - on_disk if "zorder" in os.path.basename(p)}
    assert not ours  # the placed files were deleted


def test_a_position_delete_then_another_commit_during_the_run_is_a_conflict(spark, table, monkeypatch):
    """pyiceberg's own check compares the head's sequence number and misses this; the deleted rows must stay gone."""
    from iceberg_deletes import add_position_deletes

    t0 = _load(table)
    victim = sorted(f.file.file_path for f in t0.scan().plan_files())[0]

    def delete_then_append():
        add_position_deletes(_load(table), victim, [0, 1, 2])
        _load(table).append(_batch(77, 5))

    expected = None

    def run():
        nonlocal expected
        delete_then_append()
        expected = _rows(_load(table))

    ran = _at("iceberg_before_commit", run, monkeypatch)
    with pytest.raises(ConcurrentChangeError, match="position deletes"):
        run_cluster(spark, _opts())
    assert ran and _rows(_load(table)) == expected  # the 3 deleted rows did not come back


@pytest.mark.parametrize(
    "point, committed",
    [("iceberg_mid_place", False), ("iceberg_before_commit", False), ("iceberg_after_commit", True)],
)
def test_a_crash_is_recovered_by_the_run_id_in_the_snapshots(spark, table, monkeypatch, point, committed):
    before = _rows(_load(table))
    on_disk = _files_on_disk(table)
    monkeypatch.setenv(faults.FAULT_ENV, point)
    monkeypatch.setenv(faults.FAULT_MODE_ENV, "raise")
    faults.reset_fault_counters()
    with pytest.raises(faults.SimulatedCrash):
        run_cluster(spark, _opts())
    monkeypatch.delenv(faults.FAULT_ENV)
    out = run_action(
        spark, ClusterOptions(table="ns.events", columns=COLUMNS, iceberg_catalog=CATALOG, action="recover")
    )
    assert len(out["runs"]) == 1
    t = _load(table)
    assert _rows(t) == before
    assert (t.current_snapshot().summary.operation.value == "replace") is committed
    if not committed:
        assert _files_on_disk(table) == on_disk  # the placed files are gone, every live file stays


def test_a_real_kill_while_placing_files_then_recover_removes_them(spark, table, tmp_path):
    """spark-submit SIGKILLed (ZORDER_FAULT) after placing its first file in the table's data location; the catalog
    reaches the driver only as the operators send it, a properties file (--iceberg-catalog-file), not the variables.
    Nothing was committed; ``--action recover`` finds no snapshot with the run id and removes the placed files."""
    from table_checks import spark_submit

    from airflow_zorder.core.iceberg.catalogs import write_catalog_file

    before, on_disk = _rows(_load(table)), _files_on_disk(table)
    prefix = f"PYICEBERG_CATALOG__{CATALOG.upper()}__"
    props = {k[len(prefix) :].lower(): v for k, v in os.environ.items() if k.startswith(prefix)}
    shipped = write_catalog_file(str(tmp_path / "catalog.json"), CATALOG, props)
    args = ["--table", "ns.events", "--columns", ",".join(COLUMNS), "--num-files", "4"]
    args += ["--iceberg-catalog", CATALOG, "--iceberg-catalog-file", shipped, "--run-id", "20260101T000000-killed00"]
    proc = spark_submit(
        "cluster_table", *args, env={faults.FAULT_ENV: "iceberg_mid_place:1"}, unset=("PYICEBERG_CATALOG__",)
    )
    said = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "fault injected at 'iceberg_mid_place'" in said, said[-3000:]
    placed = _files_on_disk(table) - on_disk
    assert placed and _rows(_load(table)) == before  # placed, never committed: invisible to readers
    out = run_action(
        spark, ClusterOptions(table="ns.events", columns=COLUMNS, iceberg_catalog=CATALOG, action="recover")
    )
    assert any("20260101T000000-killed00" in str(r) for r in out["runs"]), out
    assert _files_on_disk(table) == on_disk and _rows(_load(table)) == before


def test_refusals_leave_the_table_untouched(spark, tmp_path, monkeypatch):
    from pyiceberg.transforms import BucketTransform

    home = tmp_path / "bucketed"
    t, props = write_table(home, "ns.events", [_batch(1, 200), _batch(2, 200)])
    for key, value in props.items():
        monkeypatch.setenv(f"PYICEBERG_CATALOG__{CATALOG.upper()}__{key.upper()}", value)
    with t.update_spec() as spec:
        spec.add_field("a", BucketTransform(4), "a_bucket")
    before = _load(home).metadata_location
    with pytest.raises(IcebergRewriteRefusedError, match=r"partitioned by a_bucket \(bucket\[4\]\)"):
        run_cluster(spark, _opts())
    assert _load(home).metadata_location == before
    with pytest.raises(Exception, match="does not exist in catalog"):
        run_cluster(spark, ClusterOptions(table="ns.nope", columns=COLUMNS, iceberg_catalog=CATALOG))
    # format v3: pyiceberg cannot write it, so the table is registered from a v3 copy of a v2 table's metadata
    v2 = _load(home)
    doc = json.loads(Path(v2.metadata_location.removeprefix("file://")).read_text())
    doc.update({"format-version": 3, "next-row-id": 0})
    v3_file = home / "v3.metadata.json"
    v3_file.write_text(json.dumps(doc))
    catalog(home)[0].register_table("ns.events_v3", f"file://{v3_file}")
    with pytest.raises(IcebergRewriteRefusedError, match="is format version 3"):
        run_cluster(spark, ClusterOptions(table="ns.events_v3", columns=COLUMNS, iceberg_catalog=CATALOG))
    assert catalog(home)[0].load_table("ns.events_v3").metadata_location == f"file://{v3_file}"


def test_the_stats_job_and_an_incremental_run_on_an_iceberg_table(spark, table):
    """The stats job takes the manifests' statistics (nothing lacking: nothing read); an incremental run plans from
    them and rewrites only what its plan picks, in one replace snapshot."""
    from airflow_zorder.core.jobs.options import CollectOptions
    from spark_jobs.stats_collection.run import run_collect

    res = run_collect(spark, CollectOptions(table="ns.events", columns=COLUMNS, iceberg_catalog=CATALOG))
    assert res["status"] == "ok" and res["kind"] == "iceberg" and res["files_total"] == 8
    assert res["files_read"] == 0 and res["columns_from_log"] == COLUMNS  # every pair from the manifests
    run_cluster(spark, _opts())  # 8 -> 4 clustered files
    clustered = {f.file.file_path: f.file.file_size_in_bytes for f in _load(table).scan().plan_files()}
    for i in range(4):  # four small unclustered files
        _load(table).append(_batch(50 + i, 600))
    before = _rows(_load(table))
    target = sum(clustered.values()) // len(clustered)
    result = run_cluster(
        spark,
        ClusterOptions(
            table="ns.events", columns=COLUMNS, iceberg_catalog=CATALOG, incremental=True, target_file_size=target
        ),
    )
    assert result["status"] == "clustered" and result["mode"] == "incremental", result["messages"]
    assert result["rewritten"]["files"] == 4  # the new files only: the clustered ones stay
    t = _load(table)
    live = {f.file.file_path for f in t.scan().plan_files()}
    assert set(clustered) <= live
    assert _rows(t) == before and t.current_snapshot().summary.operation.value == "replace"
