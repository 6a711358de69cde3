"""FileOverlapSensor: waits until a table's file overlap has degraded enough to re-cluster.

Thin: ``FileStatsHook`` reads the stats store, ``core.policy.recluster_policy`` decides.  The sensor succeeds on
``recluster`` and returns the decision payload (XCom ``return_value``: decision, reasons, per-column
metrics, ``partitions`` for the clustering job's ``--partitions``, and ``plan``: the incremental plan of those
partitions, for the clustering operator's ``plan``).  Modes poke, reschedule and
deferrable (default ``[operators] default_deferrable``, as Airflow's own sensors); ``soft_fail`` turns
a timeout on a healthy table into a skip; ``decide_once`` evaluates once and skips downstream at once
unless the decision is ``recluster`` (it never waits: ``deferrable=True`` or ``mode="reschedule"`` with it is
refused).  Each evaluation whose decision differs from
the last recorded one (and the final one) is recorded as a ``decision`` event in the stats store,
where the UI shows it.  Every evaluation also sends the decision's worst ratio to ideal as an Airflow metric
(:mod:`airflow_zorder.airflow_metrics`).

Deferrable: every evaluation runs on the worker.  After one that is not ``recluster``, the task defers
to ``FileOverlapTrigger``, which only lists the stats store (newest snapshot id, collection runs,
events; no snapshot is loaded in the triggerer) and comes back when that changes, when the clock alone
could change the decision (``recluster_policy.next_recheck_at``: stats growing older than ``max_stats_age``,
``min_interval_since_cluster`` running out), or at the timeout; ``execute_complete`` then evaluates
again and returns the payload or defers again, within the same overall timeout.  Whichever path decides,
the payload comes from the same worker-side evaluation, plan included.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue
from airflow.sdk.configuration import conf
from airflow.sdk.exceptions import AirflowException, AirflowSensorTimeout, AirflowSkipException

from airflow_zorder import airflow_metrics
from airflow_zorder.core.advisor.hysteresis import DEFAULT_MARGIN
from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.jobs.params import is_template
from airflow_zorder.core.policy.file_sizing import parse_size
from airflow_zorder.core.policy.recluster_policy import (
    DECISIONS,
    HealthPolicy,
    IncrementalParams,
    next_recheck_at,
    parse_columns,
)
from airflow_zorder.hooks.file_stats import FileStatsHook
from airflow_zorder.hooks.iceberg_catalog import check_one_catalog
from airflow_zorder.links.table_health import TableHealthLink
from airflow_zorder.table_access import table_access
from airflow_zorder.triggers.file_overlap import FileOverlapTrigger

if TYPE_CHECKING:
    from airflow.sdk import Context

_D = HealthPolicy()  # the defaults, in one place
AUTO = "auto"  # columns="auto": the workload advisor's columns
_ADVICE_KEYS = ("chosen", "changed", "reason", "columns", "served", "files_before", "files_after", "saving", "scans")
_PLAN_KEYS = tuple(IncrementalParams.__dataclass_fields__)
_PLAN_SIZES = ("target_file_size", "min_new_bytes", "seal_bytes", "max_bytes")  # bytes, or sizes like "512MB"
_PLAN_RENAMED = {"target_file_bytes": "target_file_size"}  # the key DAGs written before #49 name the size with


def _plan_keys(value: Mapping[str, Any]) -> dict[str, Any]:
    """An ``incremental_plan`` mapping with its keys as ``IncrementalParams`` names them."""
    return {_PLAN_RENAMED.get(k, k): v for k, v in value.items()}


def _plan_value(key: str, value: Any) -> Any:
    """One rendered ``incremental_plan`` value as ``IncrementalParams`` takes it (sizes parsed, text converted)."""
    if not isinstance(value, str) or key == "curve":
        return value
    try:
        if key in _PLAN_SIZES:
            return parse_size(value)
        return float(value) if key in ("target_ratio", "trigger_ratio") else int(value)
    except ValueError as exc:
        raise ValueError(f"incremental_plan[{key!r}]: cannot read {value!r} ({exc})") from None


def incremental_params(value: bool | Mapping[str, Any] | None) -> IncrementalParams | None:
    """The sensor's ``incremental_plan`` as :class:`IncrementalParams` (None: no plan); a clear error names a bad
    key or value.  Text values that render empty (``""``, ``"None"``) keep the field's default."""
    if value is None or value is False:
        return None
    if value is True:
        return IncrementalParams()
    if not isinstance(value, Mapping):
        raise InvalidInputError(
            f"incremental_plan must be True, False or a mapping of IncrementalParams fields, not {value!r}"
        )
    _check_plan_keys(value)
    given = {k: v for k, v in _plan_keys(value).items() if not (isinstance(v, str) and _is_unset(v))}
    try:
        return IncrementalParams(**{k: _plan_value(k, v) for k, v in given.items()})
    except ValueError as exc:
        raise InvalidInputError(f"incremental_plan: {exc}") from None


def _is_unset(value: Any) -> bool:
    """A rendered template that says "not given" (a DAG param left empty)."""
    return value is None or (isinstance(value, str) and value.strip() in ("", "None", "null"))


def _file_size(value: int | str | None) -> int | None:
    """``target_file_size`` as bytes: text like ``"128MB"`` parsed once here; an empty rendering keeps the default."""
    if isinstance(value, str):
        return _D.target_file_size if _is_unset(value) else parse_size(value)
    return value


def _check_plan_keys(value: Mapping[str, Any]) -> None:
    """Refuse ``incremental_plan`` keys that are not :class:`IncrementalParams` fields."""
    bad = [k for k in _plan_keys(value) if k not in _PLAN_KEYS]
    if bad:
        raise InvalidInputError(f"incremental_plan: unknown key(s) {bad}; known: {', '.join(_PLAN_KEYS)}")


class FileOverlapSensor(BaseSensorOperator):
    """Succeed when ``table``'s stats say file overlap warrants re-clustering (``recluster_policy.evaluate``).

    :param table: Parquet directory path/URI, or catalog table ``db.table`` (then ``stats_location`` is required)
    :param columns: columns to judge (list or comma-separated); default the last clustering's, else all with stats;
        ``"auto"``: the columns the workload advisor recommends from ``workload`` (``core.advisor``), changed only
        when the recommendation reads ``auto_margin`` fewer files than the columns chosen last time
    :param stats_location: the stats store (default ``<table>/_zorder/stats``)
    :param conn_id: a standard connection that opens the store (``aws`` for S3); none: the store's default credentials
    :param iceberg_catalog: ``table`` is ``namespace.table`` of this pyiceberg catalog (statistics from its manifests)
    :param iceberg_conn_id: instead of ``iceberg_catalog``, an Airflow ``iceberg`` connection naming the catalog
    :param num_clustering_columns: ``d`` of the ideal ``N ** (-1/d)``; default the last clustering's column count
    :param max_ratio_to_ideal: degraded when files a point query reads exceed the ideal by this factor
    :param max_average_depth: degraded when a column's average depth exceeds this (absolute; off by default)
    :param max_files_fraction: degraded when a point query reads more than this fraction of files (off by default)
    :param per_column: per-column ratio thresholds overriding ``max_ratio_to_ideal``
    :param aggregate: ``worst`` (any column) or ``mean`` (mean over columns of value / threshold)
    :param min_files: hold tables with fewer files
    :param min_bytes: hold tables with fewer bytes
    :param max_stats_age: hold when the stats are older (timedelta or seconds; None: never)
    :param min_interval_since_cluster: hold a degraded table re-clustered more recently (timedelta or seconds)
    :param min_new_data_fraction: hold a degraded table with less of its bytes written since the last re-clustering
    :param min_partition_files: partitions with fewer files are not listed
    :param max_partitions: list at most this many partitions, worst first (None: all)
    :param target_file_size: the clustering job's output file size (bytes, or text like ``"128MB"``): a column is
        also judged by the bytes a point query reads against a grid of files this size, so files bigger than the
        target cannot pass ``max_ratio_to_ideal`` (default the job's default, 512 MiB; None: each unit's own files)
    :param decide_once: evaluate once; skip downstream at once unless the decision is ``recluster``.  It never
        waits: ``deferrable=True`` and ``mode="reschedule"`` are refused with it (the configured
        ``default_deferrable`` is not), and ``poke_interval``, ``timeout`` and ``exponential_backoff`` do not apply
    :param deferrable: wait in the triggerer (``FileOverlapTrigger``, which only lists the stats store) instead of
        a worker slot; evaluations still run on the worker.  Default (None) ``[operators] default_deferrable``,
        read when the DAG is parsed (ignored with ``decide_once``)
    :param record_decisions: record decisions as events in the stats store (the UI shows them)
    :param incremental_plan: attach the incremental plan (``core.policy.incremental``) of the listed partitions to
        a ``recluster`` payload as its ``plan``: which files to rewrite (bins of paths per partition), the bytes,
        and the estimated worst ratio to ideal before and after; ``SparkClusterTableOperator(plan=...)`` runs it.
        True: default ``IncrementalParams()``; a mapping: its fields (``target_ratio``, ``target_file_size``,
        ``min_new_files``, ``min_new_bytes``, ``seal_bytes``, ``max_bytes``, ``trigger_ratio``, ``horizon``; sizes
        may be text like ``"512MB"``; values may be templates); False: no plan (``plan`` is None).  The plan is
        amortised against ``max_ratio_to_ideal`` (the ratio at which this sensor re-clusters again) unless
        ``trigger_ratio`` says otherwise
    :param workload: with ``columns="auto"``: paths of SQL files, Spark event logs, Trino or Athena exports
    :param workload_engine: the SQL dialect of the workload's SQL files and exports (``spark``, ``trino``, ...)
    :param workload_table: the table as the workload's queries name it (default ``table``)
    :param auto_margin: with ``columns="auto"``: the share of files read the recommendation must save over the
        columns chosen last time before they change (hysteresis: columns do not flap between runs)
    :param auto_sample_rows: with ``columns="auto"``: lay the best column sets out on this many of the table's rows
        at each evaluation (0, the default: from the statistics alone; ``core.advisor.sample_layout``)
    """

    template_fields: Sequence[str] = (
        "table",
        "columns",
        "stats_location",
        "conn_id",
        "incremental_plan",
        "target_file_size",
        "iceberg_catalog",
        "iceberg_conn_id",
        "workload",
    )
    ui_color = "#d8ecf3"
    operator_extra_links = (TableHealthLink(),)

    def __init__(
        self,
        *,
        table: str,
        columns: Sequence[str] | str | None = None,
        stats_location: str | None = None,
        conn_id: str | None = None,
        iceberg_catalog: str | None = None,
        iceberg_conn_id: str | None = None,
        num_clustering_columns: int | None = None,
        max_ratio_to_ideal: float = _D.max_ratio_to_ideal,
        max_average_depth: float | None = _D.max_average_depth,
        max_files_fraction: float | None = _D.max_files_fraction,
        per_column: Mapping[str, float] | None = _D.per_column,
        aggregate: str = _D.aggregate,
        min_files: int = _D.min_files,
        min_bytes: int = _D.min_bytes,
        max_stats_age: timedelta | float | None = _D.max_stats_age,
        min_interval_since_cluster: timedelta | float | None = _D.min_interval_since_cluster,
        min_new_data_fraction: float = _D.min_new_data_fraction,
        min_partition_files: int = _D.min_partition_files,
        max_partitions: int | None = _D.max_partitions,
        target_file_size: int | str | None = _D.target_file_size,
        decide_once: bool = False,
        deferrable: bool | None = None,
        record_decisions: bool = True,
        incremental_plan: bool | Mapping[str, Any] = True,
        workload: str | Sequence[str] | None = None,
        workload_engine: str | None = None,
        workload_table: str | None = None,
        auto_margin: float = DEFAULT_MARGIN,
        auto_sample_rows: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if columns == AUTO and not workload:
            raise InvalidInputError(
                'columns="auto" picks the columns from a workload: give workload= (SQL files, Spark event logs, '
                "Trino or Athena exports), or name the columns"
            )
        if not 0 <= auto_margin < 1:
            raise InvalidInputError(f"auto_margin must be in [0, 1), not {auto_margin!r}")
        self.workload, self.workload_engine, self.workload_table = workload, workload_engine, workload_table
        self.auto_margin, self.auto_sample_rows = auto_margin, auto_sample_rows
        if decide_once and (deferrable or self.mode == "reschedule"):
            waits = "deferrable=True" if deferrable else "mode='reschedule'"
            raise InvalidInputError(
                f"decide_once=True evaluates once and never waits, so {waits} would do nothing: drop it (the "
                "schedule is the poll), or drop decide_once to wait until the table degrades"
            )
        if deferrable is None:  # not given: the deployment's [operators] default_deferrable
            deferrable = conf.getboolean("operators", "default_deferrable", fallback=False)
        self.table = table
        self.columns = columns
        self.stats_location = stats_location
        self.conn_id = conn_id
        self.iceberg_catalog = iceberg_catalog
        self.iceberg_conn_id = iceberg_conn_id
        check_one_catalog(iceberg_catalog, iceberg_conn_id)
        self.num_clustering_columns = num_clustering_columns
        self.policy = HealthPolicy(  # validated at DAG parse time
            max_ratio_to_ideal=max_ratio_to_ideal,
            max_average_depth=max_average_depth,
            max_files_fraction=max_files_fraction,
            per_column=per_column,
            aggregate=aggregate,
            min_files=min_files,
            min_bytes=min_bytes,
            max_stats_age=max_stats_age,
            min_interval_since_cluster=min_interval_since_cluster,
            min_new_data_fraction=min_new_data_fraction,
            min_partition_files=min_partition_files,
            max_partitions=max_partitions,
            target_file_size=_D.target_file_size if is_template(target_file_size) else _file_size(target_file_size),
        )
        self.target_file_size = target_file_size  # the rendered value replaces the policy's at each evaluation
        self.decide_once = decide_once
        self.deferrable = deferrable
        self.record_decisions = record_decisions
        self.incremental_plan = incremental_plan
        if isinstance(incremental_plan, Mapping) and any(is_template(v) for v in incremental_plan.values()):
            _check_plan_keys(incremental_plan)  # the values are checked once rendered
        elif not is_template(incremental_plan):
            incremental_params(incremental_plan)  # validated at DAG parse time
            if not is_template(target_file_size):
                self.sized()  # two different sizes are refused at DAG parse time too

    # ------------------------------------------------------------------ helpers

    @property
    def _source(self) -> str:
        return f"{self.dag_id}.{self.task_id}" if self.has_dag() else self.task_id

    def _final_decisions(self) -> tuple[str, ...]:
        return DECISIONS if self.decide_once else ("recluster",)

    @cached_property
    def hook(self) -> FileStatsHook:
        """The stats hook for the rendered ``table`` / ``stats_location`` / ``conn_id``: one per task instance, kept
        across pokes (its connection and catalog are looked up once; reschedule and deferral build a new one)."""
        return FileStatsHook(
            self.table,
            self.stats_location,
            self.conn_id,
            iceberg_catalog=self.iceberg_catalog,
            iceberg_conn_id=self.iceberg_conn_id,
        )

    def sized(self) -> tuple[HealthPolicy, IncrementalParams | None]:
        """The policy and the incremental plan's parameters with the one rendered ``target_file_size``: the size the
        decision judges files by is the size the plan cuts them to (and the job writes, when the DAG passes the
        same value to ``SparkClusterTableOperator``). A plan naming another ``target_file_size`` is refused."""
        size = _file_size(self.target_file_size)
        plan = incremental_params(self.incremental_plan)
        given = (
            _plan_keys(self.incremental_plan).get("target_file_size")
            if isinstance(self.incremental_plan, Mapping)
            else None
        )
        if plan is not None and given is not None and not _is_unset(given):
            if size == _D.target_file_size:  # only the plan names a size (DAGs written before): it is the one size
                size = plan.target_file_size
            elif plan.target_file_size != size:
                raise InvalidInputError(
                    f"incremental_plan target_file_size={given!r} differs from target_file_size="
                    f"{self.target_file_size!r}: the decision, the plan and the job use one file size; "
                    "set target_file_size only"
                )
        policy = dataclasses.replace(self.policy, target_file_size=size)
        if plan is None or size is None:
            return policy, plan
        return policy, dataclasses.replace(plan, target_file_size=size)

    def _auto_columns(self) -> tuple[list[str] | None, dict[str, Any] | None]:
        """``columns="auto"``: the advisor's choice from the workload (with its margin) and its summary."""
        if self.columns != AUTO:
            return parse_columns(self.columns), None
        advice = self.hook.auto_columns(
            self.workload,
            table_name=self.workload_table or None,
            engine=self.workload_engine or None,
            margin=self.auto_margin,
            source=self._source,
            sample_rows=self.auto_sample_rows,
        )
        self.log.info("columns=auto: %s", advice["reason"])
        summary = {k: advice.get(k) for k in _ADVICE_KEYS}
        return advice["chosen"] or None, summary

    def _check(self) -> dict[str, Any]:
        policy, plan = self.sized()
        columns, advice = self._auto_columns()
        payload = self.hook.check(
            policy,
            columns,
            num_clustering_columns=self.num_clustering_columns,
            record=self.record_decisions,
            final_decisions=self._final_decisions(),
            source=self._source,
            incremental=plan,
        )
        payload.update(table_access(self.conn_id, self.iceberg_catalog, self.iceberg_conn_id))  # for the UI
        if advice is not None:
            payload["advice"] = advice
        for line in payload["reasons"]:
            self.log.info("%s: %s", payload["decision"], line)
        airflow_metrics.emit_decision(payload, dag_id=self.dag_id if self.has_dag() else None, task_id=self.task_id)
        return payload

    # ------------------------------------------------------------------ poke / reschedule

    def poke(self, context: Context) -> PokeReturnValue:
        """One evaluation: done on ``recluster``; with ``decide_once`` anything else skips downstream."""
        payload = self._check()
        if payload["decision"] == "recluster":
            return PokeReturnValue(is_done=True, xcom_value=payload)
        if self.decide_once:
            raise AirflowSkipException(f"{self.table} is {payload['decision']}: " + "; ".join(payload["reasons"]))
        return PokeReturnValue(is_done=False, xcom_value=payload)

    # ------------------------------------------------------------------ deferrable

    def execute(self, context: Context) -> Any:
        """Poke/reschedule through the base class; deferrable: evaluate here, then wait in the trigger."""
        if not self.deferrable or self.decide_once:
            return super().execute(context)
        return self._evaluate_or_defer(time.time() + self.timeout)

    def _evaluate_or_defer(self, end_at: float) -> dict[str, Any]:
        """Evaluate on the worker: return the payload on ``recluster``, raise the timeout once ``end_at`` passed,
        else defer to a trigger that watches the stats store's change signal until ``end_at``."""
        # read before evaluating: whatever lands during the evaluation differs from it and wakes the trigger
        signal = self.hook.get_change_signal(ignore_run_id=self._source)
        payload = self._check()
        decision = payload["decision"]
        if decision == "recluster":
            return payload
        headline = "; ".join(payload.get("reasons") or []) or decision
        now = time.time()
        if now >= end_at:  # the evaluation itself ran past the timeout: end here, as the trigger's timeout would
            message = f"{self.table} not degraded before the timeout; last decision {decision}: {headline}"
            if self.soft_fail:  # BaseSensorOperator converts only on the resumed path; this is the first execute
                raise AirflowSkipException(message)
            raise AirflowSensorTimeout(message)
        recheck_at = next_recheck_at(payload, self.sized()[0])
        self.log.info(
            "%s is %s: waiting in the triggerer for new statistics (snapshot %s)%s, at most until %s",
            self.table,
            decision,
            signal.get("snapshot_id"),
            "" if recheck_at is None else f" or a recheck at {_iso(recheck_at)}",
            _iso(end_at),
        )
        self.defer(
            trigger=FileOverlapTrigger(
                table=self.table,
                stats_location=self.stats_location,
                conn_id=self.conn_id,
                iceberg_catalog=self.iceberg_catalog,
                iceberg_conn_id=self.iceberg_conn_id,
                signal=signal,
                poke_interval=self.poke_interval,
                end_at=end_at,
                recheck_at=recheck_at,
                source=self._source,
            ),
            method_name="execute_complete",
            timeout=timedelta(seconds=end_at - now),
        )

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> dict[str, Any]:
        """Resume from the trigger: on a change or a recheck, evaluate again (payload on ``recluster``, else defer
        again until the same ``end_at``); a timeout fails (``soft_fail``: skips); an error fails."""
        event = event or {}
        status = event.get("status")
        if status in ("changed", "recheck"):
            if status == "changed":
                self.log.info(
                    "the statistics of %s changed: %s -> %s", self.table, event.get("previous"), event.get("signal")
                )
            else:
                self.log.info("re-evaluating %s: a time-based guard may have changed the decision", self.table)
            end_at = event.get("end_at")
            return self._evaluate_or_defer(time.time() + self.timeout if end_at is None else float(end_at))
        if status == "timeout":
            raise AirflowSensorTimeout(event.get("message") or f"{self.table} not degraded before the timeout")
        raise AirflowException(f"FileOverlapSensor({self.table}): {event.get('message') or event!r}")


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")
