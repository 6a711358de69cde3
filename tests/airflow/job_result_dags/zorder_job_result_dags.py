"""DAGs run by tests/airflow/test_job_spec_submit.py with dag.test(): a job ran outside Airflow (from
``spark_job_spec``), and ``SparkJobResultSensor`` hands its result to the rest of the DAG.

They live in a DAG bundle of their own because dag.test() in Airflow 3 only runs DAGs parsed from a bundle.
"""

from __future__ import annotations

import datetime as dt

from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG

from airflow_zorder.sensors import SparkJobResultSensor

PARAMS = {"table": "", "run_id": "", "stats_location": ""}


def files_after(result: dict) -> int:
    """What a downstream task does with the result: here, read one figure from it."""
    return int(result["after"]["files"])


with DAG("zorder_job_result", schedule=None, start_date=dt.datetime(2026, 1, 1), params=PARAMS, catchup=False) as dag:
    wait = SparkJobResultSensor(
        task_id="wait",
        table="{{ params.table }}",
        run_id="{{ params.run_id }}",
        stats_location="{{ params.stats_location }}",
        mode="poke",
        poke_interval=0.5,
        timeout=30,
    )
    use = PythonOperator(task_id="use", python_callable=files_after, op_args=[wait.output])
    wait >> use
