"""Keep one Apache Iceberg table clustered: decide from its manifests, re-cluster what overlaps, measure again.

    check_overlap -> recluster -> measure_after -> compare

An Iceberg table needs no stats job: ``check_overlap`` (FileOverlapSensor, ``decide_once``) reads per-file
statistics from the current snapshot's manifests (through the table's catalog, no Spark) and skips the rest of
the run unless file overlap warrants re-clustering; its XCom carries the incremental ``plan``. ``recluster``
reads exactly the snapshot's data files, rewrites the plan's files along a Hilbert curve, verifies every row and
commits one snapshot with operation ``replace`` through pyiceberg on the Spark driver (no Iceberg jar; the run id
in the snapshot summary; time travel to the snapshot before keeps working). ``measure_after`` evaluates the new
snapshot's manifests and ``compare`` prints the before/after table.

Configuration: the catalog, either an Airflow ``iceberg`` connection (``ZORDER_ICEBERG_CONN_ID``; the Iceberg
provider's connection: its properties reach the Spark driver in a file shipped with ``--files``, never on the command
line) or a pyiceberg catalog (``ZORDER_ICEBERG_CATALOG``, default ``zorderdemo``: the demo's SQL catalog on SQLite,
configured by ``.demo/.pyiceberg.yaml``, found through ``PYICEBERG_HOME``; configure yours in ``.pyiceberg.yaml`` or
``PYICEBERG_CATALOG__<NAME>__<KEY>`` variables on the Airflow worker and where the Spark driver runs); and the table
(``ZORDER_ICEBERG_TABLE``, default ``demo.events``). Any catalog works (REST, Hive, Glue, SQL): docs/iceberg.md.
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

DEMO = Path(__file__).resolve().parents[1] / ".demo"
os.environ.setdefault("PYICEBERG_HOME", str(DEMO))  # the demo's catalog configuration (.demo/.pyiceberg.yaml)
CONN_ID = os.environ.get("ZORDER_ICEBERG_CONN_ID")  # an Airflow iceberg connection (the catalog is named after it)
CATALOG = CONN_ID or os.environ.get("ZORDER_ICEBERG_CATALOG") or "zorderdemo"
ICEBERG = {"iceberg_conn_id": CONN_ID} if CONN_ID else {"iceberg_catalog": CATALOG}  # how every task names the catalog
TABLE = os.environ.get("ZORDER_ICEBERG_TABLE") or "demo.events"
COLUMNS = ["user_id", "product_id"]
CURVE = "hilbert"
SPARK_CONN_ID = "spark_default"
SPARK_CONF = {"spark.sql.shuffle.partitions": "8"}  # small tables; raise for real ones

TABLE_ASSET = Asset(name=f"zorder-table:iceberg:{CATALOG}.{TABLE}", uri=f"iceberg://{CATALOG}/{TABLE}")


with DAG(
    dag_id="zorder_recluster_iceberg_table",
    description="Re-cluster the degraded partitions of one Apache Iceberg table along a Hilbert curve",
    schedule="@daily",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,  # one clustering run per table at a time (the job also locks the table)
    tags=["zorder", "iceberg"],
    params=run_params("target_file_size"),
    doc_md=__doc__,
) as dag:
    check = FileOverlapSensor(
        task_id="check_overlap",
        table=TABLE,
        **ICEBERG,
        columns=COLUMNS,
        decide_once=True,  # the schedule is the poll: decide once per run, skip the rest unless degraded
        target_file_size="{{ params.target_file_size }}",  # one size: the decision's, the plan's and the job's
    )

    recluster = SparkClusterTableOperator(
        task_id="recluster",
        table=TABLE,
        **ICEBERG,
        columns=COLUMNS,
        stats_location="{{ ti.xcom_pull(task_ids='check_overlap')['stats_location'] }}",  # where the plan goes
        partitions="{{ ti.xcom_pull(task_ids='check_overlap')['partitions'] | tojson }}",
        plan="{{ ti.xcom_pull(task_ids='check_overlap')['plan'] | tojson }}",
        curve=CURVE,
        target_file_size="{{ params.target_file_size }}",
        conn_id=SPARK_CONN_ID,
        conf=SPARK_CONF,
        outlets=[TABLE_ASSET],
    )

    @task
    def measure_after() -> dict[str, Any]:
        """The sensor's figures on the new snapshot, read from its manifests (no stats job)."""
        from airflow_zorder.hooks.file_stats import FileStatsHook

        return FileStatsHook(TABLE, **ICEBERG).evaluate(columns=COLUMNS)

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
