"""SparkClusterTableOperator: re-cluster a table (or some of its partitions) with ``spark_jobs/cluster_table.py``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow_zorder.core.jobs import options, plan_file
from airflow_zorder.core.jobs.options import CLUSTER_OPERATOR_ONLY, ClusterOptions
from airflow_zorder.operators.declared_params import declared_init, declared_params, params_doc, templated
from airflow_zorder.operators.spark_job import SparkZorderJobOperator


class SparkClusterTableOperator(SparkZorderJobOperator):
    """Rewrite a Parquet table's files ordered along a Z-order/Hilbert curve (or a plain sort), verified and atomic.

    The task's XCom is the job's JSON result (status, run id, ``mode`` (``full``/``incremental``), ``rewritten``
    files/bytes, rows/files/bytes before and after, per-partition plans, phases, duration) plus ``spark`` (master,
    deploy mode, application id/URL).  Outlet assets get ``rows/files/bytes_before/after``, ``mode``,
    ``files_rewritten`` and ``bytes_rewritten`` in their event's ``extra``.

    :param table: Parquet directory path/URI or catalog table ``db.table`` (templated).
    :param iceberg_catalog: / ``iceberg_conn_id``: ``table`` is ``namespace.table`` of an Iceberg catalog
        (:class:`~airflow_zorder.operators.spark_job.SparkZorderJobOperator`; docs/iceberg.md).

    The parameters of the job's options (``columns``, ``partitions``, ``curve``, ``target_file_size``, ...;
    :class:`~airflow_zorder.core.jobs.options.ClusterOptions`) and ``stats_conn_id``: listed below, from their
    declarations, and in docs/operators.md.

    A parameter the run would not use is refused, naming the fix (``options.check_cluster_modes``): literal
    values when the DAG is parsed, templated ones when the task runs, before anything is written or submitted.

    Every :class:`~airflow.providers.apache.spark.operators.spark_submit.SparkSubmitOperator`
    parameter passes through (``conn_id``, ``conf``, ``executor_memory``, ``deploy_mode``, ...).
    """

    job_script = "cluster_table.py"
    job_label = "cluster"
    options_class = ClusterOptions
    declared = declared_params(ClusterOptions, CLUSTER_OPERATOR_ONLY)
    template_fields: Sequence[str] = (*SparkZorderJobOperator.template_fields, *templated(declared))
    template_fields_renderers = {**SparkZorderJobOperator.template_fields_renderers, "plan": "json"}

    __doc__ = (__doc__ or "") + params_doc(declared)

    @declared_init(declared)
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)

    def write_plan(self, doc: Mapping[str, Any], run_id: str) -> str:
        """Write the plan where the job reads it (the stats location, through ``FileStatsHook``'s filesystem:
        ``stats_conn_id``'s credentials, else the store's default); returns that location."""
        target = plan_file.plan_location(str(self.table), self.stats_location, run_id)  # refuses a catalog table
        hook = self.stats_hook
        plan_file.write_plan(doc, hook.stats_location, run_id, hook.get_conn())
        return target

    def prepare(self, conn: Any, workdir: str) -> str | None:
        """As the base class, then write the given plan (read once, by ``job_options()``) where the job (``--plan``)
        reads it."""
        result_path = super().prepare(conn, workdir)
        self.add_hudi_session(conn)
        doc = self.given_plan
        if doc is not None:
            where = self.write_plan(doc, self.run_id or "")
            self.log.info(
                "incremental plan for run %s: %s files, %s bytes in %s partitions, written to %s",
                self.run_id,
                doc.get("files"),
                doc.get("bytes"),
                len(doc.get("partitions") or []),
                where,
            )
        return result_path

    def add_hudi_session(self, conn: Any) -> None:
        """A Hudi table is re-clustered by Hudi's own clustering (``spark_jobs/hudi_clustering.py``): add Hudi's
        session settings, and on a ``local`` master the bundle of the Spark line ``spark_binary`` runs
        (``airflow_zorder.hudi_spark.submit_settings``; a cluster brings its own bundle, as its connectors)."""
        from airflow.exceptions import AirflowException

        from airflow_zorder import hudi_spark
        from airflow_zorder.core.errors import InvalidInputError, JarsNotFetchedError
        from airflow_zorder.core.storage.locations import is_path_table, parse_location
        from airflow_zorder.hooks.spark_job import resolve_spark_binary
        from airflow_zorder.operators.spark_job import master_of

        table = str(self.table)
        if not is_path_table(table):
            return
        arrow = None
        if self.storage_conn_id:
            from airflow_zorder.hooks.connections import store_options

            arrow = store_options(self.storage_conn_id, table).arrow
        elif parse_location(table).scheme not in ("", "file"):
            return  # no credentials to probe a store with here: the job finds a Hudi table and names the bundle
        if not hudi_spark.is_hudi_table(table, arrow):
            return
        binary = self._spark_binary or (conn.extra_dejson or {}).get("spark-binary") or "spark-submit"
        try:
            self.jars, self.conf = hudi_spark.submit_settings(
                master_of(conn), resolve_spark_binary(binary), self.jars, self.conf or {}
            )
        except (InvalidInputError, JarsNotFetchedError) as exc:
            raise AirflowException(f"{table} is a Hudi table, re-clustered by Hudi's own clustering: {exc}") from exc
        home = hudi_spark.spark_home_of(resolve_spark_binary(binary)) if master_of(conn).startswith("local") else None
        if home and "SPARK_HOME" not in (self.env_vars or {}):  # that line's Spark, not the one PATH's python finds
            self.env_vars = {**(self.env_vars or {}), "SPARK_HOME": home}
        self.log.info("%s is a Hudi table: Hudi's session settings%s added", table, " and bundle" if self.jars else "")

    def asset_extra(self, result: dict[str, Any]) -> dict[str, Any]:
        before, after = result.get("before") or {}, result.get("after") or {}
        extra: dict[str, Any] = {
            "table": result.get("table", self.table),
            "status": result.get("status"),
            "run_id": result.get("run_id"),
            "curve": result.get("curve"),
            "columns": result.get("columns"),
            "partitions": [p.get("partition") for p in result.get("partitions") or [] if isinstance(p, dict)],
            "mode": result.get("mode"),
            "files_rewritten": (result.get("rewritten") or {}).get("files"),
            "bytes_rewritten": (result.get("rewritten") or {}).get("bytes"),
        }
        for key in ("rows", "files", "bytes"):
            extra[f"{key}_before"] = before.get(key)
            extra[f"{key}_after"] = after.get(key)
        return extra

    def result_from_store(self, run_id: str) -> dict[str, Any] | None:
        """The clustering event the job recorded in the stats location's ``events`` (path tables, or given ``stats_location``)."""
        from airflow_zorder.core.stats import stats_store

        location = options.stats_location_for(str(self.table), self.stats_location)
        if location is None:
            return None  # a catalog table without stats_location: its home is only known to the metastore
        events = stats_store.load_events(location, kind="cluster")
        rows = [e for e in events.to_pylist() if e.get("run_id") == run_id]
        if not rows:
            return None
        e = rows[-1]
        return {
            "status": e.get("status"),
            "table": self.table,
            "run_id": run_id,
            "curve": e.get("curve"),
            "columns": e.get("columns"),
            "partitions": [{"partition": p} for p in e.get("partitions") or []],
            "before": {"files": e.get("files_before"), "rows": e.get("rows_before"), "bytes": e.get("bytes_before")},
            "after": {"files": e.get("files_after"), "rows": e.get("rows_after"), "bytes": e.get("bytes_after")},
            "duration_s": e.get("duration_s"),
        }
