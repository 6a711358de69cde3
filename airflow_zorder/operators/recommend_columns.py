"""RecommendClusteringColumnsOperator: which columns to cluster a table on, read from the SQL its users run.

Runs the workload advisor (:mod:`airflow_zorder.core.advisor`) through ``FileStatsHook.recommend_columns`` on the
table's latest statistics, records the recommendation as an ``advice`` event (the UI's table page shows it) and
returns it as XCom; a DAG passes ``columns`` on to ``SparkClusterTableOperator``. No Spark.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseOperator

from airflow_zorder.core.advisor.sample_layout import DEFAULT_SAMPLE_ROWS
from airflow_zorder.core.policy.plan_defaults import DEFAULT_CURVE
from airflow_zorder.hooks.file_stats import FileStatsHook
from airflow_zorder.links.table_health import TableHealthLink


class RecommendClusteringColumnsOperator(BaseOperator):
    """Recommend 1 to 4 clustering columns for ``table`` from its workload; the recommendation is the XCom.

    :param table: Parquet directory path/URI, or catalog table ``db.table`` (then ``stats_location`` is required)
    :param workload: paths of SQL files (or directories), Spark event logs, Trino ``system.runtime.queries`` or
        Athena exports (one or a list)
    :param table_name: the table as the queries name it (default ``table``)
    :param engine: the SQL dialect of SQL files and exports (``spark``, ``trino``, ``athena``, ...)
    :param athena_conn_id: also read the queries of Athena's ``athena_workgroup`` through this ``aws`` connection
    :param athena_workgroup: the Athena workgroup whose history is read
    :param stats_location: the stats store (default ``<table>/_zorder/stats``)
    :param conn_id: a standard connection that opens the store (``aws`` for S3)
    :param curve: the curve the estimate assumes (``zorder``, ``hilbert``, ``linear``)
    :param max_columns: recommend at most this many columns (1 to 4)
    :param record: keep the recommendation as an ``advice`` event of the table (the UI shows the last one)
    :param sample_rows: lay the best column sets out on this many of the table's rows (whole row groups drawn at
        random, read with ``conn_id``'s credentials) and judge them there (default 20,000); 0: from the statistics
        alone
    """

    template_fields: Sequence[str] = ("table", "workload", "table_name", "stats_location", "conn_id")
    ui_color = "#e8f3d8"
    operator_extra_links = (TableHealthLink(),)

    def __init__(
        self,
        *,
        table: str,
        workload: str | Sequence[str] = (),
        table_name: str | None = None,
        engine: str | None = None,
        athena_conn_id: str | None = None,
        athena_workgroup: str = "primary",
        stats_location: str | None = None,
        conn_id: str | None = None,
        curve: str = DEFAULT_CURVE,
        max_columns: int = 4,
        record: bool = True,
        sample_rows: int = DEFAULT_SAMPLE_ROWS,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.table, self.workload, self.table_name, self.engine = table, workload, table_name, engine
        self.athena_conn_id, self.athena_workgroup = athena_conn_id, athena_workgroup
        self.stats_location, self.conn_id = stats_location, conn_id
        self.curve, self.max_columns, self.record, self.sample_rows = curve, max_columns, record, sample_rows

    def execute(self, context: Any) -> dict[str, Any]:
        from airflow_zorder.core.advisor.sources import statements_of

        statements = statements_of(self.workload, self.engine)
        if self.athena_conn_id:
            from airflow_zorder.hooks.athena_history import AthenaQueryHistoryHook

            statements += AthenaQueryHistoryHook(self.athena_conn_id, self.athena_workgroup).statements()
        hook = FileStatsHook(self.table, self.stats_location or None, self.conn_id or None)
        advice = hook.recommend_columns(
            statements,
            table_name=self.table_name or None,
            curve=self.curve,
            max_columns=self.max_columns,
            record=self.record,
            sample_rows=self.sample_rows,
            source=f"{self.dag_id}.{self.task_id}" if self.has_dag() else self.task_id,
        )
        self.log.info(
            "%s: %s (%d statements, %d scans; %.1f -> %.1f files per scan)",
            self.table,
            ", ".join(advice["columns"]) or "no recommendation",
            advice["statements"],
            advice["scans"],
            advice["files_before"],
            advice["files_after"],
        )
        return advice
