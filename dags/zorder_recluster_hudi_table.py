"""Keep one Apache Hudi table clustered: decide from its timeline, re-cluster with Hudi's clustering on our plan.

    check_overlap -> recluster -> measure_after -> compare

A Hudi table needs no stats job: ``check_overlap`` (FileOverlapSensor, ``decide_once``) reads the latest file slices
of the latest completed instant with hudi-rs and their base files' footers, and skips the rest of the run unless
file overlap warrants re-clustering; its XCom carries the partitions to re-cluster. ``recluster`` runs Hudi's own
clustering (``CALL run_clustering``) on those partitions with this DAG's columns, curve and file size: Hudi commits
one ``replacecommit``, which its readers, cleaner, archiver and rollback know. ``measure_after`` evaluates the new
instant, and ``compare`` prints the before/after table.

Configuration (edit here, or set the environment variable): the table (``ZORDER_HUDI_TABLE``, default the demo's
``.demo/events_hudi`` next to this folder), its clustering columns and curve, and the spark-submit of a Spark line
that has Hudi's bundle (``ZORDER_HUDI_SPARK_SUBMIT``; default ``.venv-hudi/bin/spark-submit`` made by
``make hudi-env``, Spark 3.5.8: on a ``local`` master the operator adds that line's bundle; on a cluster, install the
bundle of its Spark line). Run parameters: ``target_file_size`` (the plan's too). See docs/hudi.md.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pendulum
from airflow.sdk import DAG, Asset, task

from airflow_zorder.operators import SparkClusterTableOperator
from airflow_zorder.operators.run_params import run_params
from airflow_zorder.sensors.file_overlap import FileOverlapSensor

REPO = Path(__file__).resolve().parents[1]
TABLE = os.environ.get("ZORDER_HUDI_TABLE") or str(REPO / ".demo" / "events_hudi")
SPARK_SUBMIT = os.environ.get("ZORDER_HUDI_SPARK_SUBMIT") or str(REPO / ".venv-hudi" / "bin" / "spark-submit")
COLUMNS = ["user_id", "product_id"]
CURVE = "hilbert"
SPARK_CONN_ID = "spark_default"
SPARK_CONF = {"spark.sql.shuffle.partitions": "8"}  # small tables; raise for real ones

TABLE_ASSET = Asset(name=f"zorder-table:{TABLE}", uri=Path(TABLE).absolute().as_uri() if "://" not in TABLE else TABLE)


with DAG(
    dag_id="zorder_recluster_hudi_table",
    description="Re-cluster the degraded partitions of one Apache Hudi table with Hudi's clustering on our plan",
    schedule="@daily",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,  # one clustering run per table at a time (the job also locks the table)
    tags=["zorder", "hudi"],
    params=run_params("target_file_size"),
    doc_md=__doc__,
) as dag:
    check = FileOverlapSensor(
        task_id="check_overlap",
        table=TABLE,
        columns=COLUMNS,
        decide_once=True,  # the schedule is the poll: decide once per run, skip the rest unless degraded
        target_file_size="{{ params.target_file_size }}",
    )

    recluster = SparkClusterTableOperator(
        task_id="recluster",
        table=TABLE,
        columns=COLUMNS,
        partitions="{{ ti.xcom_pull(task_ids='check_overlap')['partitions'] | tojson }}",
        curve=CURVE,
        target_file_size="{{ params.target_file_size }}",
        conn_id=SPARK_CONN_ID,
        spark_binary=SPARK_SUBMIT,
        conf=SPARK_CONF,
        outlets=[TABLE_ASSET],
    )

    @task
    def measure_after() -> dict[str, Any]:
        """The sensor's figures on the new instant, read from the timeline (no stats job)."""
        from airflow_zorder.hooks.file_stats import FileStatsHook

        return FileStatsHook(TABLE).evaluate(columns=COLUMNS)

    @task(multiple_outputs=False)
    def compare(before: dict[str, Any], clustered: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
        """Print and return files read by point queries and average depth per column, before and after."""
        from airflow_zorder.evaluation.before_after import decisions_before_after, format_before_after

        report = decisions_before_after(before, clustered, after)
        print(format_before_after(report))
        return report

    after = measure_after()
    check >> recluster >> after
    compare(check.output, recluster.output, after)
