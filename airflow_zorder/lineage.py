"""OpenLineage for the two Spark operators, and their Airflow metrics after a run (``ZorderLineageMixin``).

The OpenLineage provider calls ``get_openlineage_facets_on_complete`` when a task ends.  It reports the table
itself as the input and the output dataset (named from its location as OpenLineage names datasets:
:func:`dataset_name`), the stats store as an output of the stats job, and a ``zorder`` run facet
(:class:`ZorderRunFacet`) with the run's curve, columns, files and bytes before and after, what was rewritten,
and the overlap sensor's decision that led to it.  Spark's own OpenLineage listener, when the cluster runs it,
sees the job's staging directory (``_zorder/staging/<run>``) as the output: this is the lineage to use.

The OpenLineage classes are imported only when the provider asks, so the operators work without it
(``get_openlineage_facets_on_complete`` then returns None).  See docs/lineage.md.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
from collections.abc import Mapping
from typing import Any

from airflow_zorder import airflow_metrics
from airflow_zorder.core.storage.locations import is_path_table, parse_location

log = logging.getLogger(__name__)

FACET_NAME = "zorder"
#: Where the facet's fields are described (the facet's ``_schemaURL``).
FACET_SCHEMA_URL = "https://pypi.org/project/airflow-zorder/#docs/lineage.md"
_METASTORE_KEYS = ("spark.hadoop.hive.metastore.uris", "spark.hive.metastore.uris", "hive.metastore.uris")
#: The decision's fields the facet keeps (the full payload, with its plan, stays in the sensor's XCom).
DECISION_KEYS = (
    "decision",
    "evaluated_at",
    "snapshot_id",
    "headline",
    "worst_column",
    "num_files",
    "partitions",
    "reasons",
)


def dataset_name(table: str, conf: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """``(namespace, name)`` of a table or stats location, as OpenLineage's naming spec has them.

    Local paths: ``file`` and the absolute path; ``s3``/``s3a`` and ``gs``: ``s3://bucket`` / ``gs://bucket`` and
    the key; Azure: ``abfss://container@account...`` and the path; HDFS: ``hdfs://namenode:port`` and the path.  A
    catalog table ``db.table``: ``hive://host:port`` from the Spark conf's ``hive.metastore.uris`` (the first one),
    else ``spark_catalog`` (Spark's built-in catalog has no OpenLineage naming); a name without a database is in
    ``default``.
    """
    if is_path_table(table):
        loc = parse_location(table)
        if loc.is_local:
            return "file", loc.path
        if loc.store in ("s3", "gcs"):
            return f"{'s3' if loc.store == 's3' else 'gs'}://{loc.authority}", loc.path.strip("/")
        if loc.store == "azure":
            return f"abfss://{loc.authority}", loc.path.strip("/")
        return f"{loc.scheme}://{loc.authority}", loc.path or "/"
    name = table.strip().strip("`")
    if "." not in name:
        name = f"default.{name}"
    uris = next((str(conf[k]) for k in _METASTORE_KEYS if conf and conf.get(k)), "")
    first = uris.split(",")[0].strip()
    if "://" in first:
        return f"hive://{first.split('://', 1)[1].rstrip('/')}", name
    return "spark_catalog", name


def decision_before(events: list[dict[str, Any]], before: dt.datetime | None) -> dict[str, Any] | None:
    """The newest recorded decision (``decision`` events of the stats store) at or before ``before`` (None: the
    newest), trimmed to :data:`DECISION_KEYS` plus its ``source`` (the sensor's ``dag_id.task_id``)."""
    from airflow_zorder.core.policy.events import DECISION_EVENT, event_rows, last_decision
    from airflow_zorder.core.stats.stats_store import as_datetime

    rows = event_rows(events, DECISION_EVENT)
    before = as_datetime(before)
    if before is not None:
        rows = [r for r in rows if (at := as_datetime(r.get("at"))) is not None and at <= before]
    if not rows:
        return None
    payload = last_decision("", events=rows) or {}
    return {**{k: payload.get(k) for k in DECISION_KEYS}, "source": rows[-1].get("run_id")}


def run_facet_fields(job: str, result: Mapping[str, Any], decision: Mapping[str, Any] | None) -> dict[str, Any]:
    """The :class:`ZorderRunFacet` fields of a job's result (``job``: the operator's ``job_label``)."""
    before, after = result.get("before") or {}, result.get("after") or {}
    rewritten = result.get("rewritten") or {}
    return {
        "job": job,
        "runId": result.get("run_id"),
        "status": result.get("status"),
        "table": result.get("table"),
        "statsLocation": result.get("stats_location"),
        "curve": result.get("curve"),
        "columns": list(result.get("columns") or []) or None,
        "mode": result.get("mode"),
        "filesBefore": before.get("files"),
        "bytesBefore": before.get("bytes"),
        "filesAfter": after.get("files"),
        "bytesAfter": after.get("bytes"),
        "rows": after.get("rows"),
        "filesRewritten": rewritten.get("files"),
        "bytesRewritten": rewritten.get("bytes"),
        "filesTotal": result.get("files_total"),
        "filesRead": result.get("files_read"),
        "snapshotId": result.get("snapshot_id"),
        "decision": dict(decision) if decision else None,
    }


@functools.cache
def _facet_class() -> type:
    """:class:`ZorderRunFacet`, built on first use: the OpenLineage client is imported only then."""
    import attr
    from openlineage.client.generated.base import RunFacet

    fields = {k: attr.field(default=None) for k in run_facet_fields("", {}, None)}

    def _get_schema() -> str:
        return FACET_SCHEMA_URL

    cls = attr.make_class(
        "ZorderRunFacet", fields, bases=(RunFacet,), class_body={"_get_schema": staticmethod(_get_schema)}
    )
    cls.__module__ = __name__
    cls.__doc__ = "An airflow-zorder run: the job, its figures before and after, and the decision that led to it."
    return cls


def __getattr__(name: str) -> Any:
    """``ZorderRunFacet`` is made when first imported (it subclasses OpenLineage's ``RunFacet``)."""
    if name == "ZorderRunFacet":
        return _facet_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ZorderLineageMixin:
    """OpenLineage facets and Airflow metrics of a ``SparkZorderJobOperator`` run, read from ``self.job_result``
    (the job's successful result, None until there is one).  The first base of the operator class."""

    job_result: dict[str, Any] | None = None

    def post_execute(self, context: Any, result: Any = None) -> None:
        """Send the run's Airflow metrics (:mod:`airflow_zorder.airflow_metrics`)."""
        super().post_execute(context, result)  # type: ignore[misc]
        if self.job_result:
            airflow_metrics.emit_job_result(
                self.job_label,  # type: ignore[attr-defined]
                self.job_result,
                dag_id=self.dag_id if self.has_dag() else None,  # type: ignore[attr-defined]
                task_id=self.task_id,  # type: ignore[attr-defined]
            )

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """``OperatorLineage`` of the run (module doc); an empty one without a result, None without OpenLineage."""
        try:
            from airflow.providers.openlineage.extractors import OperatorLineage
        except ImportError:
            return None
        result = self.job_result
        if not result:
            return OperatorLineage()
        from openlineage.client.generated.base import InputDataset, OutputDataset

        job: str = self.job_label  # type: ignore[attr-defined]
        conf = getattr(self, "conf", None) or {}
        # a table named through its catalog but located by path (Iceberg) is named by its location
        table = str(result.get("location") or result.get("table") or self.table)  # type: ignore[attr-defined]
        namespace, name = dataset_name(table, conf)
        if job == "stats":
            location = result.get("stats_location")
            outputs = [OutputDataset(*dataset_name(str(location)))] if location else []
        else:
            outputs = [OutputDataset(namespace, name, outputFacets=self._output_statistics(result))]
        decision = self._decision(task_instance) if job == "cluster" else None
        facet = _facet_class()(**run_facet_fields(job, result, decision))
        return OperatorLineage(inputs=[InputDataset(namespace, name)], outputs=outputs, run_facets={FACET_NAME: facet})

    @staticmethod
    def _output_statistics(result: Mapping[str, Any]) -> dict[str, Any]:
        """The rewritten part's rows, bytes and files as OpenLineage's ``outputStatistics`` (a clustering run)."""
        after = result.get("after") or {}
        if after.get("files") is None:
            return {}
        from openlineage.client.generated.output_statistics_output_dataset import OutputStatisticsOutputDatasetFacet

        stats = OutputStatisticsOutputDatasetFacet(
            rowCount=after.get("rows"), size=after.get("bytes"), fileCount=after.get("files")
        )
        return {"outputStatistics": stats}

    def _decision(self, task_instance: Any) -> dict[str, Any] | None:
        """The sensor's decision recorded in the stats store before this task started (None: none, or unreadable)."""
        from airflow_zorder.core.policy.events import DECISION_EVENT
        from airflow_zorder.hooks.file_stats import FileStatsHook

        result = self.job_result or {}
        try:
            hook = FileStatsHook(
                str(result.get("table") or self.table),  # type: ignore[attr-defined]
                result.get("stats_location") or getattr(self, "stats_location", None),
                getattr(self, "stats_conn_id", None),
            )
            events = hook.get_events(DECISION_EVENT).to_pylist()
        except Exception as exc:  # noqa: BLE001 - lineage must not fail the task: report it without the decision
            log.warning("OpenLineage: the decisions of %s could not be read: %s", result.get("table"), exc)
            return None
        return decision_before(events, getattr(task_instance, "start_date", None))
