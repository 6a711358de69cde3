"""Beyond local mode: a real Spark standalone cluster (Master + one 1-core Worker started from pyspark's own
``bin/spark-class`` on 127.0.0.1) runs both operators' jobs through ``spark://127.0.0.1:PORT``.

Evidence that the work ran on the cluster and not in local mode: the application registered with the
Master (``app-...`` id from spark-submit's log) and the Worker's work directory holds that application's
executor. Skipped only when no local port can be bound.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from loopback import free_port

from airflow_zorder.evaluation.layout_report import point_query_report
from airflow_zorder.evaluation.sample_data import write_table
from airflow_zorder.operators import SparkClusterTableOperator, SparkCollectFileStatsOperator

pytestmark = pytest.mark.spark

COLUMNS = ["user_id", "product_id"]


def spark_class() -> str:
    import importlib.util

    return str(Path(importlib.util.find_spec("pyspark").origin).parent / "bin" / "spark-class")


def wait_for(path: Path, text: str, proc: subprocess.Popen, timeout: float = 90) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.3)
    log = path.read_text(errors="replace")[-3000:] if path.exists() else "(no log)"
    raise AssertionError(f"{text!r} not seen in {path.name} (exit {proc.poll()}):\n{log}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Master and Worker in their own process groups; both groups are killed at teardown."""
    try:
        port, master_ui, worker_ui = free_port(), free_port(), free_port()
    except OSError as exc:
        pytest.skip(f"cannot bind a local port for the Spark standalone cluster: {exc}")
    base = tmp_path_factory.mktemp("standalone")
    env = {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_NO_DAEMONIZE": "1",
        "PYSPARK_PYTHON": sys.executable,
    }
    procs: list[subprocess.Popen] = []

    def start(name: str, *args: str) -> tuple[subprocess.Popen, Path]:
        log = base / f"{name}.log"
        proc = subprocess.Popen(
            [spark_class(), *args], stdout=open(log, "w"), stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        procs.append(proc)
        return proc, log

    try:
        master, master_log = start(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(master_ui),
        )
        wait_for(master_log, "I have been elected leader", master)
        url = f"spark://127.0.0.1:{port}"
        work = base / "work"
        worker, worker_log = start(
            "worker",
            "org.apache.spark.deploy.worker.Worker",
            url,
            "--host",
            "127.0.0.1",
            "--cores",
            "1",
            "--memory",
            "1g",
            "--webui-port",
            str(worker_ui),
            "--work-dir",
            str(work),
        )
        wait_for(worker_log, "Successfully registered with master", worker)
        yield {"port": port, "url": url, "work": work, "base": base}
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=30)


def test_operators_run_on_a_standalone_cluster(cluster, monkeypatch):
    table = str(cluster["base"] / "events")
    write_table(table, rows=2000, files_per_partition=4)
    before = point_query_report(table, COLUMNS, n_values=200, seed=5)
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_STANDALONE",
        f'{{"conn_type": "spark", "host": "spark://127.0.0.1", "port": {cluster["port"]}}}',
    )
    common = dict(
        conn_id="spark_standalone",
        total_executor_cores=1,
        executor_memory="512m",
        driver_memory="512m",
        conf={"spark.pyspark.python": sys.executable, "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"},
    )

    stats = SparkCollectFileStatsOperator(task_id="stats", table=table, clustering_columns=COLUMNS, **common)
    got = stats.execute({})
    assert got["status"] == "ok" and got["files_total"] == 16 and got["rows_total"] == 2000
    assert got["spark"]["master"] == cluster["url"]
    assert got["spark"]["application_id"].startswith("app-")

    op = SparkClusterTableOperator(
        task_id="cluster",
        table=table,
        columns=COLUMNS,
        curve="zorder",
        num_files=4,
        partitions=["day=2026-01-02", "day=2026-01-03"],
        **common,
    )
    result = op.execute({})
    assert result["status"] == "clustered"
    assert sorted(p["partition"] for p in result["partitions"]) == ["day=2026-01-02", "day=2026-01-03"]
    assert result["before"]["rows"] == result["after"]["rows"] > 0
    app_id = result["spark"]["application_id"]
    assert app_id.startswith("app-") and app_id != got["spark"]["application_id"]
    # the executors ran on the Worker: its work directory has both applications' executor logs
    apps = {p.name for p in cluster["work"].iterdir()}
    assert {app_id, got["spark"]["application_id"]} <= apps
    assert any((cluster["work"] / app_id).glob("*/stderr"))

    rows = ds.dataset(table, format="parquet", partitioning="hive").count_rows()
    assert rows == 2000
    after = point_query_report(table, COLUMNS, n_values=200, seed=5)
    assert after["fractions"]["product_id"] < before["fractions"]["product_id"]
