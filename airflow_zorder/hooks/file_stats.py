"""FileStatsHook: a table's stats store (snapshots, runs, events) read with pyarrow, no Spark.

Locations are opened by :mod:`airflow_zorder.core.storage.locations` (local paths, ``file:``, ``s3://``/``s3a://``,
``gs://``, ``abfs://``, ``hdfs://``, and fsspec schemes).  ``conn_id`` names a standard Airflow connection
whose credentials open the store (``aws`` for S3: :mod:`airflow_zorder.hooks.connections`); without
one, the store's default credential chain applies.

A path table is opened through the table seam (:func:`airflow_zorder.core.tables.open_table`: its format
detected once, with the hook's credentials). A format whose metadata keeps per-file statistics (a Delta Lake
log) is watched through it, with no stats job: only the events (decisions, re-clusterings) live in the stats
location, and the statistics the metadata lacks are taken from the stats job's snapshot of the very same version
(the one rule, :mod:`airflow_zorder.core.stats.metadata_merge`). A format the provider does not handle, or a
directory inside any format's table, is refused before its stats are read.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cached_property
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from airflow.sdk import BaseHook
from pyarrow import fs as pafs

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.jobs.options import stats_location_for
from airflow_zorder.core.policy import events as policy_events
from airflow_zorder.core.policy import history, metrics, recluster_policy
from airflow_zorder.core.policy.plan_defaults import DEFAULT_CURVE
from airflow_zorder.core.policy.recluster_policy import HealthPolicy, IncrementalParams
from airflow_zorder.core.stats import metadata_merge, stats_schema, stats_store
from airflow_zorder.core.storage import locations
from airflow_zorder.core.storage.io import filesystem_for
from airflow_zorder.core.storage.io.arrow import ArrowFileSystem
from airflow_zorder.core.storage.locations import is_path_table
from airflow_zorder.core.storage.store_options import StoreOptions
from airflow_zorder.core.tables import open_table
from airflow_zorder.core.tables.protocol import TableFormat
from airflow_zorder.hooks import connections
from airflow_zorder.hooks.iceberg_catalog import check_one_catalog, connection_catalog

COLLECT_HINT = "run SparkCollectFileStatsOperator (or spark-submit spark_jobs/collect_stats.py --table {table}) first"


class FileStatsHook(BaseHook):
    """Read a table's clustering statistics and evaluate its health (``core.policy.recluster_policy``), with pyarrow only.

    :param table: the table as given to the jobs: a Parquet directory path/URI, or a catalog name ``db.table``
    :param stats_location: where the stats live; default ``<table>/_zorder/stats`` (required for catalog tables)
    :param conn_id: optional Airflow connection whose credentials open the store (``aws`` for S3; see
        :mod:`airflow_zorder.hooks.connections`); none: the store's default credential chain
    :param filesystem: a ready pyarrow filesystem instead of ``conn_id``
    :param iceberg_catalog: ``table`` is ``namespace.table`` of this pyiceberg catalog (its configuration:
        ``.pyiceberg.yaml`` or ``PYICEBERG_CATALOG__<NAME>__<KEY>`` variables; ``catalog_properties`` over it, e.g.
        an ``iceberg`` connection's); its statistics come from the manifests, the events default to
        ``<table location>/_zorder/stats``
    :param iceberg_conn_id: instead of ``iceberg_catalog``, an Airflow ``iceberg`` connection naming the catalog
        (the Iceberg provider's hook: :mod:`airflow_zorder.hooks.iceberg_catalog`)
    """

    conn_name_attr = "conn_id"
    hook_name = "Z-order file statistics"

    def __init__(
        self,
        table: str,
        stats_location: str | None = None,
        conn_id: str | None = None,
        *,
        filesystem: Any = None,
        logger_name: str | None = None,
        iceberg_catalog: str | None = None,
        catalog_properties: dict[str, str] | None = None,
        iceberg_conn_id: str | None = None,
    ) -> None:
        """Check the arguments only: the connections, the catalog and the table are looked up on first use, once
        per hook (as the amazon provider's ``AwsGenericHook.conn_config``), so a hook is cheap to build and to keep."""
        super().__init__(logger_name=logger_name)
        if not isinstance(table, str) or not table.strip():
            raise InvalidInputError("table must be a Parquet directory path/URI or a catalog table name, not empty")
        self.table = table.strip()
        self.conn_id = conn_id or None
        self.iceberg_conn_id = iceberg_conn_id or None
        check_one_catalog(iceberg_catalog or None, self.iceberg_conn_id)
        self._given_catalog = iceberg_catalog or None
        self._given_properties = dict(catalog_properties or {})
        self._given_location = stats_location or None
        self._filesystem = filesystem
        self.default_location = not stats_location
        self._options: dict[str, StoreOptions] = {}  # the connection's, per store (_store_options)
        self._own_store: str | None = None  # the connection's store, once resolved
        self._catalog_options: StoreOptions | None = None  # the connection's, as an Iceberg catalog's FileIO got them
        self._collected_cache: dict[tuple, pa.Table | None] = {}  # the stats job's rows (_collected_rows)
        if not self._in_catalog:
            _ = self.stats_location  # a catalog name without stats_location is refused here (no I/O: names only)

    @property
    def _in_catalog(self) -> bool:
        """The table is named in an Iceberg catalog (given, or by an ``iceberg`` connection)."""
        return bool(self._given_catalog or self.iceberg_conn_id)

    @cached_property
    def iceberg_catalog_config(self) -> tuple[str, dict[str, str]] | None:
        """``(name, properties)`` of the Iceberg catalog the table is in (None: not an Iceberg table); an ``iceberg``
        connection's are looked up here, on first use, once per hook; the given ``catalog_properties`` win."""
        if self.iceberg_conn_id:
            name, props = connection_catalog(self.iceberg_conn_id)
            return name, {**props, **self._given_properties}
        if self._given_catalog:
            return self._given_catalog, dict(self._given_properties)
        return None

    @property
    def iceberg_catalog(self) -> str | None:
        """The Iceberg catalog's name (an ``iceberg`` connection's: named after the connection), or None."""
        config = self.iceberg_catalog_config
        return config[0] if config else None

    @cached_property
    def stats_location(self) -> str:
        """Where the stats live: the given location, else ``<table>/_zorder/stats``; an Iceberg table's default is
        ``<its location>/_zorder/stats``, known once its catalog is opened (on first use)."""
        home = self._opened.home if self._in_catalog and not self._given_location else None
        location = stats_location_for(self.table, self._given_location, home=home)
        if location is None:
            raise InvalidInputError(
                f"{self.table!r} is a catalog table name (no scheme, no slash): pass stats_location= "
                "(where spark_jobs/collect_stats.py wrote its statistics, e.g. its --stats-location)"
            )
        return location

    # ------------------------------------------------------------------ storage

    @property
    def _fs(self) -> Any:
        if self._filesystem is not None:
            return self._filesystem
        return self._fs_for(self.stats_location)[0]  # cheap: the options and the filesystems are cached

    def _fs_for(self, location: str) -> tuple[Any, str]:
        """(pyarrow filesystem, path) for a location of this table (stats, directory), with the hook's credentials,
        through the one I/O seam (``core.storage.io.filesystem_for``).

        The connection is resolved once per store and hook (an assumed role's keys are fetched once), and again when
        its access token (GCS: pyarrow never refreshes one) is about to expire, e.g. in a trigger polling for hours."""
        loc = locations.parse_location(location)
        if self._filesystem is not None:
            return self._filesystem, loc.arrow_path()
        options = self._store_options(location)
        store = filesystem_for(location, options=options.arrow if options else None)
        handle, path = store.arrow(location)
        return (handle if handle is not None else pafs.LocalFileSystem()), path

    def _store_options(self, location: str | None = None) -> StoreOptions | None:
        """The connection's options for ``location``'s store (None: the connection's own store, e.g. an Iceberg
        warehouse's), resolved once per store and hook, and again when their access token is about to expire."""
        if not self.conn_id:
            return None
        store = locations.parse_location(location).store if location is not None else self._own_store
        cached = self._options.get(store) if store else None
        if cached is None or cached.expiring():
            cached = connections.store_options(self.conn_id, location)
            self._options[cached.store] = cached
            self._own_store = cached.store
        return cached

    def get_conn(self) -> Any:
        """The pyarrow filesystem the stats are read with."""
        return self._fs

    @contextmanager
    def _reading(self, location: str | None = None) -> Iterator[None]:
        """Turn a store's access-denied / missing-bucket / unreachable error into one clear StorageError."""
        try:
            yield
        except stats_store.StatsNotFoundError:
            raise
        except OSError as exc:
            clear = locations.describe_error(exc, location or self.stats_location, self.conn_id)
            if clear is None:
                raise
            raise clear from exc

    @cached_property
    def _opened(self) -> TableFormat | None:
        """The path table opened through the table seam (its format probed once, with the hook's credentials),
        or None for a catalog name (its stats live in the store). Refuses a format the provider does not handle
        and a directory inside any format's table (``ForeignTableFormatError``)."""
        config = self.iceberg_catalog_config
        if config is not None:
            name, properties = config
            # the connection's store credentials (its FileIO's names) under the catalog's own properties
            self._catalog_options = self._store_options()
            io = dict(self._catalog_options.iceberg) if self._catalog_options else {}
            props = {**io, **properties}
            # a store's error names the warehouse's store (the table's location is known once its metadata is read)
            with self._reading(str(props.get("warehouse") or self.table)):
                return open_table(
                    self.table,
                    ArrowFileSystem(pafs.LocalFileSystem()),
                    iceberg_catalog=name,
                    catalog_properties=props,
                )
        if not is_path_table(self.table):
            return None
        with self._reading(self.table):
            fs, _ = self._fs_for(self.table)
            options = self._store_options(self.table)
            return open_table(self.table, ArrowFileSystem(fs), root=self.table, storage_options=options)

    def check_table_format(self) -> None:
        """Refuse a table directory of a format the provider does not handle, or inside any format's table
        (``core.storage.table_formats``); probed once."""
        _ = self._opened

    @property
    def metadata_format(self) -> TableFormat | None:
        """The opened table when its format's metadata keeps the per-file statistics (a Delta log: snapshot ids
        are its versions), else None (the stats come from the stats store)."""
        if self._catalog_options is not None and self._catalog_options.expiring():
            self.__dict__.pop("_opened", None)  # its FileIO's token (GCS) is about to expire: reopen with a fresh one
        opened = self._opened
        return opened if opened is not None and opened.stats_from_metadata else None

    def _with_collected(self, rows: pa.Table) -> pa.Table:
        """A version's metadata rows, those it lacks taken from the stats job's rows of the same version
        (``metadata_merge``); unchanged when there is no such snapshot."""
        lacking = metadata_merge.lacking(rows) if rows.num_rows else None
        if lacking is None or not pc.any(lacking).as_py():
            return rows
        version = int(rows["snapshot_id"][0].as_py())
        cols = sorted(set(rows.filter(lacking)["column_name"].to_pylist()))
        return metadata_merge.merge(rows, self._collected_rows(version, cols))

    def _collected_rows(self, version: int, columns: list[str]) -> pa.Table | None:
        """The stats job's rows of ``columns`` read from the data files (footer/scan) in the latest snapshot, when
        that snapshot describes ``version``; else None.  One pointer read per call, the snapshot cached."""
        with self._reading():
            sid = stats_store.latest_snapshot_id(self.stats_location, self._fs)
        if sid is None:
            return None
        key = (sid, version, tuple(columns))
        cache = self._collected_cache
        if key not in cache:
            with self._reading():
                snap = stats_store.load_snapshot(self.stats_location, sid, self._fs, columns=columns)
            cache.clear()
            same = metadata_merge.collected_version(snap) == version
            cache[key] = metadata_merge.read_rows(snap) if same else None
        return cache[key]

    def _bucket_missing(self, location: str) -> bool:
        loc = locations.parse_location(location)
        if not loc.bucket:
            return False
        try:
            fs, _ = self._fs_for(location)
            return fs.get_file_info(loc.bucket).type == pafs.FileType.NotFound
        except OSError:
            return False

    def _not_found(self, exc: Exception) -> stats_store.StatsNotFoundError | locations.StorageError:
        hint = COLLECT_HINT.format(table=self.table)
        loc = self.stats_location
        if self._bucket_missing(loc):
            via = f" with connection {self.conn_id!r}" if self.conn_id else ""
            return locations.StorageError(f"cannot read {loc}{via}: {locations.missing_bucket_message(loc)}")
        try:
            exists = filesystem_for(loc, filesystem=self._fs).exists(loc)
            table_exists = True
            if self.default_location and not exists:
                tfs, tpath = self._fs_for(self.table)
                table_exists = filesystem_for(tpath, filesystem=tfs).exists(tpath)
        except Exception:  # noqa: BLE001 - the original error is the better message then
            return stats_store.StatsNotFoundError(f"{exc}; {hint}")
        if not table_exists:
            msg = f"table {self.table} does not exist (nothing at that path): check the table argument"
        elif not exists and self.default_location:
            msg = f"statistics of {self.table} were never collected ({loc} does not exist): {hint}"
        elif not exists:
            msg = (
                f"stats location {loc} does not exist: check stats_location (collect_stats.py --stats-location) "
                f"or {hint}"
            )
        else:
            msg = f"statistics of {self.table} were never collected at {loc} (no committed snapshot): {hint}"
        return stats_store.StatsNotFoundError(msg)

    def get_snapshot(self, columns: Sequence[str] | None = None) -> pa.Table:
        """The latest stats snapshot (FILE_STATS_SCHEMA rows), all columns or only ``columns``; for a Delta
        table the rows of its latest version, read from its log (``snapshot_id`` = the Delta version), the rows
        the log lacks taken from the stats job's snapshot of that same version when there is one (module doc)."""
        if self.metadata_format is not None:
            with self._reading(self.table):
                rows = self.metadata_format.metadata_stats(list(columns) if columns else None)
            return self._with_collected(rows)
        self.check_table_format()
        try:
            with self._reading():
                return stats_store.load_latest(
                    self.stats_location, self._fs, columns=list(columns) if columns else None
                )
        except stats_store.StatsNotFoundError as exc:
            raise self._not_found(exc) from exc

    def get_events(self, kind: str | None = None) -> pa.Table:
        """The table's events (EVENTS_SCHEMA: re-clusterings, decisions), oldest first."""
        with self._reading():
            return stats_store.load_events(self.stats_location, self._fs, kind=kind)

    def get_latest_run(self) -> dict[str, Any] | None:
        """The newest collection run's record, or ``None``.  Delta: a run-like record of the version last read
        (``snapshot_id`` = that version, ``collected_at`` = when the log was read, ``committed_at``)."""
        if self.metadata_format is not None:
            with self._reading(self.table):
                return self.metadata_format.metadata_run()
        with self._reading():
            return stats_store.latest_run(self.stats_location, self._fs)

    def get_latest_snapshot_id(self) -> int | None:
        """The newest committed snapshot's id (``None``: never collected); a cheap read, no snapshot loaded.
        Delta: the table's latest version (only new commits are read)."""
        if self.metadata_format is not None:
            with self._reading(self.table):
                return self.metadata_format.latest_version()
        self.check_table_format()
        with self._reading():
            return stats_store.latest_snapshot_id(self.stats_location, self._fs)

    def get_history(self, columns: Sequence[str] | None = None) -> pa.Table:
        """One row per collection run with its snapshot's headline / worst column / average depth
        (``history.clustering_history``).

        ``columns``: default the last clustering's columns, else every column with stats.  Delta: one row, the
        version last read (past versions are not replayed from the log).
        """
        if self.metadata_format is not None:
            return self._metadata_history(columns)
        cols = list(columns) if columns else None
        if cols is None:
            if self.get_latest_snapshot_id() is None:
                with self._reading():
                    return stats_store.load_history(self.stats_location, self._fs)
            snap = self.get_snapshot()
            cols, _ = recluster_policy.default_columns(
                sorted({c for c in snap["column_name"].to_pylist() if c is not None}), self.get_events("cluster")
            )
        self.check_table_format()
        with self._reading():
            return history.clustering_history(self.stats_location, self._fs, clustering_columns=cols or None)

    # ------------------------------------------------------------------ metrics and decisions

    def _snapshot_for(self, columns: Sequence[str] | str | None, events: pa.Table) -> pa.Table:
        """The snapshot rows evaluation needs: the requested (else the last clustering's) columns only."""
        wanted = recluster_policy.parse_columns(columns)
        if wanted is None:
            last = recluster_policy.last_cluster_event(events)
            wanted = list(last.get("columns") or []) if last else None
            return self.get_snapshot(wanted or None)
        snap = self.get_snapshot(wanted)
        have = set(snap["column_name"].to_pylist()) if snap.num_rows else set()
        if not set(wanted) <= have:
            snap = self.get_snapshot()  # let evaluate name every column that has statistics
        return snap

    def clustering(
        self, columns: Sequence[str] | str | None = None, num_clustering_columns: int | None = None
    ) -> dict[str, Any]:
        """``metrics.table_clustering`` of the latest snapshot (columns default as in :meth:`evaluate`)."""
        events = self.get_events()
        snap = self._snapshot_for(columns, events)
        available = sorted({c for c in snap["column_name"].to_pylist() if c is not None})
        cols = recluster_policy.parse_columns(columns)
        if cols is None:
            cols, _ = recluster_policy.default_columns(available, events)
        unknown = [c for c in cols if c not in available]
        if unknown:
            raise InvalidInputError(f"unknown column(s) {unknown}: the statistics of {self.table} have {available}")
        return metrics.table_clustering(snap, cols, num_clustering_columns)

    def evaluate(
        self,
        policy: HealthPolicy | None = None,
        columns: Sequence[str] | str | None = None,
        *,
        events: pa.Table | None = None,
        now: Any = None,
        num_clustering_columns: int | None = None,
        incremental: IncrementalParams | None = None,
    ) -> dict[str, Any]:
        """``recluster_policy.evaluate`` on the latest snapshot; stats age counts from the newest collection run.
        ``incremental``: a ``recluster`` payload carries the incremental plan made with these parameters."""
        events = self.get_events() if events is None else events
        snap = self._snapshot_for(columns, events)
        collected_at = recluster_policy.snapshot_time(snap, self.get_latest_run())
        return recluster_policy.evaluate(
            snap,
            columns,
            policy,
            events=events,
            now=now,
            table=self.table,
            stats_location=self.stats_location,
            collected_at=collected_at,
            num_clustering_columns=num_clustering_columns,
            incremental=incremental,
        )

    def check(
        self,
        policy: HealthPolicy | None = None,
        columns: Sequence[str] | str | None = None,
        *,
        num_clustering_columns: int | None = None,
        record: bool = True,
        final_decisions: Sequence[str] = ("recluster",),
        source: str | None = None,
        incremental: IncrementalParams | None = None,
    ) -> dict[str, Any]:
        """:meth:`evaluate`, then record the decision as an event when it differs from the last recorded one
        or is in ``final_decisions`` (one that ends the caller's wait).  Recording is best effort: a read-only
        stats store does not stop the decision."""
        events = self.get_events()
        payload = self.evaluate(
            policy, columns, events=events, num_clustering_columns=num_clustering_columns, incremental=incremental
        )
        if record:
            prev = recluster_policy.last_decision(self.stats_location, self._fs, events=events)
            if prev is None or prev.get("decision") != payload["decision"] or payload["decision"] in final_decisions:
                try:
                    recluster_policy.record_decision(self.stats_location, payload, self._fs, source=source)
                except Exception as exc:  # noqa: BLE001 - the decision stands without its history entry
                    self.log.warning("could not record the decision at %s: %s", self.stats_location, exc)
        return payload

    def get_change_signal(self, ignore_run_id: str | None = None) -> dict[str, Any]:
        """What a decision depends on, cheaply (``stats_store.change_signal``: listings only, no snapshot read);
        ``ignore_run_id``: the caller's own recorded decisions do not count as a change.  Delta: ``snapshot_id``
        and ``delta_version`` are the table's latest version, so a new commit is a change."""
        with self._reading():
            signal = stats_store.change_signal(self.stats_location, self._fs, ignore_run_id=ignore_run_id)
        if self.metadata_format is not None:
            with self._reading(self.table):
                signal["snapshot_id"] = signal["delta_version"] = self.metadata_format.latest_version()
        return signal

    def _metadata_history(self, columns: Sequence[str] | None) -> pa.Table:
        """:meth:`get_history` of a table read through its metadata: the version last read, as
        ``stats_store.load_history`` rows."""
        snap = self.get_snapshot()
        cols = (
            list(columns)
            if columns
            else recluster_policy.default_columns(
                sorted({c for c in snap["column_name"].to_pylist() if c is not None}), self.get_events("cluster")
            )[0]
        )
        run = self.get_latest_run() or {}
        rec = {k: run.get(k) for k in stats_schema.RUNS_SCHEMA.names}
        rec["collected_at"] = stats_store.as_datetime(rec.get("collected_at"))
        rec["files_total"] = int(pc.count_distinct(snap["path"]).as_py()) if snap.num_rows else 0
        hist = pa.Table.from_pylist([rec], schema=stats_schema.RUNS_SCHEMA)
        if not cols:
            return hist
        return history.with_clustering(hist, [history.clustering_summary(snap, cols)])

    # ------------------------------------------------------------------ the workload advisor (core.advisor)

    def recommend_columns(
        self,
        workload: Any,
        *,
        table_name: str | None = None,
        engine: str | None = None,
        curve: str = DEFAULT_CURVE,
        max_columns: int = 4,
        current: Sequence[str] | None = None,
        record: bool = False,
        source: str | None = None,
        sample_rows: int = 0,
    ) -> dict[str, Any]:
        """Clustering columns for this table from ``workload`` (paths of SQL files, Spark event logs, Trino or
        Athena history exports, or statements) and its latest statistics: the advisor's recommendation as a dict
        (:func:`airflow_zorder.core.advisor.recommend.advise`). ``table_name``: the table as the queries name it
        (default ``table``); ``record``: keep it as an ``advice`` event (the UI's table page shows the last);
        ``sample_rows``: lay the best sets out on that many of the table's rows, read with the hook's credentials
        (:mod:`airflow_zorder.core.advisor.sample_layout`)."""
        from airflow_zorder.core.advisor import advice_events, recommend, sample_layout, sources

        snapshot = self.get_snapshot()
        paths = [p for p in pc.unique(snapshot["path"]).to_pylist() if p]

        def opened(path: str) -> Any:
            fs, where = self._fs_for(path)
            return fs.open_input_file(where)

        def sample(columns: list[str]) -> pa.Table:
            return sample_layout.read_sample(paths, columns, sample_rows, open_file=opened)

        rec = recommend.advise(
            sources.statements_of(workload, engine),
            snapshot,
            table_name or self.table,
            curve=curve,
            max_columns=max_columns,
            current=current,
            sample=sample if sample_rows > 0 else None,
        )
        advice = rec.to_dict()
        if record:
            self._record_advice(advice_events.record_advice, advice, source)
        return advice

    def auto_columns(
        self,
        workload: Any,
        *,
        margin: float | None = None,
        source: str | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """The sensor's ``columns="auto"``: :meth:`recommend_columns` against the columns chosen last time (the last
        ``advice`` event's, else the last clustering's), switched only when the gain clears ``margin``
        (:func:`airflow_zorder.core.advisor.hysteresis.choose_columns`); the advice with ``chosen``, ``changed``
        and ``reason``, recorded when the choice is new."""
        from airflow_zorder.core.advisor import advice_events, hysteresis

        events = self.get_events()
        prev = advice_events.last_advice(self.stats_location, self._fs, events=events)
        cluster = policy_events.last_cluster_event(events)
        current = (prev or {}).get("chosen") or list((cluster or {}).get("columns") or []) or None
        advice = self.recommend_columns(workload, current=current, **kwargs)
        choice = hysteresis.choose_columns(advice, current, hysteresis.DEFAULT_MARGIN if margin is None else margin)
        advice.update(chosen=choice.columns, changed=choice.changed, reason=choice.reason)
        if prev is None or prev.get("chosen") != choice.columns:
            self._record_advice(advice_events.record_advice, advice, source)
        return advice

    def _record_advice(self, record: Any, advice: dict[str, Any], source: str | None) -> None:
        try:
            record(self.stats_location, advice, self._fs, source=source)
        except Exception as exc:  # noqa: BLE001 - the advice stands without its history entry
            self.log.warning("could not record the advice at %s: %s", self.stats_location, exc)
