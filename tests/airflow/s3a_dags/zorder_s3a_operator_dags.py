"""The DAG run by tests/airflow/test_s3a_operators.py with dag.test(): a table on S3 (a local moto server) through
``s3a://``, as a user runs it: the stats job and the clustering job by spark-submit on a local master (the connector
jars from ``make jars``), S3A's credentials from an ordinary ``aws`` connection (``storage_conn_id``), and the sensor
deciding from the stats on S3 through the same connection. The table comes from the run conf."""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG

from airflow_zorder.operators import SparkClusterTableOperator, SparkCollectFileStatsOperator
from airflow_zorder.sensors import FileOverlapSensor

PARAMS = {"table": ""}
AWS_CONN_ID, SPARK_CONN_ID = "aws_s3a_lake", "spark_s3a_local"  # defined by the test as AIRFLOW_CONN_ variables
COLUMNS = ["a", "b"]

with DAG(
    "zorder_s3a_operators",
    schedule=None,
    start_date=dt.datetime(2026, 1, 1),
    params=PARAMS,
    catchup=False,
    tags=["zorder-tests"],
) as dag:
    collect = SparkCollectFileStatsOperator(
        task_id="collect_stats",
        table="{{ params.table }}",
        clustering_columns=COLUMNS,
        conn_id=SPARK_CONN_ID,
        storage_conn_id=AWS_CONN_ID,
        conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"},
    )
    check = FileOverlapSensor(
        task_id="check_overlap",
        table="{{ params.table }}",
        conn_id=AWS_CONN_ID,
        columns=COLUMNS,
        decide_once=True,
    )
    recluster = SparkClusterTableOperator(
        task_id="recluster",
        table="{{ params.table }}",
        columns=COLUMNS,
        partitions="{{ ti.xcom_pull(task_ids='check_overlap')['partitions'] | tojson }}",
        incremental=False,
        num_files=4,
        conn_id=SPARK_CONN_ID,
        storage_conn_id=AWS_CONN_ID,
        stats_conn_id=AWS_CONN_ID,
        conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"},
    )
    collect >> check >> recluster
