"""Airflow metrics (``Stats``) of the sensor's decisions and the jobs' runs, for alerts from StatsD or OpenTelemetry.

Airflow sends them wherever its ``[metrics]`` section points (``statsd_on``, ``otel_on``, Datadog), under its
prefix (``statsd_prefix``, default ``airflow``).  Every name ends in the table's key (:func:`table_key`), because
plain StatsD drops tags; the tags ``table``, ``dag_id`` and ``task_id`` are sent too, for backends that keep them.

* ``zorder.decision.worst_ratio_to_ideal.<table>`` (gauge): the decision's worst column's files read by a point
  query relative to the ideal layout (``headline``; 1.0 = ideal), at every evaluation of ``FileOverlapSensor``.
* ``zorder.cluster.files_rewritten.<table>``, ``zorder.cluster.bytes_rewritten.<table>`` (counters): what a
  successful re-clustering rewrote; ``zorder.cluster.files_before.<table>``, ``zorder.cluster.files_after.<table>``
  (gauges): the rewritten partitions' files before and after it.
* ``zorder.stats.files_read.<table>`` (counter): the files the stats job read (new or changed) in a run.

Emitting never fails the task: a backend error is logged.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Mapping
from typing import Any

from airflow.sdk.observability.stats import Stats

from airflow_zorder.core.storage.locations import is_path_table, parse_location

log = logging.getLogger(__name__)

DECISION_WORST_RATIO = "zorder.decision.worst_ratio_to_ideal"
CLUSTER_FILES_REWRITTEN = "zorder.cluster.files_rewritten"
CLUSTER_BYTES_REWRITTEN = "zorder.cluster.bytes_rewritten"
CLUSTER_FILES_BEFORE = "zorder.cluster.files_before"
CLUSTER_FILES_AFTER = "zorder.cluster.files_after"
STATS_FILES_READ = "zorder.stats.files_read"

_KEY_MAX = 120  # StatsD names must stay under 250 characters with the prefix and the metric's own name
_NOT_KEY = re.compile(r"[^A-Za-z0-9_-]+")


def table_key(table: str) -> str:
    """The table as one metric name segment: its location (``s3a`` as ``s3``, local paths without ``file://``) with
    every run of other characters than letters, digits, ``_`` and ``-`` as one ``_``; a long one keeps its tail and
    a hash.  ``s3a://lake/events`` -> ``s3_lake_events``, ``/data/events`` -> ``data_events``, ``db.t`` -> ``db_t``."""
    text = table.strip()
    if is_path_table(text):
        loc = parse_location(text)
        text = loc.path if loc.is_local else loc.uri()
    key = _NOT_KEY.sub("_", text).strip("_") or "table"
    if len(key) > _KEY_MAX:
        digest = hashlib.sha1(key.encode(), usedforsecurity=False).hexdigest()[:8]
        key = f"{key[-(_KEY_MAX - 9) :].lstrip('_')}_{digest}"
    return key


def _tags(table: str, dag_id: str | None, task_id: str | None) -> dict[str, str]:
    tags = {"table": table, "dag_id": dag_id, "task_id": task_id}
    return {k: v for k, v in tags.items() if v}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _emit(kind: str, name: str, value: float, table: str, tags: dict[str, str]) -> None:
    stat = f"{name}.{table_key(table)}"
    try:
        if kind == "gauge":
            Stats.gauge(stat, value, tags=tags)
        else:
            Stats.incr(stat, int(value), tags=tags)
    except Exception as exc:  # noqa: BLE001 - a metrics backend must never fail the task
        log.warning("could not emit metric %s: %s", stat, exc)


def emit_decision(payload: Mapping[str, Any], *, dag_id: str | None = None, task_id: str | None = None) -> None:
    """The sensor's evaluation: its worst ratio to ideal (none when no column has statistics)."""
    ratio = _number(payload.get("headline"))
    table = str(payload.get("table") or "")
    if ratio is not None and table:
        _emit("gauge", DECISION_WORST_RATIO, ratio, table, _tags(table, dag_id, task_id))


def emit_job_result(
    job: str, result: Mapping[str, Any], *, dag_id: str | None = None, task_id: str | None = None
) -> None:
    """A job's successful result (``job``: the operator's ``job_label``, ``cluster`` or ``stats``); figures the
    result lacks (e.g. a deploy-mode-cluster record read back from the stats store) are not sent."""
    table = str(result.get("table") or "")
    if not table:
        return
    tags = _tags(table, dag_id, task_id)
    if job == "cluster" and result.get("status") == "clustered":
        rewritten = result.get("rewritten") or {}
        figures = [
            ("incr", CLUSTER_FILES_REWRITTEN, rewritten.get("files")),
            ("incr", CLUSTER_BYTES_REWRITTEN, rewritten.get("bytes")),
            ("gauge", CLUSTER_FILES_BEFORE, (result.get("before") or {}).get("files")),
            ("gauge", CLUSTER_FILES_AFTER, (result.get("after") or {}).get("files")),
        ]
    elif job == "stats" and result.get("status") in ("ok", "partial"):
        figures = [("incr", STATS_FILES_READ, result.get("files_read"))]
    else:
        return
    for kind, name, value in figures:
        number = _number(value)
        if number is not None:
            _emit(kind, name, number, table, tags)
