"""DAGs run by tests/airflow/test_iceberg_watch.py with dag.test(): the sensor watches an Iceberg table through its
manifests: a pyiceberg SQL catalog configured by PYICEBERG_CATALOG__ variables (poke), or the same catalog through an
Airflow ``iceberg`` connection (deferrable: the trigger looks the connection up too). The table comes from the run conf.

A healthy table never succeeds: both sensors give up after 2 s (soft_fail: skipped)."""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG

from airflow_zorder.sensors import FileOverlapSensor

START = dt.datetime(2026, 1, 1)


def iceberg_watch_dag(dag_id: str, catalog: dict[str, str], **sensor_kwargs) -> DAG:
    with DAG(
        dag_id, schedule=None, start_date=START, params={"table": ""}, catchup=False, tags=["zorder-tests"]
    ) as dag:
        FileOverlapSensor(
            task_id="watch",
            table="{{ params.table }}",
            **catalog,
            columns="a,b",
            poke_interval=0.5,
            **sensor_kwargs,
        )
    return dag


poke = iceberg_watch_dag(
    "zorder_iceberg_poke", {"iceberg_catalog": "zordertests"}, mode="poke", timeout=2, soft_fail=True
)
deferrable = iceberg_watch_dag(
    "zorder_iceberg_deferrable", {"iceberg_conn_id": "zordertests"}, deferrable=True, timeout=2, soft_fail=True
)
