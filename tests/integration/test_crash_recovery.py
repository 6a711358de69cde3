"""The clustering job's command line (its result file, a clear failure), and a real spark-submit SIGKILLed mid-swap.

Crashes at every phase are tested in-process, on the shared SparkSession, where they are cheap: a JVM per
spark-submit costs ~10 s, and a kill at a fault point is the same code path in both (``SimulatedCrash`` stands in
for SIGKILL, the journal and staged files stay as a kill leaves them):

* tests/reliability/test_kills.py::test_cluster_killed_at_every_phase_then_recovered: the job killed at
  after_begin, after_stage, before_commit_record, after_commit_record, mid_swap, after_swap and before_done, then
  recovered by the next clustering run (after_begin, mid_swap) or by ``--action recover`` (the others), rows exact;
  a second crash during the recovery (rolling back and rolling forward), and mid_cleanup;
* tests/unit/test_commit.py: the commit protocol at every fault point and every mid_swap move, crashes during
  recover, and a real SIGKILL mid-swap of a Python process;
* tests/integration/test_cluster_incremental.py: after_stage, mid_swap and after_swap of an incremental run.

Real SIGKILLs of spark-submit (the JVM and its Python driver die at once, the lock's owner is left dead):
here mid-swap in a partitioned table, recovered by the next clustering run; tests/reliability/test_kills.py
after the first staged partition, recovered by ``--action recover``, with the dead owner's lock broken;
tests/integration/test_cluster_delta.py while placing a Delta table's files.
"""

from __future__ import annotations

import json
import os
import shutil

import pyarrow.dataset as ds
import pytest
from table_checks import spark_submit

from airflow_zorder.core.jobs.options import ClusterOptions
from airflow_zorder.evaluation import sample_data
from spark_jobs import cli, cluster_table
from spark_jobs.cluster_table import run_action, run_cluster

pytestmark = pytest.mark.spark


def rows_of(root: str):
    t = ds.dataset(root, format="parquet", partitioning="hive", ignore_prefixes=["_", "."]).to_table()
    return t.sort_by([("event_id", "ascending")])


def job_args(table: str, *extra: str, result: str | None = None) -> list[str]:
    args = ["--table", table, "--columns", "user_id,product_id", "--num-files", "3", *extra]
    return [*args, *(["--result-json", result] if result else [])]


@pytest.fixture
def in_process(spark, monkeypatch):
    """The job's ``main`` (argument parsing, result file, exit code) on the shared session, which it must not stop."""
    monkeypatch.setattr(cli, "build_session", lambda app_name: spark)
    monkeypatch.setattr(spark, "stop", lambda: None)
    return spark


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("crash") / "events")
    sample_data.write_table(path, rows=20_000, files_per_partition=3, partitioned=True)
    return path


def test_the_command_line_clusters_and_writes_result(in_process, source, tmp_path):
    table = str(tmp_path / "t")
    shutil.copytree(source, table)
    before = rows_of(table)
    out = str(tmp_path / "result.json")
    code = cluster_table.main(
        job_args(table, "--curve", "hilbert", "--partitions", "day=2026-01-01,day=2026-01-03", result=out)
    )
    assert code == 0
    result = json.load(open(out))
    assert result["status"] == "clustered"
    assert [p["partition"] for p in result["partitions"]] == ["day=2026-01-01", "day=2026-01-03"]
    assert result["before"]["rows"] == result["after"]["rows"] > 0
    assert rows_of(table).equals(before)


def test_the_command_line_fails_clearly_on_a_bad_column(in_process, source, tmp_path):
    table = str(tmp_path / "t")
    shutil.copytree(source, table)
    out = str(tmp_path / "result.json")
    code = cluster_table.main(job_args(table, "--columns", "user_id,no_such_col", result=out))
    assert code == 1
    result = json.load(open(out))
    assert result["status"] == "failed" and "unknown column 'no_such_col'" in result["error"]


def test_spark_submit_killed_mid_swap_then_the_next_run_rolls_forward(spark, source, tmp_path):
    """A real crash after 7 of the swap's moves: old files half moved out to the trash; the next run finishes it."""
    table = str(tmp_path / "t")
    shutil.copytree(source, table)
    before = rows_of(table)
    proc = spark_submit("cluster_table", *job_args(table), env={"ZORDER_FAULT": "mid_swap:7"})
    assert proc.returncode != 0, "the fault point should have killed the job"
    # spark-submit relays the Python driver's stderr on its own stdout
    assert "fault injected at 'mid_swap'" in proc.stdout + proc.stderr, proc.stdout[-3000:]
    result = run_cluster(spark, ClusterOptions(table=table, columns=["user_id", "product_id"], num_files=3))
    assert result["status"] == "clustered"
    assert any("interrupted" in m for m in result["messages"])
    after = rows_of(table)
    assert after.num_rows == before.num_rows
    assert after.equals(before)
    journals = os.listdir(os.path.join(table, "_zorder", "journal"))
    states = {json.load(open(os.path.join(table, "_zorder", "journal", j)))["state"] for j in journals}
    assert states == {"done"}
    assert run_action(spark, ClusterOptions(table=table, columns=[], action="recover"))["runs"] == []
