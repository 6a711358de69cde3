"""SparkClusterTableOperator: re-cluster a table (or some of its partitions) with ``spark_jobs/cluster_table.py``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_zorder.core.jobs import options
from airflow_zorder.core.jobs.file_sizing import parse_size
from airflow_zorder.core.jobs.options import (
    CLUSTER_ACTIONS,
    CURVES,
    VERIFY_MODES,
    ClusterOptions,
    new_run_id,
    parse_names,
)
from airflow_zorder.core.storage.filesystems import join
from airflow_zorder.operators.spark_job import SparkZorderJobOperator

PLANS_DIR = "plans"  # <stats location>/plans/<run id>.json: the plan a run was given, where its driver reads it
_UNSET = ("", "None", "null")


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


def optional_bool(what: str, value: Any) -> bool:
    """A bool from a bool or its rendered text (``"True"``, ``"false"``, ``""``: False)."""
    if isinstance(value, bool) or value is None:
        return bool(value)
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no", "", "none"):
        return False
    raise ValueError(f"{what} must be True or False, got {value!r}")


def optional_ratio(value: Any) -> float | None:
    """``target_ratio`` from a number or its rendered text; None, "" and "None" mean unset (the job's default)."""
    if value is None or str(value).strip() in _UNSET:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"target_ratio must be a number >= 1 (1 = a perfect grid), got {value!r}") from None


def read_plan(value: Any) -> dict[str, Any] | None:
    """The plan document from a dict (an XComArg, native rendering) or its JSON text (``| tojson``); None, "",
    "None" and "null" mean no plan.  Checked with ``incremental_stats.check_plan``."""
    from airflow_zorder.core.policy.incremental_stats import check_plan

    if isinstance(value, str):
        text = value.strip()
        if text in _UNSET:
            return None
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise ValueError(
                f"plan: cannot read {text[:80]!r} as JSON ({exc}); pass the sensor's XCom 'plan'"
            ) from None
    if value is None:
        return None
    try:
        return check_plan(value)
    except ValueError as exc:
        raise ValueError(f"plan: {exc}") from None


def check_plan_columns(plan: Mapping[str, Any], columns: Sequence[str]) -> None:
    """Refuse a plan made for other clustering columns (compared as the job does: in order, case aside)."""
    from airflow_zorder.core.policy.incremental_stats import made_for

    if not made_for(plan, columns):
        raise ValueError(
            f"plan: the incremental plan was made for columns {list(plan.get('columns') or [])}, but this operator "
            f"clusters {list(columns)}: "
            "give the sensor the same columns, or leave plan unset to let the job plan"
        )


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
    :param target_file_size: e.g. ``"512MB"`` or bytes; output files per partition = size / target.
    :param num_files: exact output files per partition (overrides ``target_file_size``) of a full rewrite.
    :param num_ranges: range ids per column; ``salt_bits``: row-hash salt bits against skew.
    :param verify: ``observe`` (default) or ``full`` (also re-reads the staged files).
    :param compression: Parquet codec of the rewritten files (job default ``snappy``).
    :param retention_hours: keep replaced files this long; ``lock_ttl``: seconds before a silent lock expires.
    :param action: ``cluster`` (default), ``recover`` or ``cleanup``.
    :param stats_location: the table's stats store, where the run's event is recorded for the sensor and
        the UI (templated); default ``<table home>/_zorder/stats``. Give the sensor's ``stats_location``.
    :param incremental: rewrite only the files an incremental plan picks (``--incremental``): the given ``plan``,
        else one the job makes from the stats store; False (default): every file of each partition (``--full``).
        Templated (``"True"``/``"False"``).
    :param plan: the plan to run: the overlap sensor's XCom ``plan``, as a dict (an XComArg) or its JSON text
        (``"{{ ti.xcom_pull('check')['plan'] | tojson }}"``); ``None``/``"null"``/``""``: none (templated).  It
        implies ``incremental``, is checked (``incremental_stats.check_plan``, the same columns as ``columns``)
        and written to ``<stats location>/plans/<run id>.json``, where the job reads it (``--plan``).
    :param target_ratio: incremental, planned by the job: stop once every column is within this of the ideal
        (``--target-ratio``; default 1.35).
    :param max_rewrite_bytes: incremental, planned by the job: the run's budget of bytes rewritten, e.g. ``"200GB"``
        (``--max-rewrite-bytes``; templated).
    :param stats_conn_id: a standard connection that opens the stats location to write the plan file (``aws`` for
        S3; see ``hooks.connections``); none: the store's default credentials.

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
        incremental: bool | str = False,
        plan: dict[str, Any] | str | None = None,
        target_ratio: float | str | None = None,
        max_rewrite_bytes: str | int | None = None,
        stats_conn_id: str | None = None,
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
        if not is_template(incremental):
            optional_bool("incremental", incremental)
        if not is_template(plan):
            read_plan(plan)  # a literal plan is checked at DAG parse time
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
        if self.action != "cluster":
            return None
        doc = read_plan(self.plan)
        if doc is not None:
            check_plan_columns(doc, columns)
        return doc

    def plan_location(self, run_id: str) -> str:
        """Where run ``run_id``'s plan is written for the job: ``<stats location>/plans/<run id>.json``."""
        location = options.stats_location_for(str(self.table), self.stats_location)
        if location is None:
            raise ValueError(
                f"plan: {self.table!r} is a catalog table, so the plan file has no default place: pass "
                "stats_location= (the sensor's), where the plan is written for the job to read"
            )
        return join(location, PLANS_DIR, f"{run_id}.json")

    def write_plan(self, doc: Mapping[str, Any], run_id: str) -> str:
        """Write the plan where the job reads it (the stats location, through ``FileStatsHook``'s filesystem:
        ``stats_conn_id``'s credentials, else the store's default); returns that location."""
        from airflow_zorder.core.stats import stats_store
        from airflow_zorder.hooks.file_stats import FileStatsHook

        target = self.plan_location(run_id)
        hook = FileStatsHook(str(self.table), self.stats_location, self.stats_conn_id)
        io, base = stats_store.resolve_io(hook.stats_location, hook.get_conn())
        io.mkdirs(join(base, PLANS_DIR))
        io.write_text(join(base, PLANS_DIR, f"{run_id}.json"), json.dumps(doc, separators=(",", ":")))
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
        """The clustering job's options from the rendered parameters (unset ones keep the job's defaults)."""
        columns = parse_names(self.columns, "columns") or []
        if not columns and self.action == "cluster":
            raise ValueError("columns: name 1 to 16 clustering columns")
        size = None if str(self.target_file_size).strip() in ("", "None") else self.target_file_size
        run_id = self.run_id or new_run_id()  # prepare() sets it first: the plan file is named after the run
        plan = self.given_plan(columns)
        budget = None if str(self.max_rewrite_bytes).strip() in _UNSET else self.max_rewrite_bytes
        ratio = optional_ratio(self.target_ratio)
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
            "incremental": optional_bool("incremental", self.incremental) or plan is not None,
            "plan": self.plan_location(run_id) if plan is not None else None,
            "target_ratio": ratio,
            "max_rewrite_bytes": parse_size(budget) if budget is not None else None,
        }
        return ClusterOptions(
            table=str(self.table),
            columns=columns,
            curve=self.curve,
            action=self.action,
            run_id=run_id,
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
