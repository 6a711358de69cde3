"""FleetHook: evaluate a fleet's tables with :class:`~airflow_zorder.hooks.file_stats.FileStatsHook` (pyarrow, no
Spark), several at a time, and choose what one run re-clusters under its budget (``core.fleet.selection``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from airflow.sdk import BaseHook

from airflow_zorder.core.fleet.budget import Budget
from airflow_zorder.core.fleet.evaluation import DEFAULT_WORKERS, cores, evaluate_fleet
from airflow_zorder.core.fleet.selection import DEFAULT_STARVATION_RUNS, FleetPlan, select
from airflow_zorder.core.fleet.spec import FleetTable
from airflow_zorder.core.policy.file_sizing import parse_size
from airflow_zorder.core.policy.recluster_policy import HealthPolicy, IncrementalParams
from airflow_zorder.hooks.file_stats import FileStatsHook

FLEET_SOURCE = "fleet"  # the recorded decisions' source


class FleetHook(BaseHook):
    """Plan one fleet run: each table judged by the sensor's rules with its incremental plan, then ranked and fitted
    to the budget.

    :param conn_id: the Airflow connection whose credentials open the tables' stores (as ``FileStatsHook``'s); a
        table's own ``conn_id`` wins
    :param policy: the sensor's thresholds (default ``HealthPolicy()``); each table's ``target_file_size`` sizes it
    :param max_workers: tables evaluated at a time (threads, over all the processes)
    :param processes: forked processes the evaluation is spread over (the rules and plans are CPU-bound Python;
        default 1: threads only, measured faster on a worker whose cores are busy, docs/fleet.md); None: one per
        core, unless a table needs an Airflow connection (a fleet or table ``conn_id``, an ``iceberg_conn_id``: its
        lookup goes through the task's one channel to Airflow), then 1
    :param record_decisions: record each table's decision in its stats location, as the sensor does
    """

    hook_name = "Z-order fleet"

    def __init__(
        self,
        conn_id: str | None = None,
        policy: HealthPolicy | None = None,
        *,
        max_workers: int = DEFAULT_WORKERS,
        processes: int | None = 1,
        record_decisions: bool = True,
        logger_name: str | None = None,
    ) -> None:
        super().__init__(logger_name=logger_name)
        self.conn_id = conn_id or None
        self.policy = policy or HealthPolicy()
        self.max_workers = max_workers
        self.processes = processes
        self.record_decisions = record_decisions

    def stats_hook(self, table: FleetTable) -> FileStatsHook:
        """The table's ``FileStatsHook``, opened with the table's own connection when it names one, else the fleet's."""
        return FileStatsHook(
            table.table,
            table.stats_location or None,
            table.conn_id or self.conn_id,
            iceberg_catalog=table.iceberg_catalog or None,
            iceberg_conn_id=table.iceberg_conn_id or None,
        )

    def evaluate_table(self, table: FleetTable) -> dict[str, Any]:
        """The sensor's payload of one table with its incremental plan, sized by the table's ``target_file_size``, and
        ``stats_source``: ``metadata`` (a Delta log, Iceberg manifests) or ``store`` (the stats job's)."""
        size = parse_size(table.target_file_size) if table.target_file_size else self.policy.target_file_size
        policy = dataclasses.replace(self.policy, target_file_size=size)
        params = IncrementalParams(target_file_size=size, curve=table.curve or None)
        hook = self.stats_hook(table)
        columns = list(table.columns) or None
        if self.record_decisions:
            payload = hook.check(policy, columns, record=True, source=FLEET_SOURCE, incremental=params)
        else:
            payload = hook.evaluate(policy, columns, incremental=params)
        # where its statistics come from: its format's metadata (Delta, Iceberg), or the stats job's store
        return {**payload, "stats_source": "metadata" if hook.metadata_format is not None else "store"}

    def plan(
        self,
        tables: Sequence[FleetTable],
        budget: Budget,
        *,
        skipped_runs: Mapping[str, int] | None = None,
        starvation_runs: int = DEFAULT_STARVATION_RUNS,
        run_id: str = "",
    ) -> FleetPlan:
        """Evaluate every table (``max_workers`` at a time; one that fails is an ``error`` decision) and choose."""
        evaluations = evaluate_fleet(tables, self.evaluate_table, self.max_workers, self.processes_for(tables))
        for e in evaluations:
            if e.error:
                self.log.warning("fleet: %s not evaluated: %s", e.table.table, e.error)
        return select(evaluations, budget, skipped_runs=skipped_runs, starvation_runs=starvation_runs, run_id=run_id)

    def processes_for(self, tables: Sequence[FleetTable]) -> int:
        """The processes evaluating ``tables``: as given, else one per core when no table needs a connection."""
        if self.processes is not None:
            return max(1, self.processes)
        needs_connection = self.conn_id or any(t.conn_id or t.iceberg_conn_id for t in tables)
        return 1 if needs_connection else cores()

    def get_conn(self) -> None:
        """No connection of its own: each table's ``FileStatsHook`` opens its store."""
        return None
