"""DAGs run by tests/airflow/test_azure_store.py with dag.test(): the sensor reads a table's stats on Azure Blob
(a local Azurite) through an ordinary ``wasb`` connection.  Table and connection come from the run conf."""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG

from airflow_zorder.sensors import FileOverlapSensor

START = dt.datetime(2026, 1, 1)
PARAMS = {"table": "", "conn_id": ""}


def azure_watch_dag(dag_id: str, **sensor_kwargs) -> DAG:
    with DAG(dag_id, schedule=None, start_date=START, params=PARAMS, catchup=False, tags=["zorder-tests"]) as dag:
        FileOverlapSensor(
            task_id="watch",
            table="{{ params.table }}",
            conn_id="{{ params.conn_id }}",
            columns="a,b",
            poke_interval=0.5,
            timeout=60,
            **sensor_kwargs,
        )
    return dag


poke = azure_watch_dag("zorder_azure_poke", mode="poke")
deferrable = azure_watch_dag("zorder_azure_deferrable", deferrable=True)
deferrable_wait = azure_watch_dag("zorder_azure_deferrable_wait", deferrable=True)  # waits for a degrading commit
