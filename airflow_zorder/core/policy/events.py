"""The table's events as the policy reads and writes them: the last re-clustering it judges against, and the
``decision`` events that record its payloads (the UI shows the last one)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from airflow_zorder.core.policy.formatting import format_time
from airflow_zorder.core.policy.guards import DECISIONS
from airflow_zorder.core.stats import stats_store

__all__ = ["DECISION_EVENT", "Events", "event_rows", "last_cluster_event", "last_decision", "record_decision"]

DECISION_EVENT = "decision"

#: Events as given: the ``stats_store.load_events`` table or plain records.
Events = pa.Table | Sequence[Mapping[str, Any]] | None


def event_rows(events: Events, kind: str) -> list[dict[str, Any]]:
    """Events of ``kind`` as dicts, oldest first."""
    if events is None:
        return []
    rows = events.to_pylist() if isinstance(events, pa.Table) else [dict(e) for e in events]
    rows = [r for r in rows if r.get("kind") == kind]
    return sorted(rows, key=lambda r: stats_store.as_datetime(r.get("at")) or dt.datetime.min.replace(tzinfo=dt.UTC))


def last_cluster_event(events: Events) -> dict[str, Any] | None:
    """The newest successful re-clustering event (a dict), or None."""
    done = [e for e in event_rows(events, "cluster") if e.get("status") in (None, "clustered")]
    return done[-1] if done else None


def record_decision(
    stats_location: str, payload: Mapping[str, Any], filesystem: Any = None, source: str | None = None
) -> str:
    """Record an :func:`~airflow_zorder.core.policy.recluster_policy.evaluate` payload as a ``decision`` event of
    the table (the UI shows the last one)."""
    if payload.get("decision") not in DECISIONS:
        raise ValueError(f"not an evaluation payload: decision {payload.get('decision')!r}")
    event = {
        "kind": DECISION_EVENT,
        "run_id": source,
        "table_name": payload.get("table") or None,
        "at": payload.get("evaluated_at"),
        "status": payload["decision"],
        "columns": list((payload.get("columns") or {}).keys()),
        "partitions": list(payload.get("partitions") or []),
        "details": json.dumps(_without_file_lists(payload), default=str, separators=(",", ":")),
    }
    return stats_store.record_event(stats_location, event, filesystem=filesystem)


def _without_file_lists(payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """The payload as recorded: an incremental plan keeps its totals and reasons but not its bins' paths
    (the XCom has them; the event history would grow by every planned file at every decision)."""
    plan = payload.get("plan")
    if not isinstance(plan, Mapping):
        return payload
    parts = [
        {**e, "bins": [{k: v for k, v in b.items() if k != "paths"} for b in e.get("bins") or []]}
        for e in plan.get("partitions") or []
    ]
    return {**payload, "plan": {**plan, "partitions": parts}}


def last_decision(stats_location: str, filesystem: Any = None, *, events: Events = None) -> dict[str, Any] | None:
    """The payload of the newest ``decision`` event (``None`` if none); ``events`` saves re-reading them."""
    if events is None:
        events = stats_store.load_events(stats_location, filesystem, kind=DECISION_EVENT)
    rows = event_rows(events, DECISION_EVENT)
    if not rows:
        return None
    ev = rows[-1]
    try:
        payload = json.loads(ev.get("details") or "")
        if isinstance(payload, dict) and payload.get("decision") in DECISIONS:
            return payload
    except ValueError:
        pass
    return {
        "table": ev.get("table_name"),
        "stats_location": stats_location,
        "decision": ev.get("status"),
        "evaluated_at": format_time(stats_store.as_datetime(ev.get("at"))),
        "partitions": list(ev.get("partitions") or []),
        "columns": {c: {} for c in ev.get("columns") or []},
        "reasons": [],
    }
