"""FileOverlapTrigger: waits in the triggerer until something a table's health decision depends on changes.

Cheap by design: it never loads a snapshot nor evaluates health.  Every ``poke_interval`` it lists the
stats store (``FileStatsHook.get_change_signal``: the newest snapshot id, the newest collection run, the
event files; names only, in a worker thread via ``asyncio.to_thread``) and compares with the ``signal``
the sensor read before its own evaluation.  The sensor then evaluates on the worker (``execute_complete``).
Events (``TriggerEvent.payload``; each carries ``end_at`` back so the sensor can defer again within the
same overall timeout):

* ``{"status": "changed", "signal", "previous", "end_at"}``: a new snapshot, collection run or event
  (with no ``signal`` given, at once: the sensor evaluates and starts from what it sees);
* ``{"status": "recheck", "recheck_at", "end_at"}``: ``recheck_at`` passed (a time-based guard may have
  changed the decision: ``recluster_policy.next_recheck_at``);
* ``{"status": "timeout", "message", "end_at"}``: ``end_at`` passed with nothing changed;
* ``{"status": "error", "message", "error_type", "end_at"}``: the store could not be listed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent


class FileOverlapTrigger(BaseTrigger):
    """Poll ``table``'s stats store for a change of ``signal`` until then, ``recheck_at`` or ``end_at``.

    :param table: the table (path/URI or ``db.table``), as for ``FileStatsHook``
    :param stats_location: stats location (default ``<table>/_zorder/stats``)
    :param conn_id: connection that opens the store
    :param signal: ``FileStatsHook.get_change_signal()`` as the sensor read it (None: report a change at once)
    :param poke_interval: seconds between listings
    :param end_at: Unix time after which a ``timeout`` event ends the wait (None: wait for ever)
    :param recheck_at: Unix time at which a ``recheck`` event asks the sensor to evaluate again (None: never)
    :param source: who watches (e.g. ``dag_id.task_id``): the decisions it records itself are not a change
    :param iceberg_catalog: ``table`` is ``namespace.table`` of this pyiceberg catalog
    :param iceberg_conn_id: or of the catalog this Airflow ``iceberg`` connection names
    """

    def __init__(
        self,
        table: str,
        stats_location: str | None = None,
        conn_id: str | None = None,
        signal: dict[str, Any] | None = None,
        poke_interval: float = 60.0,
        end_at: float | None = None,
        recheck_at: float | None = None,
        source: str | None = None,
        iceberg_catalog: str | None = None,
        iceberg_conn_id: str | None = None,
    ) -> None:
        super().__init__()
        self.table = table
        self.stats_location = stats_location
        self.conn_id = conn_id
        self.signal = None if signal is None else dict(signal)
        self.poke_interval = float(poke_interval)
        self.end_at = None if end_at is None else float(end_at)
        self.recheck_at = None if recheck_at is None else float(recheck_at)
        self.source = source
        self.iceberg_catalog = iceberg_catalog
        self.iceberg_conn_id = iceberg_conn_id

    def serialize(self) -> tuple[str, dict[str, Any]]:
        """Classpath and keyword arguments that re-create this trigger in the triggerer."""
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "table": self.table,
                "stats_location": self.stats_location,
                "conn_id": self.conn_id,
                "signal": self.signal,
                "poke_interval": self.poke_interval,
                "end_at": self.end_at,
                "recheck_at": self.recheck_at,
                "source": self.source,
                "iceberg_catalog": self.iceberg_catalog,
                "iceberg_conn_id": self.iceberg_conn_id,
            },
        )

    def _error(self, exc: BaseException) -> TriggerEvent:
        return TriggerEvent(
            {
                "status": "error",
                "message": f"{type(exc).__name__}: {exc}",
                "error_type": type(exc).__name__,
                "end_at": self.end_at,
            }
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """List the store every ``poke_interval`` (in a thread) until a change, ``recheck_at``, ``end_at`` or an error."""
        from airflow_zorder.hooks.file_stats import FileStatsHook

        try:
            # one hook per run (not per listing): its connection and catalog are looked up on its first listing, once
            hook = FileStatsHook(
                self.table,
                self.stats_location,
                self.conn_id,
                iceberg_catalog=self.iceberg_catalog,
                iceberg_conn_id=self.iceberg_conn_id,
            )
        except Exception as exc:  # noqa: BLE001 - reported to the task as an event
            yield self._error(exc)
            return
        while True:
            try:
                signal = await asyncio.to_thread(hook.get_change_signal, ignore_run_id=self.source)
            except Exception as exc:  # noqa: BLE001 - reported to the task as an event
                self.log.warning("listing the stats of %s failed: %s", self.table, exc)
                yield self._error(exc)
                return
            if signal != self.signal:
                yield TriggerEvent(
                    {"status": "changed", "signal": signal, "previous": self.signal, "end_at": self.end_at}
                )
                return
            now = time.time()
            if self.recheck_at is not None and now >= self.recheck_at:
                yield TriggerEvent({"status": "recheck", "recheck_at": self.recheck_at, "end_at": self.end_at})
                return
            if self.end_at is not None and now >= self.end_at:
                yield TriggerEvent(
                    {
                        "status": "timeout",
                        "end_at": self.end_at,
                        "message": f"{self.table} not degraded before the timeout: its statistics "
                        f"did not change (snapshot {signal.get('snapshot_id')})",
                    }
                )
                return
            wait = min([self.poke_interval] + [t - now for t in (self.recheck_at, self.end_at) if t is not None])
            await asyncio.sleep(max(wait, 0.0))
