"""Keep one table clustered: collect stats, decide, re-cluster only what overlaps, measure again.

    collect_stats -> check_overlap -> recluster -> collect_stats_after -> compare

``check_overlap`` (FileOverlapSensor, ``decide_once``) evaluates the fresh statistics once: unless file
overlap warrants re-clustering (point queries read more than ``max_ratio_to_ideal`` x the ideal), it
skips the rest of the run. Otherwise its XCom carries the incremental ``plan`` of the degraded partitions:
which files to rewrite (new files clustered among themselves, groups of earlier runs merged), the bytes, and
the expected files-read ratio before and after. ``recluster`` runs exactly that plan, leaving every other file
as it is; with the run parameter ``full`` it rewrites every file of the listed partitions (its XCom
``partitions``) instead. ``compare`` prints and returns the before/after table.

Configuration (edit here, or set the environment variable): the table (``ZORDER_TABLE``, default the
demo's sample table ``.demo/events`` next to this folder), its clustering columns and curve; run
parameters ``target_file_size`` sizes the rewritten files (the plan's too), ``full`` switches to the full
rewrite, and ``num_files`` fixes the number of files per partition of a full rewrite (with the incremental plan
``recluster`` refuses it, naming the fix). The Spark connection is
``spark_default`` (e.g. ``AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[2]"}'``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pendulum
from airflow.sdk import DAG, Asset, task

from airflow_zorder.operators import SparkClusterTableOperator, SparkCollectFileStatsOperator
from airflow_zorder.operators.run_params import run_params
from airflow_zorder.sensors.file_overlap import FileOverlapSensor

TABLE = os.environ.get("ZORDER_TABLE") or str(Path(__file__).resolve().parents[1] / ".demo" / "events")
COLUMNS = ["user_id", "product_id"]
CURVE = "hilbert"
SPARK_CONN_ID = "spark_default"
SPARK_CONF = {"spark.sql.shuffle.partitions": "8"}  # small tables; raise for real ones

TABLE_ASSET = Asset(name=f"zorder-table:{TABLE}", uri=Path(TABLE).absolute().as_uri() if "://" not in TABLE else TABLE)


with DAG(
    dag_id="zorder_recluster_table",
    description="Re-cluster the degraded partitions of one Parquet table along a Hilbert curve",
    schedule="@daily",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,  # one clustering run per table at a time (the job also locks the table)
    tags=["zorder"],
    params=run_params("num_files", "target_file_size", "full"),
    doc_md=__doc__,
) as dag:
    collect_before = SparkCollectFileStatsOperator(
        task_id="collect_stats",
        table=TABLE,
        clustering_columns=COLUMNS,
        conn_id=SPARK_CONN_ID,
        conf=SPARK_CONF,
        outlets=[TABLE_ASSET],
    )

    check = FileOverlapSensor(
        task_id="check_overlap",
        table=TABLE,
        columns=COLUMNS,
        decide_once=True,  # the schedule is the poll: decide once per run, skip the rest unless degraded
        target_file_size="{{ params.target_file_size }}",  # one size: the decision's, the plan's and the job's
    )

    recluster = SparkClusterTableOperator(
        task_id="recluster",
        table=TABLE,
        columns=COLUMNS,
        # only what the sensor found degraded (its XCom's "partitions"; [] = the whole, unpartitioned table) ...
        partitions="{{ ti.xcom_pull(task_ids='check_overlap')['partitions'] | tojson }}",
        # ... and there only the files its incremental plan picked, unless the run asks for a full rewrite
        incremental="{{ not params.full }}",
        plan="{{ '' if params.full else (ti.xcom_pull(task_ids='check_overlap')['plan'] | tojson) }}",
        curve=CURVE,
        num_files="{{ params.num_files or '' }}",
        target_file_size="{{ params.target_file_size }}",
        conn_id=SPARK_CONN_ID,
        conf=SPARK_CONF,
        outlets=[TABLE_ASSET],
    )

    collect_after = SparkCollectFileStatsOperator(
        task_id="collect_stats_after",
        table=TABLE,
        clustering_columns=COLUMNS,
        conn_id=SPARK_CONN_ID,
        conf=SPARK_CONF,
        outlets=[TABLE_ASSET],
    )

    @task(multiple_outputs=False)
    def compare(before: dict[str, Any], clustered: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
        """Print and return files read by point queries and average depth per column, before and after."""
        from airflow_zorder.evaluation.before_after import before_after_table, format_before_after

        report = before_after_table(before, clustered, after)
        print(format_before_after(report))
        return report

    collect_before >> check >> recluster
    compare(collect_before.output, recluster.output, collect_after.output)
    recluster >> collect_after
