"""Real spark-submit runs of the clustering job, killed (SIGKILL) at each phase of the commit, then recovered."""

from __future__ import annotations

import json
import os
import shutil

import pyarrow.dataset as ds
import pytest
from table_checks import spark_submit

from airflow_zorder.core.jobs.options import ClusterOptions
from airflow_zorder.evaluation import sample_data
from spark_jobs.cluster_table import run_action, run_cluster

pytestmark = pytest.mark.spark


def rows_of(root: str):
    t = ds.dataset(root, format="parquet", partitioning="hive", ignore_prefixes=["_", "."]).to_table()
    return t.sort_by([("event_id", "ascending")])


def submit(table: str, *extra: str, env: dict[str, str] | None = None, result: str | None = None):
    args = ["--table", table, "--columns", "user_id,product_id", "--num-files", "3", *extra]
    return spark_submit("cluster_table", *args, *(["--result-json", result] if result else []), env=env)


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("crash") / "events")
    sample_data.write_table(path, rows=20_000, files_per_partition=3, partitioned=True)
    return path


@pytest.fixture(scope="module")
def flat_source(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("crash") / "flat")
    sample_data.write_table(path, rows=20_000, files_per_partition=6, partitioned=False)
    return path


def test_spark_submit_clusters_and_writes_result(source, tmp_path):
    table = str(tmp_path / "t")
    shutil.copytree(source, table)
    before = rows_of(table)
    out = str(tmp_path / "result.json")
    proc = submit(table, "--curve", "hilbert", "--partitions", "day=2026-01-01,day=2026-01-03", result=out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.load(open(out))
    assert result["status"] == "clustered"
    assert [p["partition"] for p in result["partitions"]] == ["day=2026-01-01", "day=2026-01-03"]
    assert result["before"]["rows"] == result["after"]["rows"] > 0
    assert rows_of(table).equals(before)


def test_spark_submit_bad_column_fails_clearly(source, tmp_path):
    table = str(tmp_path / "t")
    shutil.copytree(source, table)
    out = str(tmp_path / "result.json")
    proc = submit(table, "--columns", "user_id,no_such_col", result=out)
    assert proc.returncode == 1
    result = json.load(open(out))
    assert result["status"] == "failed" and "unknown column 'no_such_col'" in result["error"]


@pytest.mark.parametrize(
    "fault,how,layout",
    [
        ("after_begin", "rerun", "flat"),
        ("after_stage", "recover", "flat"),
        ("before_commit_record", "rerun", "flat"),
        ("after_commit_record", "recover", "flat"),
        ("mid_swap:2", "rerun", "flat"),
        ("mid_swap:7", "recover", "partitioned"),
        ("after_swap", "rerun", "flat"),
    ],
)
def test_kill_at_each_phase_then_recover_keeps_exact_rows(spark, source, flat_source, tmp_path, fault, how, layout):
    table = str(tmp_path / "t")
    shutil.copytree(source if layout == "partitioned" else flat_source, table)
    before = rows_of(table)
    proc = submit(table, env={"ZORDER_FAULT": fault})
    assert proc.returncode != 0, "the fault point should have killed the job"
    point = fault.split(":")[0]
    # spark-submit relays the Python driver's stderr on its own stdout
    assert f"fault injected at '{point}'" in proc.stdout + proc.stderr, proc.stdout[-3000:]
    if how == "rerun":
        result = run_cluster(spark, ClusterOptions(table=table, columns=["user_id", "product_id"], num_files=3))
        assert result["status"] == "clustered"
        assert any("interrupted" in m for m in result["messages"])
    else:
        result = run_action(spark, ClusterOptions(table=table, columns=[]), "recover")
        assert result["status"] == "recovered" and len(result["runs"]) == 1
    after = rows_of(table)
    assert after.num_rows == before.num_rows
    assert after.equals(before)
    journals = os.listdir(os.path.join(table, "_zorder", "journal"))
    states = {json.load(open(os.path.join(table, "_zorder", "journal", j)))["state"] for j in journals}
    assert states <= {"done", "rolled_back"}
