"""Keep a fleet of tables clustered under one budget per run: the DAG ``fleet_dag`` builds (docs/fleet.md).

    plan -> recluster[i] (mapped over the tables the budget buys) -> record

The fleet: the Airflow Variable ``zorder_fleet`` (JSON or YAML) when set, else ``ZORDER_FLEET_SPEC`` (default the
shipped ``zorder_fleet.json`` next to this file; tables, or discovery rules such as ``{"discover": "delta", "prefix":
"s3://lake/"}``). Budget: ``ZORDER_FLEET_BUDGET`` bytes rewritten per run (default 1GB) and optionally
``ZORDER_FLEET_SPARK_TIME``; both are run parameters too. ``ZORDER_FLEET_POOL``: the pool bounding the re-cluster
tasks (create it first, e.g. ``airflow pools set zorder_fleet 4 "fleet rewrites"``); ``ZORDER_FLEET_HOME``: where the
records go (default ``[zorder] fleet_home``).
"""

from __future__ import annotations

import os
from pathlib import Path

from airflow_zorder.fleet_dag import fleet_dag

SPEC = os.environ.get("ZORDER_FLEET_SPEC") or str(Path(__file__).resolve().with_name("zorder_fleet.json"))

dag = fleet_dag(
    "zorder_fleet",
    spec=SPEC,
    variable="zorder_fleet",
    budget_bytes=os.environ.get("ZORDER_FLEET_BUDGET") or "1GB",
    budget_spark_time=os.environ.get("ZORDER_FLEET_SPARK_TIME") or None,
    records_home=os.environ.get("ZORDER_FLEET_HOME") or None,
    pool=os.environ.get("ZORDER_FLEET_POOL") or None,
    max_parallel=2,
    spark_conf={"spark.sql.shuffle.partitions": "8"},
)
