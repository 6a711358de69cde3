"""DAGs run by tests/airflow/test_file_overlap_sensor.py with dag.test().

They live in a DAG bundle of their own because dag.test() in Airflow 3 only runs DAGs that were
parsed from a bundle.  The table and columns come from the run's conf (templated ``params``).
"""

from __future__ import annotations

import datetime as dt

from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG

from airflow_zorder.sensors import FileOverlapSensor

START = dt.datetime(2026, 1, 1)
PARAMS = {"table": "", "columns": "a,b"}


def units_the_job_would_rewrite(table: str, partitions: str) -> list[str]:
    """The clustering job's own --partitions parsing and partition lookup, fed the sensor's XCom (no Spark)."""
    from airflow_zorder.core.jobs.options import parse_partitions
    from airflow_zorder.core.storage.io.local import LocalFileSystem
    from airflow_zorder.core.tables.model import select_units
    from airflow_zorder.core.tables.parquet_dir import list_units

    return [u.relpath for u in select_units(list_units(LocalFileSystem(), table)[1], parse_partitions([partitions]))]


def watch_dag(dag_id: str, **sensor_kwargs) -> DAG:
    with DAG(dag_id, schedule=None, start_date=START, params=PARAMS, catchup=False, tags=["zorder-tests"]) as dag:
        watch = FileOverlapSensor(
            task_id="watch", table="{{ params.table }}", columns="{{ params.columns }}", **sensor_kwargs
        )
        recluster = PythonOperator(
            task_id="recluster",
            python_callable=units_the_job_would_rewrite,
            op_kwargs={
                "table": "{{ params.table }}",
                "partitions": "{{ ti.xcom_pull(task_ids='watch')['partitions'] | tojson }}",
            },
        )
        watch >> recluster
    return dag


poke = watch_dag("zorder_overlap_poke", mode="poke", poke_interval=0.5, timeout=60)
reschedule = watch_dag("zorder_overlap_reschedule", mode="reschedule", poke_interval=1, timeout=60)
deferrable = watch_dag("zorder_overlap_deferrable", deferrable=True, poke_interval=0.5, timeout=60)
deferrable_recheck = watch_dag(
    "zorder_overlap_deferrable_recheck", deferrable=True, poke_interval=0.5, timeout=60, min_interval_since_cluster=2
)
# neither mode nor deferrable: poke, unless [operators] default_deferrable was on when the provider was imported
default_mode = watch_dag("zorder_overlap_default_mode", poke_interval=0.5, timeout=60)
soft_fail = watch_dag("zorder_overlap_soft_fail", mode="poke", poke_interval=0.5, timeout=1.5, soft_fail=True)
deferrable_soft_fail = watch_dag(
    "zorder_overlap_deferrable_soft_fail", deferrable=True, poke_interval=0.5, timeout=1.5, soft_fail=True
)
decide_once = watch_dag("zorder_overlap_decide_once", decide_once=True)
