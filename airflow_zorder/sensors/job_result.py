"""SparkJobResultSensor: wait for a job that ran outside Airflow to leave its JSON result, and return it as XCom.

A job launched from :func:`airflow_zorder.spark_job_spec` (Kubernetes, EMR Serverless, Dataproc, Databricks, ...)
writes its result to ``<stats location>/results/<run id>.json`` (``core.jobs.job_results``); this sensor reads it
back with pyarrow, so the rest of the DAG sees what the project's operators would have returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue

from airflow_zorder.core.jobs.job_results import read_result, result_location
from airflow_zorder.hooks.file_stats import FileStatsHook
from airflow_zorder.operators.spark_job import SparkJobFailed


class SparkJobResultSensor(BaseSensorOperator):
    """Poke until run ``run_id`` of a job on ``table`` has written its result; return that result as XCom.

    Fails with the job's own reason when the result's ``status`` is ``failed``.

    :param table: the job's table: Parquet directory path/URI, or catalog table ``db.table`` (templated).
    :param run_id: the run id the job was given (``spark_job_spec(...)["run_id"]``; templated).
    :param stats_location: the table's stats store (templated); default ``<table>/_zorder/stats`` (required for
        catalog tables), as for the spec.
    :param stats_conn_id: a standard connection that opens the stats store (``aws`` for S3); none: the store's
        default credentials (templated).
    """

    template_fields: Sequence[str] = ("table", "run_id", "stats_location", "stats_conn_id")
    ui_color = "#d8ecf3"

    def __init__(
        self,
        *,
        table: str,
        run_id: str,
        stats_location: str | None = None,
        stats_conn_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.table = table
        self.run_id = run_id
        self.stats_location = stats_location
        self.stats_conn_id = stats_conn_id

    @cached_property
    def hook(self) -> FileStatsHook:
        """The stats hook for the rendered arguments, kept across pokes (its connection is looked up once)."""
        return FileStatsHook(str(self.table), self.stats_location or None, self.stats_conn_id or None)

    def poke(self, context: Any) -> PokeReturnValue:
        hook = self.hook
        where = result_location(hook.stats_location, str(self.run_id))
        with hook._reading(where):
            result = read_result(hook.stats_location, str(self.run_id), hook.get_conn())
        if result is None:
            self.log.info("no result yet at %s", where)
            return PokeReturnValue(is_done=False)
        if result.get("status") == "failed":
            raise SparkJobFailed(
                f"job run {self.run_id} failed for table {result.get('table', self.table)}: "
                f"{result.get('error')} ({result.get('error_type')})",
                result,
            )
        self.log.info("run %s on %s: status %s (%s)", self.run_id, self.table, result.get("status"), where)
        return PokeReturnValue(is_done=True, xcom_value=result)
