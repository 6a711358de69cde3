"""SparkClusterTableOperator: re-cluster a table (or some of its partitions) with ``spark_jobs/cluster_table.py``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_zorder.core.jobs import options
from airflow_zorder.core.jobs.file_sizing import parse_size
from airflow_zorder.core.jobs.options import CLUSTER_ACTIONS, CURVES, VERIFY_MODES, ClusterOptions, parse_names
from airflow_zorder.operators.spark_job import SparkZorderJobOperator


def is_template(value: Any) -> bool:
    """A value still to be rendered (Jinja text or an XCom/mapped argument): checked at execution instead."""
    return (isinstance(value, str) and "{{" in value) or hasattr(value, "resolve")


def check_choice(what: str, value: Any, choices: Sequence[str]) -> None:
    """Refuse a value outside ``choices`` (templates are checked once rendered)."""
    if not is_template(value):
        options.check_choice(what, value, choices)


def optional_count(what: str, value: Any) -> int | None:
    """A positive int from an int or its rendered text; None, "" and "None" mean unset."""
    if value is None or is_template(value) or (isinstance(value, str) and value.strip() in ("", "None")):
        return None
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a positive integer, got {value!r}") from None
    if n < 1:
        raise ValueError(f"{what} must be at least 1, got {n}")
    return n


class SparkClusterTableOperator(SparkZorderJobOperator):
    """Rewrite a Parquet table's files ordered along a Z-order/Hilbert curve (or a plain sort), verified and atomic.

    The task's XCom is the job's JSON result (status, run id, rows/files/bytes before and after,
    per-partition plans, phases, duration) plus ``spark`` (master, deploy mode, application id/URL).
    Outlet assets get ``rows/files/bytes_before/after`` in their event's ``extra``.

    :param table: Parquet directory path/URI or catalog table ``db.table`` (templated).
    :param columns: 1 to 16 clustering columns: list, ``"a,b"`` or a JSON list (templated).
    :param partitions: only these Hive partitions (``day=2026-01-01``): list, comma string, JSON/Python
        list string, e.g. the overlap sensor's XCom ``partitions`` (templated). None or empty: all.
    :param curve: ``zorder`` (default), ``hilbert`` or ``linear``.
    :param target_file_size: e.g. ``"512MB"`` or bytes; output files per partition = size / target.
    :param num_files: exact output files per partition (overrides ``target_file_size``).
    :param num_ranges: range ids per column; ``salt_bits``: row-hash salt bits against skew.
    :param verify: ``observe`` (default) or ``full`` (also re-reads the staged files).
    :param compression: Parquet codec of the rewritten files (job default ``snappy``).
    :param retention_hours: keep replaced files this long; ``lock_ttl``: seconds before a silent lock expires.
    :param action: ``cluster`` (default), ``recover`` or ``cleanup``.
    :param stats_location: the table's stats store, where the run's event is recorded for the sensor and
        the UI (templated); default ``<table home>/_zorder/stats``. Give the sensor's ``stats_location``.

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
    )

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
        **kwargs: Any,
    ) -> None:
        super().__init__(columns=columns, **kwargs)
        for what, value, choices in (
            ("curve", curve, CURVES),
            ("verify", verify, VERIFY_MODES),
            ("action", action, CLUSTER_ACTIONS),
        ):
            check_choice(what, value, choices)
        optional_count("num_files", num_files)
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

    def job_options(self) -> ClusterOptions:
        """The clustering job's options from the rendered parameters (unset ones keep the job's defaults)."""
        columns = parse_names(self.columns, "columns") or []
        if not columns and self.action == "cluster":
            raise ValueError("columns: name 1 to 16 clustering columns")
        size = None if str(self.target_file_size).strip() in ("", "None") else self.target_file_size
        given = {
            "target_file_size": parse_size(size) if size is not None else None,
            "num_files": optional_count("num_files", self.num_files),
            "partitions": parse_names(self.partitions, "partitions") or None,
            "num_ranges": self.num_ranges,
            "salt_bits": self.salt_bits,
            "verify": self.verify,
            "compression": self.compression,
            "retention_hours": self.retention_hours,
            "lock_ttl_s": self.lock_ttl,
            "stats_location": self.stats_location or None,
        }
        return ClusterOptions(
            table=str(self.table),
            columns=columns,
            curve=self.curve,
            action=self.action,
            **{k: v for k, v in given.items() if v is not None},
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
