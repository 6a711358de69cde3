"""The clustering job on Delta Lake tables written by deltalake (delta-rs), with a real local SparkSession.

Spark reads the files of the log's version and writes the clustered files; delta-rs commits them on the
driver.  Other writers are real deltalake writers in another process; they commit while the job is held at
one of its fault points (``ZORDER_FAULT_MODE=raise`` cannot pause, so the hook used here is a fault point
that runs the writer: :func:`_writer_at`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import subprocess
import sys

import pyarrow as pa
import pytest

from airflow_zorder.core.errors import DeltaRewriteRefusedError

deltalake = pytest.importorskip("deltalake")

from airflow_zorder.core.delta import delta_commit as dc  # noqa: E402
from airflow_zorder.core.errors import CommitError, ConcurrentChangeError  # noqa: E402
from airflow_zorder.core.jobs.options import ClusterOptions  # noqa: E402
from airflow_zorder.core.storage import faults  # noqa: E402
from airflow_zorder.core.tables import delta_table  # noqa: E402
from spark_jobs.cluster_table import run_action, run_cluster  # noqa: E402

pytestmark = pytest.mark.spark

COLUMNS = ["a", "b", "s"]


def _batch(seed: int, rows: int) -> pa.Table:
    """Unsorted rows: a/b spread over the whole range in every file, strings longer than Delta's 32-unit prefix."""
    import random

    r = random.Random(seed)
    a = [r.randrange(0, 1_000_000) for _ in range(rows)]
    return pa.table(
        {
            "a": pa.array(a, pa.int64()),
            "b": pa.array([r.random() * 1000 for _ in range(rows)], pa.float64()),
            "s": pa.array([f"{'customer-name-padding-' * 2}{x:07d}" for x in a]),
            "ts": pa.array(
                [dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=x) for x in a],
                pa.timestamp("us", tz="UTC"),
            ),
            "day": pa.array([f"2024-01-0{1 + (x % 2)}" for x in a]),
        }
    )


def _write(uri: str, partitioned: bool) -> None:
    """Unsorted appends around a delete: the delete's removed files stay on disk, as before a VACUUM."""
    for i in range(6):
        deltalake.write_deltalake(uri, _batch(i, 4000), mode="append", partition_by=["day"] if partitioned else None)
        if i == 2:
            deltalake.DeltaTable(uri).delete("a < 50000")


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("delta_src")
    out = {}
    for name, partitioned in (("partitioned", True), ("flat", False)):
        out[name] = str(base / name)
        _write(out[name], partitioned)
    return out


@pytest.fixture
def table(tmp_path, sources, request) -> str:
    dst = str(tmp_path / "t")
    shutil.copytree(sources[getattr(request, "param", "partitioned")], dst)
    return dst


def rows(uri: str, version: int | None = None) -> pa.Table:
    t = pa.table(deltalake.DeltaTable(uri, version=version).to_pyarrow_dataset().to_table())
    names = sorted(t.column_names)
    return t.select(names).sort_by([(c, "ascending") for c in names])


def checksum(t: pa.Table) -> str:
    h = hashlib.sha256()
    for batch in t.to_batches():
        for col in batch.columns:
            h.update(str(col.to_pylist()).encode())
    return h.hexdigest()


def files_on_disk(uri: str) -> set[str]:
    out = set()
    for d, dirs, files in os.walk(uri):
        dirs[:] = [x for x in dirs if not x.startswith(("_", "."))]
        out.update(os.path.relpath(os.path.join(d, f), uri) for f in files if not f.startswith((".", "_")))
    return out


def log_files(uri: str) -> set[str]:
    return {os.path.relpath(p, uri) for p in deltalake.DeltaTable(uri).file_uris()}


def cluster(spark, uri: str, **kw) -> dict:
    return run_cluster(spark, ClusterOptions(table=uri, columns=COLUMNS, num_files=kw.pop("num_files", 2), **kw))


@pytest.mark.parametrize("table", ["partitioned", "flat"], indirect=True)
def test_a_delta_table_clusters_in_one_commit_with_the_same_rows(spark, table):
    before, v_before = rows(table), deltalake.DeltaTable(table).version()
    old_files = log_files(table)
    stale = files_on_disk(table) - old_files
    assert stale, "the fixture's delete left removed-but-not-vacuumed files"
    result = cluster(spark, table)
    assert result["status"] == "clustered" and result["kind"] == "delta"
    assert result["delta"] == {"read_version": v_before, "version": v_before + 1}
    after = rows(table)
    assert checksum(after) == checksum(before) and after.num_rows == before.num_rows > 0
    assert result["before"]["rows"] == result["after"]["rows"] == before.num_rows  # stale files were not read
    new_files = log_files(table)
    assert not new_files & old_files and all("-zorder-" in f for f in new_files)
    assert len(new_files) == 2 * len(result["partitions"])
    # history, time travel, and the stale files never came back
    entry = deltalake.DeltaTable(table).history(1)[0]
    meta = json.loads(entry[dc.METADATA_KEY])
    assert meta["run_id"] == result["run_id"] and meta["columns"] == COLUMNS and meta["curve"] == "zorder"
    assert meta["files_before"] == len(old_files) and meta["files_after"] == len(new_files)
    assert checksum(rows(table, version=v_before)) == checksum(before)
    assert files_on_disk(table) == stale | old_files | new_files  # nothing else left in the table directory
    # the log's new files carry per-file stats; Delta readers prune with them
    t = deltalake.DeltaTable(table)
    adds = pa.table(t.get_add_actions(flatten=True))
    assert adds.column("num_records").to_pylist() and None not in adds.column("num_records").to_pylist()
    assert "min.a" in adds.column_names and "max.s" in adds.column_names
    assert os.path.isdir(os.path.join(table, "_zorder", "journal"))
    # the table's schema is kept; timestamps are INT64 microseconds, never INT96
    assert deltalake.DeltaTable(table).schema() == deltalake.DeltaTable(table, version=v_before).schema()
    import pyarrow.parquet as pq

    for f in new_files:
        md = pq.read_metadata(os.path.join(table, f))
        assert md.schema.to_arrow_schema().field("ts").type == pa.timestamp("us", tz="UTC")
        assert md.schema.column(md.schema.names.index("ts")).physical_type == "INT64"


def test_clustering_narrows_each_files_range(spark, table):
    def widest(uri):
        adds = pa.table(deltalake.DeltaTable(uri).get_add_actions(flatten=True)).to_pylist()
        return max(r["max.a"] - r["min.a"] for r in adds)

    before = widest(table)
    cluster(spark, table, num_files=8)
    assert widest(table) < before / 2


def _writer_script(uri: str, what: str) -> str:
    return f"import deltalake, pyarrow as pa\nuri = {uri!r}\n" + (
        "deltalake.write_deltalake(uri, pa.table({'a': pa.array([7, 8], pa.int64()), 'b': [1.0, 2.0], "
        "'s': ['x', 'y'], 'ts': pa.array([None, None], pa.timestamp('us', tz='UTC')), "
        "'day': ['2024-01-01', '2024-01-02']}), mode='append', partition_by=['day'])\n"
        if what == "append"
        else "deltalake.DeltaTable(uri).delete('a > 900000')\n"
    )


def _writer_at(point: str, uri: str, what: str, monkeypatch) -> list[str]:
    """Run a deltalake writer in another process when the job reaches ``point`` (once)."""
    ran: list[str] = []
    real = faults.fault_point

    def hook(name: str) -> None:
        if name == point and not ran:
            subprocess.run([sys.executable, "-c", _writer_script(uri, what)], check=True)
            ran.append(name)
        real(name)

    monkeypatch.setattr(delta_table, "fault_point", hook)
    return ran


def test_an_append_committed_during_the_run_keeps_its_rows(spark, table, monkeypatch):
    before = rows(table)
    ran = _writer_at("delta_before_commit", table, "append", monkeypatch)
    result = cluster(spark, table)
    assert ran and result["status"] == "clustered"
    after = rows(table)
    assert after.num_rows == before.num_rows + 2
    assert sorted(x for x in after.column("a").to_pylist() if x in (7, 8)) == [7, 8]
    assert result["delta"]["version"] == result["delta"]["read_version"] + 2  # the append went in between


def test_a_delete_committed_during_the_run_fails_it_and_removes_its_files(spark, table, monkeypatch):
    ran = _writer_at("delta_before_commit", table, "delete", monkeypatch)
    files_before = files_on_disk(table)
    with pytest.raises(ConcurrentChangeError, match="another writer changed files") as err:
        cluster(spark, table)
    assert ran and "were deleted" in str(err.value)
    # the table is as the other writer left it: its delete, and no file of ours
    t = deltalake.DeltaTable(table)
    assert t.history(1)[0]["operation"] == "DELETE"
    assert max(rows(table).column("a").to_pylist()) <= 900000
    placed = files_on_disk(table) - files_before
    assert placed and not any("zorder" in f for f in placed)  # only the delete's own new files
    assert not any("zorder" in f for f in log_files(table))
    journals = os.listdir(os.path.join(table, "_zorder", "journal"))
    states = {json.load(open(os.path.join(table, "_zorder", "journal", j)))["state"] for j in journals}
    assert states == {"rolled_back"}


@pytest.mark.parametrize("point", ["after_stage", *faults.DELTA_FAULT_POINTS])
def test_a_crash_at_each_phase_loses_and_duplicates_nothing(spark, table, monkeypatch, point):
    """In-process crash (SimulatedCrash): journal and files stay as a kill leaves them; recover resolves them."""
    before, v_before = rows(table), deltalake.DeltaTable(table).version()
    old_files = files_on_disk(table)
    monkeypatch.setenv(faults.FAULT_ENV, point)
    monkeypatch.setenv(faults.FAULT_MODE_ENV, "raise")
    faults.reset_fault_counters()
    with pytest.raises(faults.SimulatedCrash):
        cluster(spark, table)
    monkeypatch.delenv(faults.FAULT_ENV)
    assert checksum(rows(table)) == checksum(before)  # a reader sees the same rows at any moment
    committed = point == "delta_after_commit"
    assert deltalake.DeltaTable(table).version() == v_before + int(committed)
    out = run_action(spark, ClusterOptions(table=table, columns=COLUMNS, action="recover"))
    assert out["status"] == "recovered" and len(out["runs"]) == 1
    assert checksum(rows(table)) == checksum(before)
    left = files_on_disk(table) - old_files
    assert left == (log_files(table) - old_files if committed else set())  # uncommitted files are gone
    staging = os.path.join(table, "_zorder", "staging")
    assert not os.path.isdir(staging) or not [f for _, _, fs in os.walk(staging) for f in fs]
    again = cluster(spark, table)  # the table is usable again
    assert again["status"] == "clustered" and checksum(rows(table)) == checksum(before)


def test_deletion_vectors_are_refused_and_the_table_is_untouched(spark, tmp_path):
    uri = str(tmp_path / "dv")
    deltalake.write_deltalake(uri, _batch(1, 100), configuration={"delta.enableDeletionVectors": "true"}, mode="append")
    before = files_on_disk(uri) | {os.path.join("_delta_log", f) for f in os.listdir(os.path.join(uri, "_delta_log"))}
    with pytest.raises(DeltaRewriteRefusedError, match="deletion vectors"):
        cluster(spark, uri)
    after = files_on_disk(uri) | {os.path.join("_delta_log", f) for f in os.listdir(os.path.join(uri, "_delta_log"))}
    assert after == before and not os.path.exists(os.path.join(uri, "_zorder"))


def test_a_directory_inside_a_delta_table_stays_refused(spark, table):
    from airflow_zorder.core.errors import ForeignTableFormatError

    with pytest.raises(ForeignTableFormatError, match="Delta"):
        cluster(spark, os.path.join(table, "day=2024-01-01"))


def test_a_real_kill_while_placing_files_then_the_next_run_recovers_and_clusters(spark, table):
    """spark-submit killed with SIGKILL (ZORDER_FAULT) half-way through placing its files in the table."""
    from table_checks import spark_submit

    before, old_files = rows(table), files_on_disk(table)
    proc = spark_submit(
        "cluster_table",
        "--table",
        table,
        "--columns",
        ",".join(COLUMNS),
        "--num-files",
        "2",
        env={faults.FAULT_ENV: "delta_mid_place:2"},
    )
    assert proc.returncode != 0 and "fault injected at 'delta_mid_place'" in proc.stdout + proc.stderr
    placed = files_on_disk(table) - old_files
    assert len(placed) == 2 and checksum(rows(table)) == checksum(before)  # invisible to Delta readers
    result = cluster(spark, table)  # takes over the dead run's lock, removes its files, then clusters
    assert result["status"] == "clustered" and any("interrupted" in m for m in result["messages"])
    assert checksum(rows(table)) == checksum(before)
    assert not placed & files_on_disk(table)
    assert files_on_disk(table) - old_files == log_files(table) - old_files


def test_a_failed_commit_is_reported_and_the_next_run_cleans_up(spark, table, monkeypatch):
    """The log's store failing at the commit (here: delta-rs raising an I/O error) fails the run clearly."""
    before, old_files = rows(table), files_on_disk(table)

    def broken(*a, **kw):
        raise OSError("the object store is unreachable")

    monkeypatch.setattr(dc, "commit_rewrite", broken)
    with pytest.raises(CommitError, match="committing to the Delta log of .* failed: OSError") as err:
        cluster(spark, table)
    assert "--action recover" in str(err.value)
    assert checksum(rows(table)) == checksum(before) and len(files_on_disk(table) - old_files) == 4
    monkeypatch.undo()
    out = run_action(spark, ClusterOptions(table=table, columns=COLUMNS, action="recover"))
    assert len(out["runs"]) == 1 and files_on_disk(table) == old_files
