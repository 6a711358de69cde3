"""The job spec run by plain ``spark-submit``, as a launcher outside Airflow would run it, against the project's
operator on an identical copy of the table; then ``SparkJobResultSensor`` reads that run's result into XCom in a
real ``dag.test()`` (real SQLite metadata DB).

Real parts: pyspark's own ``bin/spark-submit`` with ``--master local[2]``, the operator's own spark-submit, the
stats store on local disk (as a ``file:`` URI, so the job writes its result through the stats-store IO).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from dag_bundles import dag_module

from airflow_zorder import spark_job_spec
from airflow_zorder.core.jobs.job_results import read_result, result_location
from airflow_zorder.evaluation.sample_data import write_table

pytestmark = pytest.mark.spark

COLUMNS = ["user_id", "product_id"]
ROWS = 2000
DAG_FILE = Path(__file__).parent / "job_result_dags" / "zorder_job_result_dags.py"
SPARK_CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"}


def spark_submit() -> str:
    import importlib.util

    return str(Path(importlib.util.find_spec("pyspark").origin).parent / "bin" / "spark-submit")


def submit(spec: dict, log: Path) -> int:
    """Run the spec the way any launcher would: entry point, py-files, conf and arguments, nothing else."""
    cmd = [spark_submit(), "--master", "local[2]", "--py-files", ",".join(spec["py_files"])]
    for key, value in {**spec["conf"], **SPARK_CONF}.items():
        cmd += ["--conf", f"{key}={value}"]
    cmd += [spec["entry_point"], *spec["arguments"]]
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    with open(log, "wb") as out:
        return subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, timeout=600, check=False).returncode


def rows_of(table: str) -> list[dict]:
    t = ds.dataset(table, format="parquet", partitioning="hive").to_table()
    return t.sort_by("event_id").select(sorted(t.column_names)).to_pylist()


@pytest.fixture(scope="module")
def runs(tmp_path_factory, monkeypatch_module):
    """The same table twice: one clustered by the spec through spark-submit, one by SparkClusterTableOperator."""
    from airflow_zorder.operators import SparkClusterTableOperator

    base = tmp_path_factory.mktemp("spec")
    tables = {name: str(base / name) for name in ("by_spec", "by_operator")}
    for table in tables.values():
        write_table(table, rows=ROWS, files_per_partition=4)
    original = rows_of(tables["by_spec"])
    params = dict(columns=COLUMNS, curve="hilbert", num_files=2)
    stats = {name: f"file://{base}/stats_{name}" for name in tables}

    spec = spark_job_spec("cluster", table=tables["by_spec"], stats_location=stats["by_spec"], **params)
    code = submit(spec, base / "spark-submit.log")
    assert code == 0, (base / "spark-submit.log").read_text()[-3000:]

    monkeypatch_module.setenv("AIRFLOW_CONN_SPARK_LOCAL", '{"conn_type": "spark", "host": "local[2]"}')
    op = SparkClusterTableOperator(
        task_id="cluster",
        table=tables["by_operator"],
        stats_location=stats["by_operator"],
        conn_id="spark_local",
        conf=dict(SPARK_CONF),
        **params,
    )
    return {"spec": spec, "tables": tables, "original": original, "operator": op.execute({}), "stats": stats}


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_the_spec_run_by_spark_submit_matches_the_operator(runs):
    spec = runs["spec"]
    assert spec["result_location"] == result_location(runs["stats"]["by_spec"], spec["run_id"])
    got = read_result(spec["stats_location"], spec["run_id"])
    want = runs["operator"]
    assert got is not None, f"no result at {spec['result_location']}"
    assert got["status"] == want["status"] == "clustered"
    assert got["run_id"] == spec["run_id"] and got["table"] == runs["tables"]["by_spec"]
    for key in ("curve", "columns", "mode"):
        assert got[key] == want[key], key
    for side in ("before", "after"):
        for key in ("rows", "files"):
            assert got[side][key] == want[side][key], (side, key)
    assert got["before"]["rows"] == ROWS and got["after"]["files"] < got["before"]["files"]
    assert sorted(p["partition"] for p in got["partitions"]) == sorted(p["partition"] for p in want["partitions"])
    # the rewritten tables hold the same rows, and the original ones
    assert rows_of(runs["tables"]["by_spec"]) == rows_of(runs["tables"]["by_operator"]) == runs["original"]


def test_the_sensor_hands_the_result_to_the_rest_of_the_dag(runs, airflow_db):
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    spec = runs["spec"]
    with dag_module(DAG_FILE, "zorder-job-result-tests") as module:
        conf = {"table": runs["tables"]["by_spec"], "run_id": spec["run_id"], "stats_location": spec["stats_location"]}
        dr = module.dag.test(run_conf=conf)
    with create_session() as session:
        states = {ti.task_id: str(ti.state) for ti in dr.get_task_instances(session=session)}
        rows = session.scalars(
            select(XComModel).where(
                XComModel.dag_id == dr.dag_id, XComModel.run_id == dr.run_id, XComModel.key == "return_value"
            )
        ).all()
        values = {r.task_id: XComModel.deserialize_value(r) for r in rows}
    assert states == {"wait": "success", "use": "success"}
    assert values["wait"] == read_result(spec["stats_location"], spec["run_id"])
    assert values["use"] == values["wait"]["after"]["files"]


def test_the_sensor_waits_for_a_missing_result_and_fails_with_the_jobs_reason(tmp_path):
    """Poked directly (no DAG run needed): absent -> not done; a failed run -> SparkJobFailed with its reason."""
    from airflow_zorder.operators.spark_job import SparkJobFailed
    from airflow_zorder.sensors import SparkJobResultSensor
    from spark_jobs.cli import emit_result, failure_result

    table = str(tmp_path / "events")
    sensor = SparkJobResultSensor(task_id="wait", table=table, run_id="r-9")
    assert sensor.poke({}).is_done is False
    failed = failure_result(table, "r-9", ValueError("column 'nope' is not in the table"))
    emit_result(failed, result_location(f"{table}/_zorder/stats", "r-9"))
    with pytest.raises(
        SparkJobFailed, match=r"run r-9 failed for table .*column 'nope' is not in the table \(ValueError\)"
    ):
        sensor.poke({})
    with pytest.raises(ValueError, match="'db.events' is a catalog table name"):
        SparkJobResultSensor(task_id="w", table="db.events", run_id="r").poke({})
