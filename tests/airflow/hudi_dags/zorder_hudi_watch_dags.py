"""DAGs run by tests/airflow/test_hudi_watch.py with dag.test(): the sensor watches a Hudi table through its timeline
(the latest file slices, their base files' footers; no Spark). The table comes from the run conf; a healthy table
never succeeds: both DAGs give up after 2 s (soft_fail: skipped)."""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG

from airflow_zorder.sensors import FileOverlapSensor

START = dt.datetime(2026, 1, 1)


def hudi_watch_dag(dag_id: str, **sensor_kwargs) -> DAG:
    with DAG(
        dag_id, schedule=None, start_date=START, params={"table": ""}, catchup=False, tags=["zorder-tests"]
    ) as dag:
        FileOverlapSensor(
            task_id="watch", table="{{ params.table }}", columns="user_id,product", poke_interval=0.5, **sensor_kwargs
        )
    return dag


poke = hudi_watch_dag("zorder_hudi_poke", mode="poke", timeout=2, soft_fail=True)
deferrable = hudi_watch_dag("zorder_hudi_deferrable", deferrable=True, timeout=2, soft_fail=True)
