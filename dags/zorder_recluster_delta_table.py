"""Keep one Delta Lake table clustered: decide from its log, re-cluster what overlaps, measure again.

    check_overlap -> recluster -> measure_after -> compare

A Delta table needs no stats job: ``check_overlap`` (FileOverlapSensor, ``decide_once``) reads per-file
statistics straight from ``_delta_log/`` and skips the rest of the run unless file overlap warrants
re-clustering; its XCom then carries the incremental ``plan`` of the degraded partitions (which files to
rewrite, the bytes, the expected files-read ratio before and after). ``recluster`` reads exactly the files of
the log's latest version, rewrites the plan's files along a Hilbert curve (with the run parameter ``full``:
every file of the partitions the sensor listed), verifies every row and commits one Delta transaction
(``dataChange = false``; ``DeltaTable.history()`` shows the run; time travel to the version before keeps
working). ``measure_after`` evaluates the new version's log, and ``compare`` prints the before/after table.

Configuration (edit here, or set the environment variable): the table (``ZORDER_DELTA_TABLE``, default the
demo's ``.demo/events_delta`` next to this folder), its clustering columns and curve; run parameters
``target_file_size`` (the plan's too), ``full``, and ``num_files`` (with ``full`` only; the incremental plan
sizes files by ``target_file_size``, and ``recluster`` refuses ``num_files`` with it). The Spark connection is
``spark_default``; the commit runs on the Spark driver and needs ``deltalake`` there (the ``[delta]`` extra:
already on the Airflow worker in client mode; see docs/delta.md for cluster mode).
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

TABLE = os.environ.get("ZORDER_DELTA_TABLE") or str(Path(__file__).resolve().parents[1] / ".demo" / "events_delta")
COLUMNS = ["user_id", "product_id"]
CURVE = "hilbert"
SPARK_CONN_ID = "spark_default"
SPARK_CONF = {"spark.sql.shuffle.partitions": "8"}  # small tables; raise for real ones

TABLE_ASSET = Asset(name=f"zorder-table:{TABLE}", uri=Path(TABLE).absolute().as_uri() if "://" not in TABLE else TABLE)


with DAG(
    dag_id="zorder_recluster_delta_table",
    description="Re-cluster the degraded partitions of one Delta Lake table along a Hilbert curve",
    schedule="@daily",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,  # one clustering run per table at a time (the job also locks the table)
    tags=["zorder", "delta"],
    params=run_params("num_files", "target_file_size", "full"),
    doc_md=__doc__,
) as dag:
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
        partitions="{{ ti.xcom_pull(task_ids='check_overlap')['partitions'] | tojson }}",
        incremental="{{ not params.full }}",  # the sensor's plan, unless the run asks for a full rewrite
        plan="{{ '' if params.full else (ti.xcom_pull(task_ids='check_overlap')['plan'] | tojson) }}",
        curve=CURVE,
        num_files="{{ params.num_files or '' }}",
        target_file_size="{{ params.target_file_size }}",
        conn_id=SPARK_CONN_ID,
        conf=SPARK_CONF,
        outlets=[TABLE_ASSET],
    )

    @task
    def measure_after() -> dict[str, Any]:
        """The sensor's figures on the new version, read from the log (no stats job)."""
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
