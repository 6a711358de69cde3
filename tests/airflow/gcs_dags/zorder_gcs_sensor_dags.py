"""DAGs run by tests/airflow/test_gcs_store.py with dag.test(): the sensor reads a table's stats on GCS (a local
fake-gcs-server) through an ordinary ``google_cloud_platform`` connection.  Table and connection come from the run
conf.

``deferrable_healthy`` defers on a healthy table: its trigger then reads the store (in the triggerer) until it gives
up after 3 s."""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG

from airflow_zorder.sensors import FileOverlapSensor

START = dt.datetime(2026, 1, 1)
PARAMS = {"table": "", "conn_id": ""}


def gcs_watch_dag(dag_id: str, timeout: float = 60, **sensor_kwargs) -> DAG:
    with DAG(dag_id, schedule=None, start_date=START, params=PARAMS, catchup=False, tags=["zorder-tests"]) as dag:
        FileOverlapSensor(
            task_id="watch",
            table="{{ params.table }}",
            conn_id="{{ params.conn_id }}",
            columns="a,b",
            poke_interval=0.5,
            timeout=timeout,
            **sensor_kwargs,
        )
    return dag


poke = gcs_watch_dag("zorder_gcs_poke", mode="poke")
deferrable = gcs_watch_dag("zorder_gcs_deferrable", deferrable=True)
# a healthy table never succeeds: the trigger polls the store until the 3 s timeout (soft_fail: skipped)
deferrable_healthy = gcs_watch_dag("zorder_gcs_deferrable_healthy", timeout=3, deferrable=True, soft_fail=True)
