"""DAGs run by tests/airflow/test_iceberg_watch.py with dag.test(): the sensor watches an Iceberg table through its
manifests (a pyiceberg SQL catalog configured by PYICEBERG_CATALOG__ variables). The table comes from the run conf.

A healthy table never succeeds: both sensors give up after 2 s (soft_fail: skipped)."""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG

from airflow_zorder.sensors import FileOverlapSensor

START = dt.datetime(2026, 1, 1)


def iceberg_watch_dag(dag_id: str, **sensor_kwargs) -> DAG:
    with DAG(
        dag_id, schedule=None, start_date=START, params={"table": ""}, catchup=False, tags=["zorder-tests"]
    ) as dag:
        FileOverlapSensor(
            task_id="watch",
            table="{{ params.table }}",
            iceberg_catalog="zordertests",
            columns="a,b",
            poke_interval=0.5,
            **sensor_kwargs,
        )
    return dag


poke = iceberg_watch_dag("zorder_iceberg_poke", mode="poke", timeout=2, soft_fail=True)
deferrable = iceberg_watch_dag("zorder_iceberg_deferrable", deferrable=True, timeout=2, soft_fail=True)
