"""DAGs run by tests/airflow/test_delta_watch.py with dag.test(): the sensor watches a Delta table through its
log (local, or on S3 through an ``aws`` connection).  Table and connection come from the run conf.

A healthy table never succeeds: ``delta_poke`` and ``delta_deferrable`` give up after 2 s (soft_fail: skipped);
``delta_deferrable_wait`` waits up to a minute for a commit that degrades the table."""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG

from airflow_zorder.sensors import FileOverlapSensor

START = dt.datetime(2026, 1, 1)
PARAMS = {"table": "", "conn_id": ""}


def delta_watch_dag(dag_id: str, **sensor_kwargs) -> DAG:
    with DAG(dag_id, schedule=None, start_date=START, params=PARAMS, catchup=False, tags=["zorder-tests"]) as dag:
        FileOverlapSensor(
            task_id="watch",
            table="{{ params.table }}",
            conn_id="{{ params.conn_id }}",
            columns="a,b",
            poke_interval=0.5,
            **sensor_kwargs,
        )
    return dag


poke = delta_watch_dag("zorder_delta_poke", mode="poke", timeout=2, soft_fail=True)
deferrable = delta_watch_dag("zorder_delta_deferrable", deferrable=True, timeout=2, soft_fail=True)
deferrable_wait = delta_watch_dag("zorder_delta_deferrable_wait", deferrable=True, timeout=60)
