"""The advisor's recommendations as events of the table (kind ``advice``): the UI shows the last one, and the
sensor's ``columns="auto"`` reads the columns it chose last (the columns in use, for its margin)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from airflow_zorder.core.policy.events import Events, event_rows
from airflow_zorder.core.stats import stats_store

__all__ = ["ADVICE_EVENT", "last_advice", "record_advice"]

ADVICE_EVENT = "advice"


def record_advice(
    stats_location: str, advice: Mapping[str, Any], filesystem: Any = None, source: str | None = None
) -> str:
    """Record a recommendation (:meth:`~airflow_zorder.core.advisor.recommend.Recommendation.to_dict`, plus
    ``chosen``: the columns a caller went with, when it applied a margin) as an ``advice`` event."""
    event = {
        "kind": ADVICE_EVENT,
        "run_id": source,
        "table_name": advice.get("table"),
        "status": "changed" if advice.get("changed") else "recommended",
        "columns": list(advice.get("chosen") or advice.get("columns") or []),
        "curve": advice.get("curve"),
        "details": json.dumps(dict(advice), default=str, separators=(",", ":")),
    }
    return stats_store.record_event(stats_location, event, filesystem=filesystem)


def last_advice(stats_location: str, filesystem: Any = None, *, events: Events = None) -> dict[str, Any] | None:
    """The newest ``advice`` event's recommendation (with ``chosen``: the columns recorded), or None."""
    if events is None:
        events = stats_store.load_events(stats_location, filesystem, kind=ADVICE_EVENT)
    rows = event_rows(events, ADVICE_EVENT)
    if not rows:
        return None
    ev = rows[-1]
    try:
        advice = json.loads(ev.get("details") or "{}")
    except ValueError:
        advice = {}
    advice = advice if isinstance(advice, dict) else {}
    advice["chosen"] = list(ev.get("columns") or [])
    advice.setdefault("recorded_at", str(ev.get("at")))
    return advice
