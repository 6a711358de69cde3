"""SparkClusterTableOperator: re-cluster a table (or some of its partitions) with ``spark_jobs/cluster_table.py``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow_zorder.core.jobs import options, params
from airflow_zorder.core.jobs.options import ClusterOptions, parse_names
from airflow_zorder.operators.spark_job import SparkZorderJobOperator


class SparkClusterTableOperator(SparkZorderJobOperator):
    """Rewrite a Parquet table's files ordered along a Z-order/Hilbert curve (or a plain sort), verified and atomic.

    The task's XCom is the job's JSON result (status, run id, ``mode`` (``full``/``incremental``), ``rewritten``
    files/bytes, rows/files/bytes before and after, per-partition plans, phases, duration) plus ``spark`` (master,
    deploy mode, application id/URL).  Outlet assets get ``rows/files/bytes_before/after``, ``mode``,
    ``files_rewritten`` and ``bytes_rewritten`` in their event's ``extra``.

    :param table: Parquet directory path/URI or catalog table ``db.table`` (templated).
    :param columns: 1 to 16 clustering columns: list, ``"a,b"`` or a JSON list (templated).
    :param partitions: only these Hive partitions (``day=2026-01-01``): list, comma string, JSON/Python
        list string, e.g. the overlap sensor's XCom ``partitions`` (templated). None or empty: all.
    :param curve: ``zorder`` (default), ``hilbert`` or ``linear``.
    :param target_file_size: e.g. ``"512MB"`` or bytes; output files per partition (or per bin of a plan the job
        makes) = size / target. With a given ``plan``, it must equal the size the plan was made for (the sensor's
        ``incremental_plan`` ``target_file_bytes``), or stay unset.
    :param num_files: exact output files per partition of a full rewrite (instead of ``target_file_size``);
        refused with ``incremental`` or ``plan``.
    :param num_ranges: range ids per column; ``salt_bits``: row-hash salt bits against skew.
    :param verify: ``observe`` (default) or ``full`` (also re-reads the staged files).
    :param compression: Parquet codec of the rewritten files (job default ``snappy``).
    :param retention_hours: keep replaced files this long (``cluster`` and ``cleanup``; a Delta table's replaced files
        stay until its VACUUM); ``lock_ttl``: seconds before a silent lock expires.
    :param action: ``cluster`` (default), ``recover`` or ``cleanup``.  ``recover`` and ``cleanup`` rewrite nothing:
        ``partitions``, ``incremental``, ``plan``, ``num_files``, ``target_file_size``, ``target_ratio``,
        ``max_rewrite_bytes`` (and, for ``recover``, ``retention_hours``) are refused with them.
    :param stats_location: the table's stats store, where the run's event is recorded for the sensor and
        the UI (templated); default ``<table home>/_zorder/stats``. Give the sensor's ``stats_location``.
    :param incremental: rewrite only the files an incremental plan picks (``--incremental``): the given ``plan``,
        else one the job makes from the stats store; False or unset (default): every file of each partition
        (``--full``). Templated (``"True"``/``"False"``; ``""``/``"None"``: unset).
    :param plan: the plan to run: the overlap sensor's XCom ``plan``, as a dict (an XComArg) or its JSON text
        (``"{{ ti.xcom_pull('check')['plan'] | tojson }}"``); ``None``/``"null"``/``""``: none (templated).  It
        implies ``incremental`` (``incremental=False`` with a plan is refused), is checked
        (``incremental_stats.check_plan``, the same columns as ``columns``) and written to
        ``<stats location>/plans/<run id>.json``, where the job reads it (``--plan``).
    :param target_ratio: incremental runs the job plans (not with ``plan``): stop once every column is within this
        of the ideal (``--target-ratio``; default 1.35; templated).
    :param max_rewrite_bytes: incremental runs the job plans (not with ``plan``): the run's budget of bytes
        rewritten, e.g. ``"200GB"`` (``--max-rewrite-bytes``; templated).
    :param stats_conn_id: a standard connection that opens the stats location to write the plan file (``aws`` for
        S3; see ``hooks.connections``) and, in deploy mode ``cluster``, to read the job's result back; none: the
        store's default credentials.
    :param iceberg_catalog: / ``iceberg_conn_id``: ``table`` is ``namespace.table`` of an Iceberg catalog
        (:class:`~airflow_zorder.operators.spark_job.SparkZorderJobOperator`; docs/iceberg.md).

    A parameter the run would not use is refused, naming the fix (``options.check_cluster_modes``): literal
    values when the DAG is parsed, templated ones when the task runs, before anything is written or submitted.

    Every :class:`~airflow.providers.apache.spark.operators.spark_submit.SparkSubmitOperator`
    parameter passes through (``conn_id``, ``conf``, ``executor_memory``, ``deploy_mode``, ...).
    """

    job_script = "cluster_table.py"
    job_label = "cluster"
    template_fields: Sequence[str] = (
        *SparkZorderJobOperator.template_fields,
        "partitions",
        "curve",
        "num_files",
        "target_file_size",
        "stats_location",
        "incremental",
        "plan",
        "target_ratio",
        "max_rewrite_bytes",
    )
    template_fields_renderers = {**SparkZorderJobOperator.template_fields_renderers, "plan": "json"}

    def __init__(
        self,
        *,
        columns: list[str] | str,
        partitions: list[str] | str | None = None,
        curve: str = "zorder",
        target_file_size: str | int | None = None,
        num_files: int | None = None,
        num_ranges: int | None = None,
        salt_bits: int | None = None,
        verify: str | None = None,
        compression: str | None = None,
        retention_hours: float | None = None,
        lock_ttl: int | None = None,
        action: str = "cluster",
        stats_location: str | None = None,
        incremental: bool | str | None = None,
        plan: dict[str, Any] | str | None = None,
        target_ratio: float | str | None = None,
        max_rewrite_bytes: str | int | None = None,
        stats_conn_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(columns=columns, **kwargs)
        params.check_cluster_params(  # literal values now; rendered ones when job_options() builds the job's options
            curve=curve,
            verify=verify,
            action=action,
            num_files=num_files,
            incremental=incremental,
            plan=plan,
            target_file_size=target_file_size,
            target_ratio=target_ratio,
            max_rewrite_bytes=max_rewrite_bytes,
            partitions=partitions,
            retention_hours=retention_hours,
        )
        self.partitions = partitions
        self.curve = curve
        self.target_file_size = target_file_size
        self.num_files = num_files
        self.num_ranges = num_ranges
        self.salt_bits = salt_bits
        self.verify = verify
        self.compression = compression
        self.retention_hours = retention_hours
        self.lock_ttl = lock_ttl
        self.action = action
        self.stats_location = stats_location
        self.incremental = incremental
        self.plan = plan
        self.target_ratio = target_ratio
        self.max_rewrite_bytes = max_rewrite_bytes
        self.stats_conn_id = stats_conn_id

    def given_plan(self, columns: Sequence[str]) -> dict[str, Any] | None:
        """The rendered ``plan``, checked (document, columns), or None (also for ``recover``/``cleanup``)."""
        return params.given_plan(self.plan, columns, self.action)

    def write_plan(self, doc: Mapping[str, Any], run_id: str) -> str:
        """Write the plan where the job reads it (the stats location, through ``FileStatsHook``'s filesystem:
        ``stats_conn_id``'s credentials, else the store's default); returns that location."""
        target = params.plan_location(str(self.table), self.stats_location, run_id)  # refuses a catalog table
        hook = self.stats_hook
        params.write_plan(doc, hook.stats_location, run_id, hook.get_conn())
        return target

    def prepare(self, conn: Any, workdir: str) -> str | None:
        """As the base class, then write the given plan where the job (``--plan``) reads it."""
        result_path = super().prepare(conn, workdir)
        doc = self.given_plan(parse_names(self.columns, "columns") or [])
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

    def job_options(self) -> ClusterOptions:
        """The clustering job's options from the rendered parameters (``core.jobs.params.cluster_options``)."""
        return params.cluster_options(
            table=str(self.table),
            columns=self.columns,
            partitions=self.partitions,
            curve=self.curve,
            target_file_size=self.target_file_size,
            num_files=self.num_files,
            num_ranges=self.num_ranges,
            salt_bits=self.salt_bits,
            verify=self.verify,
            compression=self.compression,
            retention_hours=self.retention_hours,
            lock_ttl=self.lock_ttl,
            action=self.action,
            stats_location=self.stats_location,
            incremental=self.incremental,
            plan=self.plan,
            target_ratio=self.target_ratio,
            max_rewrite_bytes=self.max_rewrite_bytes,
            run_id=self.run_id,  # prepare() sets it first: the plan file is named after the run
            iceberg_catalog=self.iceberg_catalog,
        )

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
