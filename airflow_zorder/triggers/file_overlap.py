"""FileOverlapTrigger: polls a table's stats from the triggerer until its file overlap warrants re-clustering.

Every read and evaluation runs in a worker thread (``asyncio.to_thread``), never on the event loop.
Events (``TriggerEvent.payload``):

* ``{"status": "success", "message", "payload"}``: the decision is ``recluster`` (or, with ``decide_once``,
  whatever the single evaluation decided); ``payload`` is ``health.evaluate``'s dict;
* ``{"status": "timeout", "message", "payload"}``: ``end_at`` passed without ``recluster`` (last payload);
* ``{"status": "error", "message", "error_type"}``: the stats could not be read or evaluated.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_zorder.core.health import HealthPolicy, parse_columns


class FileOverlapTrigger(BaseTrigger):
    """Evaluate ``table``'s health every ``poke_interval`` seconds until the decision is ``recluster``.

    :param table: the table (path/URI or ``db.table``), as for ``FileStatsHook``
    :param stats_location: stats location (default ``<table>/_zorder/stats``)
    :param conn_id: connection whose extras are the filesystem's options
    :param columns: columns to judge (default: the last clustering's, else all with stats)
    :param policy: ``HealthPolicy.to_dict()`` (JSON form, so the trigger serializes)
    :param num_clustering_columns: the ``d`` of the ideal (default: see ``health.evaluate``)
    :param poke_interval: seconds between evaluations
    :param decide_once: evaluate once and report whatever was decided
    :param end_at: Unix time after which a ``timeout`` event ends the wait (None: wait for ever)
    :param record_decisions: record decisions as stats events (when they change, and the final one)
    :param source: who decides (e.g. ``dag_id.task_id``), kept with the recorded decision
    """

    def __init__(self, table: str, stats_location: str | None = None, conn_id: str | None = None,
                 columns: Sequence[str] | str | None = None, policy: dict[str, Any] | None = None,
                 num_clustering_columns: int | None = None, poke_interval: float = 60.0,
                 decide_once: bool = False, end_at: float | None = None, record_decisions: bool = True,
                 source: str | None = None) -> None:
        super().__init__()
        self.table = table
        self.stats_location = stats_location
        self.conn_id = conn_id
        self.columns = parse_columns(columns)
        self.policy = HealthPolicy.from_dict(policy).to_dict()  # validated here, not in the triggerer
        self.num_clustering_columns = num_clustering_columns
        self.poke_interval = float(poke_interval)
        self.decide_once = bool(decide_once)
        self.end_at = None if end_at is None else float(end_at)
        self.record_decisions = bool(record_decisions)
        self.source = source

    def serialize(self) -> tuple[str, dict[str, Any]]:
        """Classpath and keyword arguments that re-create this trigger in the triggerer."""
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "table": self.table,
                "stats_location": self.stats_location,
                "conn_id": self.conn_id,
                "columns": self.columns,
                "policy": self.policy,
                "num_clustering_columns": self.num_clustering_columns,
                "poke_interval": self.poke_interval,
                "decide_once": self.decide_once,
                "end_at": self.end_at,
                "record_decisions": self.record_decisions,
                "source": self.source,
            },
        )

    def _check(self, hook: Any) -> dict[str, Any]:
        return hook.check(HealthPolicy.from_dict(self.policy), self.columns,
                          num_clustering_columns=self.num_clustering_columns, record=self.record_decisions,
                          final_decisions=("recluster", "healthy", "hold") if self.decide_once else ("recluster",),
                          source=self.source)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Poll (reads in a thread) until ``recluster``, ``end_at``, or an error; yield one event."""
        from airflow_zorder.hooks.file_stats import FileStatsHook

        try:
            hook = FileStatsHook(self.table, self.stats_location, self.conn_id)
        except Exception as exc:  # noqa: BLE001 - reported to the task as an event
            yield TriggerEvent({"status": "error", "message": str(exc), "error_type": type(exc).__name__})
            return
        while True:
            try:
                payload = await asyncio.to_thread(self._check, hook)
            except Exception as exc:  # noqa: BLE001 - reported to the task as an event
                self.log.warning("evaluating %s failed: %s", self.table, exc)
                yield TriggerEvent({"status": "error", "message": f"{type(exc).__name__}: {exc}",
                                    "error_type": type(exc).__name__})
                return
            decision = payload["decision"]
            headline = "; ".join(payload.get("reasons") or []) or decision
            if decision == "recluster" or self.decide_once:
                yield TriggerEvent({"status": "success", "message": f"{decision}: {headline}", "payload": payload})
                return
            self.log.info("%s: %s (next check in %.0f s)", self.table, headline, self.poke_interval)
            now = time.time()
            if self.end_at is not None and now >= self.end_at:
                yield TriggerEvent({"status": "timeout", "payload": payload,
                                    "message": f"{self.table} not degraded before the timeout; last decision "
                                               f"{decision}: {headline}"})
                return
            wait = self.poke_interval if self.end_at is None else min(self.poke_interval, self.end_at - now)
            await asyncio.sleep(max(wait, 0.0))
