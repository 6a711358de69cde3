"""Keep many tables clustered: one mapped task group per table listed in a config.

    load_tables -> maintain_table[i]: collect_stats -> check_overlap -> recluster -> collect_stats_after

The config is the Airflow Variable ``zorder_tables`` (a JSON list) when set, else the shipped
``zorder_tables.json`` next to this file. Each entry: ``table`` (path/URI, or ``db.table``; relative
paths are relative to the config file), ``columns`` (clustering columns), optional ``curve``
(default ``zorder``), ``target_file_size`` (default 512MB; the incremental plan's too), ``num_files``
(exact files per partition of a full rewrite: only with the run parameter ``full``; otherwise that table's
``recluster`` fails naming the fix), ``stats_location``.
It is read when the DAG runs (not at parse time), so editing it needs no redeploy; each table gets
its own task instances (dynamic task mapping), and a healthy table skips only its own group.

Each ``recluster`` runs the incremental plan its own ``check_overlap`` put in its XCom (the files to rewrite
in the degraded partitions); the run parameter ``full`` rewrites every file of those partitions instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pendulum
from airflow.sdk import DAG, Variable, task, task_group

from airflow_zorder.core.names import parse_names
from airflow_zorder.operators import SparkClusterTableOperator, SparkCollectFileStatsOperator
from airflow_zorder.operators.run_params import run_params
from airflow_zorder.sensors.file_overlap import FileOverlapSensor

CONFIG_FILE = Path(__file__).resolve().with_name("zorder_tables.json")
CONFIG_VARIABLE = "zorder_tables"
SPARK_CONN_ID = "spark_default"
SPARK_CONF = {"spark.sql.shuffle.partitions": "8"}
KEYS = {"table", "columns", "curve", "num_files", "target_file_size", "stats_location"}


def normalize_entry(entry: Any, base: Path) -> dict[str, Any]:
    """One config entry as the task group's arguments; a clear error names what is wrong."""
    if not isinstance(entry, dict) or not entry.get("table") or not entry.get("columns"):
        raise ValueError(f"each {CONFIG_VARIABLE} entry needs 'table' and 'columns', got {entry!r}")
    unknown = set(entry) - KEYS
    if unknown:
        raise ValueError(f"unknown key(s) {sorted(unknown)} in {entry!r}; known: {sorted(KEYS)}")
    table = str(entry["table"])
    if "://" not in table and ("/" in table or table.startswith(".")) and not Path(table).is_absolute():
        table = str((base / table).resolve())
    columns = entry["columns"]
    return {
        "table": table,
        "columns": parse_names(columns, "columns"),
        "curve": entry.get("curve", "zorder"),
        "num_files": entry.get("num_files") or "",
        "target_file_size": entry.get("target_file_size") or "",
        "stats_location": entry.get("stats_location") or "",
    }


with DAG(
    dag_id="zorder_maintain_tables",
    description="Re-cluster the degraded partitions of every table listed in the zorder_tables config",
    schedule="@daily",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["zorder"],
    params=run_params(
        "full",
        full="rewrite every file of the degraded partitions instead of running the incremental plans "
        "(needed by tables configured with num_files)",
    ),
    doc_md=__doc__,
) as dag:

    @task
    def load_tables() -> list[dict[str, Any]]:
        """The tables to maintain: the Variable ``zorder_tables`` if set, else the shipped JSON file."""
        text = Variable.get(CONFIG_VARIABLE, default=None)
        source = f"Variable {CONFIG_VARIABLE}" if text else str(CONFIG_FILE)
        entries = json.loads(text) if text else json.loads(CONFIG_FILE.read_text(encoding="utf-8"))
        if not isinstance(entries, list):
            raise ValueError(f"{source} must hold a JSON list of tables, got {type(entries).__name__}")
        tables = [normalize_entry(e, CONFIG_FILE.parent) for e in entries]
        print(f"{len(tables)} table(s) from {source}: {', '.join(t['table'] for t in tables)}")
        return tables

    @task_group
    def maintain_table(
        table: str, columns: list[str], curve: str, num_files: Any, target_file_size: str, stats_location: str
    ) -> None:
        """Collect stats, decide, re-cluster the degraded partitions, collect again (one table)."""
        collect = SparkCollectFileStatsOperator(
            task_id="collect_stats",
            table=table,
            clustering_columns=columns,
            stats_location=stats_location,
            conn_id=SPARK_CONN_ID,
            conf=SPARK_CONF,
        )
        check = FileOverlapSensor(
            task_id="check_overlap",
            table=table,
            columns=columns,
            stats_location=stats_location,
            decide_once=True,
            target_file_size=target_file_size,  # one size for the decision, the plan and the job ("": the default)
        )
        pulled = "ti.xcom_pull(task_ids='maintain_table.check_overlap', map_indexes=ti.map_index)"
        recluster = SparkClusterTableOperator(
            task_id="recluster",
            table=table,
            columns=columns,
            curve=curve,
            num_files=num_files,
            target_file_size=target_file_size,
            stats_location=stats_location,
            conn_id=SPARK_CONN_ID,
            conf=SPARK_CONF,
            partitions="{{ " + pulled + "['partitions'] | tojson }}",
            incremental="{{ not params.full }}",
            plan="{{ '' if params.full else (" + pulled + "['plan'] | tojson) }}",
        )
        collect_after = SparkCollectFileStatsOperator(
            task_id="collect_stats_after",
            table=table,
            clustering_columns=columns,
            stats_location=stats_location,
            conn_id=SPARK_CONN_ID,
            conf=SPARK_CONF,
        )
        collect >> check >> recluster >> collect_after

    maintain_table.expand_kwargs(load_tables())
