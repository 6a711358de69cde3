"""The DAG run by tests/airflow/test_lineage.py with dag.test() (a DAG bundle of its own: Airflow 3 runs only
DAGs parsed from one).  Collect stats, let the sensor decide once, re-cluster what it listed; the table comes
from the run's conf, the Spark connection is ``spark_lineage``."""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG

from airflow_zorder.operators import SparkClusterTableOperator, SparkCollectFileStatsOperator
from airflow_zorder.sensors import FileOverlapSensor

COLUMNS = ["user_id", "product_id"]
SPARK = {"conn_id": "spark_lineage", "conf": {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"}}

with DAG(
    "zorder_lineage",
    schedule=None,
    start_date=dt.datetime(2026, 1, 1),
    params={"table": ""},
    catchup=False,
    tags=["zorder-tests"],
) as dag:
    collect = SparkCollectFileStatsOperator(
        task_id="collect_stats", table="{{ params.table }}", clustering_columns=COLUMNS, **SPARK
    )
    check = FileOverlapSensor(
        task_id="check_overlap", table="{{ params.table }}", columns=COLUMNS, decide_once=True, incremental_plan=False
    )
    recluster = SparkClusterTableOperator(
        task_id="recluster",
        table="{{ params.table }}",
        columns=COLUMNS,
        curve="hilbert",
        partitions="{{ ti.xcom_pull(task_ids='check_overlap')['partitions'] | tojson }}",
        num_files=2,
        **SPARK,
    )
    collect >> check >> recluster
