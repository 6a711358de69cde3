"""FileStatsHook: a table's stats store (snapshots, runs, events) read with pyarrow, no Spark.

Local paths, ``file:`` URIs and anything pyarrow or fsspec opens (``s3://``, ``gs://``, ``abfs://``,
``hdfs://``, ...).  An optional Airflow connection carries the filesystem's options in its extras,
passed as keyword arguments to ``pyarrow.fs.S3FileSystem`` / ``GcsFileSystem`` / ``AzureFileSystem`` /
``HadoopFileSystem`` (by the location's scheme), or to ``fsspec.filesystem(scheme, ...)`` for other
schemes or when the extras say ``"filesystem": "fsspec"``.  Without a connection, pyarrow's (and
fsspec's) default credential chains apply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

import pyarrow as pa
from airflow.sdk import BaseHook

from airflow_zorder.core import health, metrics, stats_schema, stats_store
from airflow_zorder.core.fs import is_path_table
from airflow_zorder.core.health import HealthPolicy

COLLECT_HINT = "run SparkCollectFileStatsOperator (or spark-submit spark_jobs/collect_stats.py --table {table}) first"

#: pyarrow filesystem class per URI scheme; other schemes go through fsspec.
ARROW_FILESYSTEMS = {
    "s3": "S3FileSystem", "s3a": "S3FileSystem", "s3n": "S3FileSystem",
    "gs": "GcsFileSystem", "gcs": "GcsFileSystem",
    "abfs": "AzureFileSystem", "abfss": "AzureFileSystem", "az": "AzureFileSystem",
    "hdfs": "HadoopFileSystem", "viewfs": "HadoopFileSystem",
}
_FSSPEC_ALIASES = {"s3a": "s3", "s3n": "s3"}


def filesystem_from_options(location: str, options: Mapping[str, Any]) -> Any:
    """The filesystem for ``location`` built from connection extras (see the module doc); None for local paths."""
    opts = dict(options)
    library = str(opts.pop("filesystem", "") or "").lower()
    if library not in ("", "pyarrow", "fsspec"):
        raise ValueError(f"connection extra 'filesystem' must be 'pyarrow' or 'fsspec', not {library!r}")
    scheme = location.split("://", 1)[0].lower() if "://" in location else "file"
    if scheme == "file" and library != "fsspec":
        return None
    if library != "fsspec" and scheme in ARROW_FILESYSTEMS:
        from pyarrow import fs as pafs

        return getattr(pafs, ARROW_FILESYSTEMS[scheme])(**opts)
    import fsspec

    return fsspec.filesystem(_FSSPEC_ALIASES.get(scheme, scheme), **opts)


class FileStatsHook(BaseHook):
    """Read a table's clustering statistics and evaluate its health (``core.health``), with pyarrow only.

    :param table: the table as given to the jobs: a Parquet directory path/URI, or a catalog name ``db.table``
    :param stats_location: where the stats live; default ``<table>/_zorder/stats`` (required for catalog tables)
    :param conn_id: optional Airflow connection whose extras are the filesystem's options
    :param filesystem: a ready filesystem (pyarrow, fsspec) instead of ``conn_id``
    """

    conn_name_attr = "conn_id"
    hook_name = "Z-order file statistics"

    def __init__(self, table: str, stats_location: str | None = None, conn_id: str | None = None, *,
                 filesystem: Any = None, logger_name: str | None = None) -> None:
        super().__init__(logger_name=logger_name)
        if not isinstance(table, str) or not table.strip():
            raise ValueError("table must be a Parquet directory path/URI or a catalog table name, not empty")
        self.table = table.strip()
        self.conn_id = conn_id or None
        self._filesystem = filesystem
        self.default_location = not stats_location
        if stats_location:
            self.stats_location = stats_location.strip()
        elif is_path_table(self.table):
            self.stats_location = stats_store.default_location(self.table)
        else:
            raise ValueError(
                f"{self.table!r} is a catalog table name (no scheme, no slash): pass stats_location= "
                "(where spark_jobs/collect_stats.py wrote its statistics, e.g. its --stats-location)")

    # ------------------------------------------------------------------ storage

    @cached_property
    def _fs(self) -> Any:
        if self._filesystem is not None:
            return self._filesystem
        if not self.conn_id:
            return None
        conn = self.get_connection(self.conn_id)
        return filesystem_from_options(self.stats_location, conn.extra_dejson or {})

    def get_conn(self) -> Any:
        """The filesystem the stats are read with (``None``: chosen from the location by ``stats_store``)."""
        return self._fs

    def _not_found(self, exc: Exception) -> stats_store.StatsNotFoundError:
        hint = COLLECT_HINT.format(table=self.table)
        loc = self.stats_location
        try:
            io, base = stats_store.resolve_io(loc, self._fs)
            exists = io.exists(base)
            table_exists = True
            if self.default_location and not exists:
                tio, tbase = stats_store.resolve_io(self.table, self._fs)
                table_exists = tio.exists(tbase)
        except Exception:  # noqa: BLE001 - the original error is the better message then
            return stats_store.StatsNotFoundError(f"{exc}; {hint}")
        if not table_exists:
            msg = f"table {self.table} does not exist (nothing at that path): check the table argument"
        elif not exists and self.default_location:
            msg = f"statistics of {self.table} were never collected ({loc} does not exist): {hint}"
        elif not exists:
            msg = (f"stats location {loc} does not exist: check stats_location (collect_stats.py --stats-location) "
                   f"or {hint}")
        else:
            msg = f"statistics of {self.table} were never collected at {loc} (no committed snapshot): {hint}"
        return stats_store.StatsNotFoundError(msg)

    def get_snapshot(self, columns: Sequence[str] | None = None) -> pa.Table:
        """The latest stats snapshot (FILE_STATS_SCHEMA rows), all columns or only ``columns``."""
        try:
            return stats_store.load_latest(self.stats_location, self._fs, columns=list(columns) if columns else None)
        except stats_store.StatsNotFoundError as exc:
            raise self._not_found(exc) from exc

    def get_events(self, kind: str | None = None) -> pa.Table:
        """The table's events (EVENTS_SCHEMA: re-clusterings, decisions), oldest first."""
        return stats_store.load_events(self.stats_location, self._fs, kind=kind)

    def get_latest_run(self) -> dict[str, Any] | None:
        """The newest collection run's record, or ``None``."""
        return stats_store.latest_run(self.stats_location, self._fs)

    def get_history(self, columns: Sequence[str] | None = None) -> pa.Table:
        """One row per collection run with its snapshot's headline / worst column / average depth (``load_history``).

        ``columns``: default the last clustering's columns, else every column with stats.
        """
        cols = list(columns) if columns else None
        if cols is None:
            if stats_store.latest_snapshot_id(self.stats_location, self._fs) is None:
                return stats_store.load_history(self.stats_location, self._fs)
            snap = self.get_snapshot()
            cols, _ = health.default_columns(
                sorted({c for c in snap["column_name"].to_pylist() if c is not None}), self.get_events("cluster"))
        return stats_store.load_history(self.stats_location, self._fs, clustering_columns=cols or None)

    # ------------------------------------------------------------------ metrics and decisions

    def _snapshot_for(self, columns: Sequence[str] | str | None, events: pa.Table) -> pa.Table:
        """The snapshot rows evaluation needs: the requested (else the last clustering's) columns only."""
        wanted = health.parse_columns(columns)
        if wanted is None:
            last = health.last_cluster_event(events)
            wanted = list(last.get("columns") or []) if last else None
            return self.get_snapshot(wanted or None)
        snap = self.get_snapshot(wanted)
        have = set(snap["column_name"].to_pylist()) if snap.num_rows else set()
        if not set(wanted) <= have:
            snap = self.get_snapshot()  # let evaluate name every column that has statistics
        return snap

    def clustering(self, columns: Sequence[str] | str | None = None,
                   num_clustering_columns: int | None = None) -> dict[str, Any]:
        """``metrics.table_clustering`` of the latest snapshot (columns default as in :meth:`evaluate`)."""
        events = self.get_events()
        snap = self._snapshot_for(columns, events)
        available = sorted({c for c in snap["column_name"].to_pylist() if c is not None})
        cols = health.parse_columns(columns)
        if cols is None:
            cols, _ = health.default_columns(available, events)
        unknown = [c for c in cols if c not in available]
        if unknown:
            raise ValueError(f"unknown column(s) {unknown}: the statistics of {self.table} have {available}")
        return metrics.table_clustering(stats_schema.to_footer_stats(snap), cols, num_clustering_columns)

    def evaluate(self, policy: HealthPolicy | None = None, columns: Sequence[str] | str | None = None, *,
                 events: pa.Table | None = None, now: Any = None,
                 num_clustering_columns: int | None = None) -> dict[str, Any]:
        """``health.evaluate`` on the latest snapshot; stats age counts from the newest collection run."""
        events = self.get_events() if events is None else events
        snap = self._snapshot_for(columns, events)
        collected_at = health.snapshot_time(snap, self.get_latest_run())
        return health.evaluate(snap, columns, policy, events=events, now=now, table=self.table,
                               stats_location=self.stats_location, collected_at=collected_at,
                               num_clustering_columns=num_clustering_columns)

    def check(self, policy: HealthPolicy | None = None, columns: Sequence[str] | str | None = None, *,
              num_clustering_columns: int | None = None, record: bool = True,
              final_decisions: Sequence[str] = ("recluster",), source: str | None = None) -> dict[str, Any]:
        """:meth:`evaluate`, then record the decision as an event when it differs from the last recorded one
        or is in ``final_decisions`` (one that ends the caller's wait).  Recording is best effort: a read-only
        stats store does not stop the decision."""
        events = self.get_events()
        payload = self.evaluate(policy, columns, events=events, num_clustering_columns=num_clustering_columns)
        if record:
            prev = health.last_decision(self.stats_location, self._fs, events=events)
            if prev is None or prev.get("decision") != payload["decision"] or payload["decision"] in final_decisions:
                try:
                    health.record_decision(self.stats_location, payload, self._fs, source=source)
                except Exception as exc:  # noqa: BLE001 - the decision stands without its history entry
                    self.log.warning("could not record the decision at %s: %s", self.stats_location, exc)
        return payload
