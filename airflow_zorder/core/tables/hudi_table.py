"""Apache Hudi tables: the latest file slices of the latest completed instant, their statistics from the base files.

A table is named by its base path (the directory holding ``.hoodie/``). Its units are its partitions, each holding
the base files of the latest file slice of every file group as hudi-rs reads them
(:mod:`airflow_zorder.core.hudi.hudi_timeline`): never a directory listing, so older slices the cleaner has not
removed yet never come back. Its version is the latest completed instant's timestamp. The per-file statistics are
the base files' Parquet footers (hudi-rs does not read the metadata table's ``column_stats`` yet), read once per
file and kept per process (a base file never changes: a new slice is a new file), so the hook, the sensor and the
UI watch a Hudi table without Spark or a stats job.

A re-clustering is committed by Hudi itself, never by this module: the cluster job runs Hudi's own clustering on
the plan's partitions (``spark_jobs/hudi_clustering.py``), so a Hudi table's commit is one ``replacecommit`` on its
timeline that Hudi's readers, cleaner, archiver and rollback know. :meth:`HudiTable.check_rewritable` refuses, with
the table untouched: merge-on-read slices with log files (compact first), a table version hudi-rs cannot read,
non-Parquet base files, bucket-index tables (file groups fixed by a hash), and a pending clustering, compaction or
an inflight commit (finish or roll it back first).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import threading
from collections.abc import Sequence
from typing import Any

from airflow_zorder.core.errors import CommitError, HudiRewriteRefusedError, TableError
from airflow_zorder.core.hudi import hudi_timeline as tl
from airflow_zorder.core.stats import stats_schema
from airflow_zorder.core.storage import commit as commit_mod
from airflow_zorder.core.storage.io import FileSystem
from airflow_zorder.core.storage.io.file_info import FileInfo
from airflow_zorder.core.storage.io.hadoop import HadoopFileSystem
from airflow_zorder.core.storage.io.paths import join
from airflow_zorder.core.storage.store_options import StoreOptions
from airflow_zorder.core.tables import placed_files
from airflow_zorder.core.tables.model import CommitOutcome, RewriteRun, StagedUnit, TableSnapshot, Unit
from airflow_zorder.core.tables.parquet_dir import files_dataset

__all__ = ["FORMAT", "HudiTable", "open_format"]

FORMAT = "hudi"
METHOD = "footer"  # the statistics are the base files' footers, as the stats job reads them
BLOCKING_ACTIONS = ("commit", "deltacommit", "replacecommit", "clustering", "compaction", "logcompaction")
_BUCKET_FILE_ID = re.compile(r"^(\d{8})-")  # a bucket index names file groups "<bucket number, 8 digits>-<uuid>"

_FOOTERS: dict[str, list[Any]] = {}  # base file path -> its footer rows (all columns): base files never change
_FOOTERS_LOCK = threading.Lock()
# base path -> (the completed instants, the latest slices, the latest instant, the data columns) last read
_SLICES: dict[str, tuple[frozenset, list[tl.FileSlice], int, list[str]]] = {}
_ROWS: dict[tuple, Any] = {}  # (base path, completed instants, columns) -> the stats rows of that state
_FOOTERS_MAX = 200_000


class HudiTable(placed_files.RunJournals):
    """A Hudi table, opened on its base path (:class:`~airflow_zorder.core.tables.protocol.TableFormat`)."""

    format = FORMAT
    kind = "hudi"  # how results and run records name it
    journals_inputs = False  # the timeline decides which files are live: inputs are never moved
    rewrites_whole_units = True  # Hudi's clustering is chosen by partition: incremental bins widen to theirs
    stats_from_metadata = True  # the base files' footers, read without a stats job
    column_mapping = "none"
    reader = "hudi-rs (latest file slices) + pyarrow"
    planner = None  # hudi-rs prunes nothing beyond the footers pyarrow reads
    location = None  # named by its path already

    def __init__(self, table: str, root: str, fs: FileSystem, storage_options: StoreOptions | None = None) -> None:
        self.table = table
        self._fs = fs
        self.root = root.rstrip("/") or root
        self.home = self.root
        why_not = storage_options.unusable.get("delta") if storage_options else None
        if why_not:  # hudi-rs takes object_store's keys, as delta-rs does: the same refusal
            raise TableError(f"cannot read the Hudi timeline of {table}: {why_not}")
        if storage_options and storage_options.delta:
            self._options: dict[str, str] | None = dict(storage_options.delta)
        elif isinstance(fs, HadoopFileSystem):  # in a job: the credentials the driver's Hadoop reaches the store with
            from airflow_zorder.core.delta.delta_log import delta_storage_options

            self._options = delta_storage_options(fs.arrow_options(self.root))
        else:
            self._options = None
        self.properties = tl.read_properties(fs, self.root)
        tl.check_readable(self.properties, self.root)
        self._rs: Any = None
        self._snapshot: TableSnapshot | None = None
        self._slices: list[tl.FileSlice] = []
        self._done: frozenset = frozenset()  # the completed instants the snapshot was read at
        self._read_at: dt.datetime | None = None

    # -- reading
    def _table(self) -> Any:
        if self._rs is None:
            self._rs = tl.open_hudi_rs(self.root, self._options)
        return self._rs

    def snapshot(self) -> TableSnapshot:
        """The latest file slices (read once per opened table)."""
        return self._snapshot or self.refresh()

    def refresh(self) -> TableSnapshot:
        """Read the timeline again: one unit per partition path, its files the latest slices' base files. The latest
        slices are read by hudi-rs only when the completed instants changed since this process last read them."""
        self._rs = None
        done = frozenset(
            i for i in tl.timeline_instants(self._fs, self.root, self.properties) if i.state == "completed"
        )
        read = _SLICES.get(self.root)
        if read is None or read[0] != done:
            rs = self._table()
            read = (
                done,
                tl.latest_slices(rs, self.root),
                tl.latest_commit(rs, self.root),
                tl.data_columns(rs, self.root),
            )
            with _FOOTERS_LOCK:
                if len(_SLICES) > 64:
                    _SLICES.clear()
                _SLICES[self.root] = read
        self._done, slices, latest, columns = read
        partition_columns = [c for c in self.properties.get("hoodie.table.partition.fields", "").split(",") if c]
        mtime = {}
        units: dict[str, Unit] = {}
        for s in sorted(slices, key=lambda s: (s.partition, s.base_file)):
            unit = units.get(s.partition)
            if unit is None:
                unit = units[s.partition] = Unit(
                    s.partition,
                    self._spec(s.partition, partition_columns),
                    join(self.root, s.partition) if s.partition else self.root,
                )
            when = mtime.setdefault(s.instant, tl.instant_time(s.instant, self.properties))
            ms = int(when.timestamp() * 1000) if when else None
            unit.files.append(FileInfo(join(self.root, s.base_file), s.size, ms))
        self._slices = slices
        self._read_at = dt.datetime.now(dt.UTC)
        self._snapshot = TableSnapshot(
            self.table,
            FORMAT,
            self.kind,
            self.root,
            self.home,
            partition_columns,
            list(units.values()),
            latest,
            columns,
        )
        return self._snapshot

    def _spec(self, partition: str, columns: Sequence[str]) -> dict[str, str]:
        """Partition column -> value of a partition path (hive-style ``k=v/...`` or Hudi's default ``v/...``)."""
        if not partition:
            return {}
        parts = partition.split("/")
        if all("=" in p for p in parts):
            return dict(p.split("=", 1) for p in parts)
        if len(parts) == len(columns):
            return dict(zip(columns, parts))
        return {columns[0] if len(columns) == 1 else "_hoodie_partition_path": partition}

    def check_rewritable(self) -> None:
        """Refuse what Hudi's clustering of this provider's plan cannot keep correct (the table untouched)."""
        snap = self.snapshot()
        if self.properties.get("hoodie.table.type", "COPY_ON_WRITE").upper() == "MERGE_ON_READ":
            with_logs = [s for s in self._slices if s.log_files]
            if with_logs:
                raise HudiRewriteRefusedError(
                    f"Hudi table {self.root} is merge-on-read and {len(with_logs)} of its {len(self._slices)} file "
                    f"slices have log files (e.g. {with_logs[0].partition or '<root>'}/{with_logs[0].file_id}): their "
                    "base files alone are not the rows. Compact first (CALL run_compaction(op => 'scheduleAndExecute', "
                    "path => ...) or hoodie.compact.inline=true), then run again."
                )
        bucketed = self._bucket_index()
        if bucketed:
            raise HudiRewriteRefusedError(
                f"Hudi table {self.root} uses a bucket index ({bucketed}): each record's file group is fixed by a hash "
                "of its key, so rows cannot move between file groups. Cluster within buckets with Hudi's own "
                "consistent-hashing bucket index, or re-cluster a table on a simple or bloom index."
            )
        blocking = [
            i for i in tl.pending_instants(self._fs, self.root, self.properties) if i.action in BLOCKING_ACTIONS
        ]
        if blocking:
            first = blocking[0]
            raise HudiRewriteRefusedError(
                f"Hudi table {self.root} has {len(blocking)} pending instant(s) on its timeline (e.g. {first.action} "
                f"{first.timestamp}, {first.state}): a clustering planned now could replace file groups another "
                "writer is changing. Let the writer finish, run the pending clustering or compaction "
                "(CALL run_clustering(op => 'execute', path => ...)), or roll back a failed commit (Hudi rolls back "
                "failed writes on its next write), then run again."
            )
        if not snap.files:
            raise TableError(f"Hudi table {self.root} has no base files to re-cluster (an empty table?)")

    def _bucket_index(self) -> str | None:
        """How the table shows a bucket index (its config, or file ids numbered by bucket), or None."""
        for key in ("hoodie.index.type", "hoodie.bucket.index.num.buckets", "hoodie.bucket.index.hash.field"):
            if key in self.properties and (key != "hoodie.index.type" or "BUCKET" in self.properties[key].upper()):
                return f"{key}={self.properties[key]}"
        ids = [_BUCKET_FILE_ID.match(s.file_id) for s in self._slices]
        if len(ids) >= 2 and all(ids):
            per_partition: dict[str, set[str]] = {}
            for s, m in zip(self._slices, ids):
                per_partition.setdefault(s.partition, set()).add(m.group(1))  # type: ignore[union-attr]
            if sum(len(v) for v in per_partition.values()) == len(self._slices):  # one file group per bucket number
                return "every file group id starts with its bucket number"
        return None

    def prepare(self) -> None:
        """Nothing to pin: a Hudi table's state lives beside its timeline."""

    def latest_version(self) -> int:
        """The latest completed instant's timestamp (one read of the timeline)."""
        return tl.latest_commit(tl.open_hudi_rs(self.root, self._options), self.root)

    def version_time(self, version: int) -> dt.datetime | None:
        """When the instant ``version`` was started (its timestamp, in the table's timeline time zone)."""
        return tl.instant_time(str(version), self.properties) if version else None

    def metadata_stats(self, columns: Sequence[str] | None = None, version: int | None = None) -> Any:
        """FILE_STATS_SCHEMA rows of the latest slices' base files, from their footers (``version``: only the
        latest is readable; an older one is refused). Footers are read once per file per process, the rows built
        once per state of the timeline."""
        snap = self.snapshot()
        if version is not None and int(version) != snap.version:
            raise TableError(
                f"Hudi table {self.root}: statistics of instant {version} are not kept (the latest is {snap.version}); "
                "the provider reads the latest file slices only"
            )
        key = (self.root, self._done, tuple(dict.fromkeys(columns)) if columns else None)
        rows = _ROWS.get(key)
        if rows is None:
            rows = self._footer_rows(snap, list(key[2]) if key[2] else None)
            with _FOOTERS_LOCK:
                if len(_ROWS) > 32:
                    _ROWS.clear()
                _ROWS[key] = rows
        return rows

    def _footer_rows(self, snap: TableSnapshot, columns: list[str] | None) -> Any:
        import pyarrow as pa

        from airflow_zorder.core.stats import footer_stats

        wanted = set(columns) if columns else set(snap.data_columns or [])
        files = [(u, f) for u in snap.units for f in u.files]
        missing = [f.path for _, f in files if f.path not in _FOOTERS]
        if missing:
            self._read_footers(missing)
        rows = []
        for unit, f in files:
            for r in _FOOTERS[f.path]:
                if r.column in wanted:
                    rows.append(dataclasses.replace(r, partition=unit.relpath or None))
        table = footer_stats.rows_to_table(rows, table_name=self.table, collected_at=self._read_at)
        n = table.num_rows
        by_path = {f.path: (u, f) for u, f in files}
        pairs = [by_path[p] for p in table["path"].to_pylist()]
        table = table.set_column(
            table.schema.get_field_index("snapshot_id"),
            "snapshot_id",
            pa.repeat(pa.scalar(snap.version, pa.int64()), n),
        )
        table = table.set_column(
            table.schema.get_field_index("partition_values"),
            table.schema.field("partition_values"),
            pa.array(
                [list(u.spec.items()) if u.relpath else None for u, _ in pairs],
                table.schema.field("partition_values").type,
            ),
        )
        table = table.set_column(
            table.schema.get_field_index("file_mtime_ms"),
            table.schema.field("file_mtime_ms"),
            pa.array([f.mtime_ms for _, f in pairs], pa.int64()),
        )
        return table

    def _read_footers(self, paths: list[str]) -> None:
        """Read every column's footer statistics of ``paths`` (a thread pool) into the per-process cache."""
        from concurrent.futures import ThreadPoolExecutor

        from airflow_zorder.core.stats import footer_stats

        handle = self._fs.arrow(paths[0])[0]

        def read(path: str) -> tuple[str, list[Any]]:
            rows = footer_stats.read_file_footer(self._fs.arrow(path)[1], None, handle)
            return path, [
                dataclasses.replace(r, path=path) for r in rows if not r.column.startswith(tl.META_COLUMN_PREFIX)
            ]

        with ThreadPoolExecutor(max_workers=16, thread_name_prefix="hudi-footer") as pool:
            done = list(pool.map(read, paths))
        with _FOOTERS_LOCK:
            if len(_FOOTERS) + len(done) > _FOOTERS_MAX:
                _FOOTERS.clear()
            _FOOTERS.update(done)

    def metadata_run(self) -> dict[str, Any]:
        """A run-like record of the instant read last (``snapshot_id`` = its timestamp)."""
        version = self.snapshot().version
        return stats_schema.metadata_run_record(
            f"hudi-footers-{version}",
            self.table,
            self.kind,
            self.root,
            version,
            METHOD,
            self._read_at or dt.datetime.now(dt.UTC),
            self.version_time(version) if version else None,
        )

    def reader_dataset(self) -> Any:
        """A Parquet dataset over the latest slices' base files (a copy-on-write snapshot read)."""
        return files_dataset(self._fs, self.snapshot().files)

    def planned_files(self, column: str, value: Any, sql: str) -> None:
        """hudi-rs plans no files beyond the footers pyarrow prunes with."""
        return None

    # -- writing: Hudi's own clustering commits (spark_jobs/hudi_clustering.py), never this module
    def commit(
        self,
        fs: FileSystem,
        journal: commit_mod.Journal,
        staged: Sequence[StagedUnit],
        run: RewriteRun,
        lock: Any = None,
    ) -> CommitOutcome:
        """Refused: a Hudi table is re-clustered by Hudi's own clustering, which commits its own replacecommit."""
        raise CommitError(
            f"Hudi table {self.root}: files staged by the generic rewrite cannot be committed to a Hudi timeline; "
            "the cluster job re-clusters Hudi tables through Hudi's own clustering (run it with Hudi's Spark bundle)"
        )

    def settle_runs(self, fs: FileSystem) -> list[str]:
        """Nothing of this provider's to settle: Hudi rolls back (or re-runs) its own interrupted clustering."""
        return []


def open_format(
    table: str, root: str, fs: FileSystem, *, storage_options: StoreOptions | None = None, **_: Any
) -> HudiTable:
    """The registry's loader: a Hudi table at ``root`` (its config read now, its file slices lazily)."""
    return HudiTable(table, root, fs, storage_options)
