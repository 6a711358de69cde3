"""Print one fleet run's plan for ``make demo``: what the ``zorder_fleet`` DAG's plan task decides, no Spark.

    python scripts/demo_fleet.py DEMO_DIR [--budget 2MB]

The fleet: the demo's three tables (re-clustered by the DAGs before: healthy now), two fresh scrambled tables (a
Delta table and an Iceberg table in the demo's catalog, ``zorderdemo``) and a Parquet directory whose statistics were
never collected (an error, recorded; the fleet goes on). Each is evaluated by the sensor's rules with its incremental
plan (``FleetHook``, several at a time), ranked by read savings per byte and fitted to the budget.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from airflow_zorder.core.fleet.budget import Budget
from airflow_zorder.core.fleet.report import format_run
from airflow_zorder.core.fleet.spec import expand
from airflow_zorder.evaluation.sample_data import write_delta_table, write_iceberg_table, write_table
from airflow_zorder.hooks.fleet import FleetHook

CATALOG = "zorderdemo"
COLUMNS = ["user_id", "product_id"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("demo", help="the demo's directory (.demo)")
    ap.add_argument("--budget", default="2MB", help="bytes rewritten the run may spend")
    a = ap.parse_args()
    demo = Path(a.demo)
    fresh = demo / "fleet"
    write_delta_table(str(fresh / "clicks_delta"), rows=100_000, files_per_partition=8, seed=21)
    write_iceberg_table(CATALOG, "demo.clicks", rows=100_000, files_per_partition=8, seed=22)
    write_table(str(fresh / "orders"), rows=20_000, files_per_partition=8, seed=23)  # its stats never collected
    common = {"columns": COLUMNS, "curve": "hilbert", "target_file_size": "500KB"}
    entries = [
        {"table": str(demo / "events"), **common, "read_weight": 3},
        {"table": str(demo / "events_delta"), **common},
        {"table": "demo.events", "iceberg_catalog": CATALOG, **common},
        {"table": str(fresh / "clicks_delta"), **common, "read_weight": 2},
        {"table": "demo.clicks", "iceberg_catalog": CATALOG, **common},
        {"table": str(fresh / "orders"), **common},
    ]
    tables, _ = expand(entries)
    start = time.perf_counter()
    plan = FleetHook(max_workers=4, record_decisions=False).plan(tables, Budget.of(a.budget), run_id="demo")
    print(format_run(plan.to_dict(), width=36))
    print(f"planned {len(tables)} tables in {time.perf_counter() - start:.1f} s, no Spark")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
