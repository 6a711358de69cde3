"""SparkCollectFileStatsOperator: refresh a table's per-file min/max/null statistics with ``spark_jobs/collect_stats.py``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_zorder.core.jobs.options import (
    STATS_OPERATOR_ONLY,
    STATS_RESULT_COUNTS,
    CollectOptions,
    stats_location_for,
)
from airflow_zorder.core.names import parse_names
from airflow_zorder.operators.declared_params import declared_init, declared_params, params_doc, templated
from airflow_zorder.operators.spark_job import SparkJobFailed, SparkZorderJobOperator


def clustering_summary(table: str, stats_location: str, columns: list[str] | None) -> dict[str, Any]:
    """Headline, worst column and per-column point-query figures of the latest snapshot.

    ``FileStatsHook.clustering`` (``core.policy.metrics.table_clustering``); ``columns`` default to the last
    clustering's columns, else every column with statistics.
    """
    from airflow_zorder.hooks.file_stats import FileStatsHook

    summary = FileStatsHook(table, stats_location).clustering(columns)
    keep = (
        "num_files",
        "expected_fraction",
        "ideal_fraction",
        "ratio_to_ideal",
        "average_depth",
        "average_overlaps",
        "max_depth",
    )
    return {
        "columns": summary["columns"],
        "num_files": summary["num_files"],
        "headline": summary["headline"],
        "worst_column": summary["worst_column"],
        "worst_partition": summary["worst_partition"],
        "per_column": {c: ({k: d.get(k) for k in keep} if d else None) for c, d in summary["per_column"].items()},
    }


class SparkCollectFileStatsOperator(SparkZorderJobOperator):
    """Collect per-file, per-column statistics (footers, or a scan where footers fall short) into the stats table.

    Reruns read only new or changed files. The task's XCom is the job's JSON result (files read/reused,
    snapshot id, stats location, ...) plus ``spark`` and, when ``clustering_columns`` (or ``columns``)
    are known, ``clustering``: the snapshot's headline (files a point query reads relative to the ideal
    layout, 1.0 = ideal), worst column and per-column expected fraction / average depth, computed on the
    worker with :func:`airflow_zorder.core.policy.metrics.table_clustering`. Outlet assets get the headline,
    worst column and file counts in their event's ``extra``.

    :param table: Parquet directory path/URI or catalog table ``db.table`` (templated).
    The parameters of the job's options (``columns``, ``stats_location``, ``method``, ...;
    :class:`~airflow_zorder.core.jobs.options.CollectOptions`) and ``clustering_columns``: listed below, from their
    declarations, and in docs/operators.md.
    :param iceberg_catalog: / ``iceberg_conn_id``: ``table`` is ``namespace.table`` of an Iceberg catalog
        (:class:`~airflow_zorder.operators.spark_job.SparkZorderJobOperator`): the manifests' statistics, plus what
        they lack read from the files.

    Every :class:`~airflow.providers.apache.spark.operators.spark_submit.SparkSubmitOperator`
    parameter passes through (``conn_id``, ``conf``, ``executor_memory``, ``deploy_mode``, ...).
    """

    job_script = "collect_stats.py"
    job_label = "stats"
    options_class = CollectOptions
    declared = declared_params(CollectOptions, STATS_OPERATOR_ONLY)
    template_fields: Sequence[str] = (*SparkZorderJobOperator.template_fields, *templated(declared))

    __doc__ = (__doc__ or "") + params_doc(declared)

    @declared_init(declared)
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)

    def check_result(self, result: dict[str, Any]) -> None:
        super().check_result(result)
        if result.get("status") == "partial" and not self.allow_errors:
            names = "; ".join(f"{e.get('path')}: {e.get('error')}" for e in (result.get("errors") or [])[:3])
            raise SparkJobFailed(
                f"stats collected but {result.get('files_failed')} file(s) of {self.table} could "
                f"not be read ({names}); fix or remove them, or pass allow_errors=True",
                result,
            )

    def enrich_result(self, result: dict[str, Any]) -> None:
        """Add ``clustering`` (headline, worst column, per-column figures) of the snapshot just written."""
        location = result.get("stats_location")
        if not location or result.get("status") not in ("ok", "partial"):
            return
        columns = parse_names(self.clustering_columns, "clustering_columns") or parse_names(self.columns, "columns")
        try:
            result["clustering"] = clustering_summary(str(self.table), location, columns)
        except (ValueError, OSError) as exc:  # the stats are committed; a summary problem must not fail the task
            self.log.warning("clustering summary of %s not computed: %s", self.table, exc)
            result["clustering_error"] = f"{type(exc).__name__}: {exc}"

    def asset_extra(self, result: dict[str, Any]) -> dict[str, Any]:
        c = result.get("clustering") or {}
        return {
            "table": result.get("table", self.table),
            "status": result.get("status"),
            "run_id": result.get("run_id"),
            "snapshot_id": result.get("snapshot_id"),
            "stats_location": result.get("stats_location"),
            "files_total": result.get("files_total"),
            "rows_total": result.get("rows_total"),
            "headline": c.get("headline"),
            "worst_column": c.get("worst_column"),
        }

    def result_from_store(self, run_id: str) -> dict[str, Any] | None:
        """The run record the job wrote to the stats location (``runs/*.json``)."""
        from airflow_zorder.core.stats import stats_store

        location = stats_location_for(str(self.table), self.stats_location)
        if location is None:
            return None  # a catalog table's default stats location is only known to the metastore
        rows = [r for r in stats_store.load_runs(location).to_pylist() if r.get("run_id") == run_id]
        if not rows:
            return None
        run = rows[-1]
        keep = ("status", "snapshot_id", "new_snapshot", "method", "columns", *STATS_RESULT_COUNTS, "duration_s")
        return {
            "table": self.table,
            "run_id": run_id,
            "stats_location": location,
            **{k: run.get(k) for k in keep},
        }
